import Foundation
import ProxyPlatform
import SiteAudit

/// Chromium, headless with a fresh profile, over the DevTools protocol on a pipe (`--remote-debugging-pipe`). Its
/// traffic goes to the proxy (`--proxy-server`, loopback hosts too), whose leaves it trusts by their key's pin alone
/// (`--ignore-certificate-errors-spki-list`: no trust store is touched), or any certificate when no pin is given.
/// Cross-site frames stay in the page's process (site isolation off), so the page's Network domain reports every
/// frame's cookies, including the ones Chromium refused and why (`Network.responseReceivedExtraInfo`'s
/// `blockedCookies`); a page is quiet at its main frame's `networkIdle` lifecycle event.
public final class ChromiumDriver: BrowserDriver {
    public var browser: Browser { .chromium }
    private let rpc: RPCSession
    private let process: BrowserProcess?
    private var stopped = false
    private let pinned: Bool
    private var session = ""
    private var mainFrame = ""
    /// Each request's URL, to name the response a refused line came in.
    private var urls: [String: String] = [:]
    private var refused: [RefusedLine] = []
    private var lastNetwork = Date.distantPast
    /// The navigation in hand: its loader, the document's status, whether it loaded and went idle.
    private var loader = ""
    private var status: Int? = nil
    private var loaded = false
    private var idle = false

    /// Starts `binary` with `options`.
    static func start(binary: String, options: DriverOptions) throws(BrowserFailure) -> ChromiumDriver {
        // A browser that crashes closes the pipe's reading end: the next command must fail with EPIPE, not end this
        // process with SIGPIPE. (Its children get the default back: spawn resets it.)
        signal(SIGPIPE, SIG_IGN)
        let process = try BrowserProcess(engine: "chromium")
        if options.thirdParty != .default {
            // The profile's `profile.cookie_controls_mode`: 0 allows third-party cookies, 1 blocks them.
            try process.write(
                "Default/Preferences",
                #"{"profile":{"cookie_controls_mode":\#(options.thirdParty == .allow ? 0 : 1)}}"#)
        }
        let toBrowser: (read: Int32, write: Int32)
        let fromBrowser: (read: Int32, write: Int32)
        do {
            toBrowser = try ChildProcess.pipe()
            fromBrowser = try ChildProcess.pipe()
        } catch {
            throw BrowserFailure(error.description)
        }
        let trust =
            options.pin.map { "--ignore-certificate-errors-spki-list=\($0)" } ?? "--ignore-certificate-errors"
        let arguments =
            [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--user-data-dir=\(process.profile)", "--remote-debugging-pipe",
                // `<-loopback>`: loopback hosts (localhost, 127.0.0.1, *.localhost) go through the proxy too, as
                // every other host (Chromium sends them direct by default: a dev server would be audited blind).
                "--proxy-server=http://127.0.0.1:\(options.proxyPort)", "--proxy-bypass-list=<-loopback>", trust,
                "--disable-site-isolation-trials",
                "--disable-features=IsolateOrigins,site-per-process,OptimizationHints,MediaRouter,"
                    + "AutofillServerCommunication,Translate,NetworkTimeServiceQuerying,"
                    + "OptimizationGuideModelDownloading,OptimizationHintsFetching,CertificateTransparencyComponentUpdater,"
                    + "InterestFeedContentSuggestions,SafeBrowsingEnhancedProtection,PrivacySandboxSettings4",
                // The browser's own traffic off (sign-in, safe browsing, component and metrics pings): on a connected
                // machine it would go through the proxy, and its cookies sit among the site's.
                "--allow-browser-signin=false", "--disable-client-side-phishing-detection",
                "--safebrowsing-disable-auto-update", "--disable-domain-reliability", "--no-pings",
                "--disable-default-apps", "--disable-breakpad", "--metrics-recording-only",
                "--disable-component-extensions-with-background-pages", "--google-api-key=no",
            ] + (options.window.map { ["--window-size=\($0.width),\($0.height)"] } ?? []) + ["about:blank"]
        do {
            // Standard streams to /dev/null; the DevTools pipe on its fds 3 (commands) and 4 (replies).
            try process.start(
                binary, arguments, environment: options.environment,
                descriptors: [-1, -1, -1, toBrowser.read, fromBrowser.write], newGroup: false)
        } catch {
            for fd in [toBrowser.read, toBrowser.write, fromBrowser.read, fromBrowser.write] { close(fd) }
            throw error
        }
        close(toBrowser.read)
        close(fromBrowser.write)
        let pipe = PipeChannel(commands: toBrowser.write, replies: fromBrowser.read)
        return try ChromiumDriver(
            channel: try options.channel(pipe, .chromium), process: process, pinned: options.pin != nil)
    }

    /// A driver over `channel` (a live pipe, or a transcript with no `process`): opens a page, attached in flat
    /// mode, with its Page, lifecycle and Network events on.
    init(channel: any BrowserChannel, process: BrowserProcess? = nil, pinned: Bool) throws(BrowserFailure) {
        (rpc, self.process, self.pinned) = (RPCSession(channel, peer: "Chromium"), process, pinned)
        struct Target: Decodable { var targetId: String }
        struct Attached: Decodable { var sessionId: String }
        struct Attach: Encodable {
            var targetId: String
            var flatten = true
        }
        struct Tree: Decodable {
            struct Node: Decodable {
                struct Frame: Decodable { var id: String }
                var frame: Frame
            }
            var frameTree: Node
        }
        let target = try rpc.call("Target.createTarget", ["url": "about:blank"], as: Target.self)
        session = try rpc.call("Target.attachToTarget", Attach(targetId: target.targetId), as: Attached.self).sessionId
        try rpc.call("Page.enable", session: session)
        try rpc.call("Page.setLifecycleEventsEnabled", ["enabled": true], session: session)
        try rpc.call("Network.enable", session: session)
        mainFrame = try rpc.call("Page.getFrameTree", session: session, as: Tree.self).frameTree.frame.id
    }

    deinit { stop() }

    /// Ends the browser once: the protocol's close, then the process (a replay has none: the close is in it).
    public func stop() {
        guard !stopped else { return }
        stopped = true
        let polite = { [self] in if !rpc.channel.closed { try? rpc.call("Browser.close", seconds: 5) } }
        if let process { process.stop(polite: polite) } else { polite() }
    }

    public var isAlive: Bool { !rpc.channel.closed && !(process?.exited ?? false) }

    public var trust: String {
        pinned
            ? "Chromium trusted the proxy's leaves by their key's pin, in this run only"
            : "Chromium accepted any certificate from the proxy"
    }

    public func open(_ url: String, wait: Double, until ready: PageReadiness) throws(BrowserFailure) -> PageLoad {
        struct Navigated: Decodable {
            var loaderId: String?
            var errorText: String?
        }
        (status, loaded, idle) = (nil, false, false)
        let navigated: Navigated
        do {
            // Page.navigate answers once the document's response starts: a server that never answers is waited
            // for as long as a page may take to be ready, then stopped.
            navigated = try rpc.call("Page.navigate", ["url": url], session: session, seconds: wait, as: Navigated.self)
        } catch {
            guard isAlive else { throw error }
            try? rpc.call("Page.stopLoading", session: session)
            return PageLoad(
                status: nil,
                problem: "no response within \(Self.seconds(wait)): the page was stopped (a longer --wait waits more)")
        }
        if let error = navigated.errorText, !error.isEmpty {
            return PageLoad(status: nil, problem: "Chromium could not load the page: \(error)")
        }
        loader = navigated.loaderId ?? ""
        let deadline = rpc.channel.now.addingTimeInterval(wait)
        while !(ready == .quiet ? idle : loaded), let event = try rpc.nextEvent(until: deadline) { handle(event) }
        let done = ready == .quiet ? idle : loaded
        return PageLoad(
            status: status,
            problem: done
                ? nil
                : "the page's network was not \(ready == .quiet ? "idle" : "loaded") after \(Self.seconds(wait))"
                    + " (read as it was)")
    }

    public func settle(quiet: Double, wait: Double) throws(BrowserFailure) {
        let end = rpc.channel.now.addingTimeInterval(wait)
        lastNetwork = rpc.channel.now
        while rpc.channel.now < end {
            let quietUntil = lastNetwork.addingTimeInterval(quiet)
            if quietUntil <= rpc.channel.now { return }
            if let event = try rpc.nextEvent(until: min(quietUntil, end)) { handle(event) }
        }
    }

    public func evaluate(_ script: String) throws(BrowserFailure) -> String? {
        struct Evaluate: Encodable {
            var expression: String
            var returnByValue = true
        }
        struct Evaluated: Decodable {
            struct Result: Decodable { var value: StringIfAny? }
            var result: Result
        }
        return try rpc.call("Runtime.evaluate", Evaluate(expression: script), session: session, as: Evaluated.self)
            .result.value?.string
    }

    public func takeRefused() -> [RefusedLine] {
        defer { refused.removeAll() }
        return refused
    }

    /// CDP's `Network.Cookie`.
    struct Cookie: Decodable {
        /// `partitionKey`: an object (`topLevelSite`, `hasCrossSiteAncestor`) in today's protocol, a string before.
        enum Partition: Decodable {
            case site(String?)
            init(from decoder: any Decoder) throws {
                struct Key: Decodable { var topLevelSite: String? }
                let c = try decoder.singleValueContainer()
                self = .site((try? c.decode(String.self)) ?? (try? c.decode(Key.self))?.topLevelSite)
            }
        }
        var name: String
        var value: String
        var domain: String
        var path: String
        var expires: Double?
        var session: Bool?
        var secure: Bool
        var httpOnly: Bool
        var sameSite: String?
        var partitionKey: Partition?

        var cookie: BrowserCookie {
            let site: String? =
                switch partitionKey {
                case .site(let s)?: s
                case nil: nil
                }
            return BrowserCookie(
                name: name, value: value, domain: domain, path: path, expires: session ?? true ? nil : expires,
                secure: secure, httpOnly: httpOnly,
                sameSite: ["Strict", "Lax", "None"].contains(sameSite ?? "") ? sameSite : nil, partitionKey: site)
        }
    }

    public func cookies() throws(BrowserFailure) -> [BrowserCookie] {
        struct Cookies: Decodable { var cookies: [Cookie] }
        return try rpc.call("Storage.getCookies", as: Cookies.self).cookies.map(\.cookie)
    }

    public func clearCookies() throws(BrowserFailure) {
        try rpc.call("Storage.clearCookies")
    }

    public func screenshot() throws(BrowserFailure) -> Data? {
        struct Shot: Decodable { var data: String }
        return Data(
            base64Encoded: try rpc.call("Page.captureScreenshot", ["format": "png"], session: session, as: Shot.self)
                .data)
    }

    private struct Lifecycle: Decodable {
        var name: String
        var frameId: String
        var loaderId: String?
    }
    private struct RequestSent: Decodable {
        struct Request: Decodable { var url: String }
        var requestId: String
        var request: Request
    }
    private struct ResponseReceived: Decodable {
        struct Response: Decodable { var status: Int }
        var requestId: String
        var response: Response
    }
    private struct ExtraInfo: Decodable {
        struct Blocked: Decodable {
            var blockedReasons: [String]
            var cookieLine: String
        }
        var requestId: String
        var blockedCookies: [Blocked]?
    }

    private func handle(_ event: RPCSession.Event) {
        switch event.method {
        case "Page.lifecycleEvent":
            guard let e = event.params(Lifecycle.self), e.frameId == mainFrame,
                loader.isEmpty || e.loaderId == loader
            else { return }
            if e.name == "networkIdle" { idle = true }
            if e.name == "load" { loaded = true }
        case "Network.requestWillBeSent":
            lastNetwork = rpc.channel.now
            if let e = event.params(RequestSent.self) { urls[e.requestId] = e.request.url }
        case "Network.responseReceived":
            lastNetwork = rpc.channel.now
            if let e = event.params(ResponseReceived.self), e.requestId == loader { status = e.response.status }
        case "Network.loadingFinished", "Network.loadingFailed":
            lastNetwork = rpc.channel.now
        case "Network.responseReceivedExtraInfo":
            guard let e = event.params(ExtraInfo.self) else { return }
            for blocked in e.blockedCookies ?? [] {
                refused.append(
                    (
                        urls[e.requestId] ?? "(unknown request \(e.requestId))", blocked.cookieLine,
                        blocked.blockedReasons
                    ))
            }
        default: break
        }
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }
}
