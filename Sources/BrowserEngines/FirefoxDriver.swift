import Foundation
import ProxyPlatform
import SiteAudit

/// Firefox (Debian's `firefox-esr`), headless with a fresh profile (its `user.js` written first), over WebDriver
/// BiDi, which Firefox serves itself (`--remote-debugging-port=0`: the address it listens on is read from its
/// standard error; no geckodriver). Every http and https request goes to the proxy; the profile's own certificate
/// database trusts the proxy's CA when one is given and `certutil` is there, else the session accepts any
/// certificate. BiDi reports neither network idleness nor the cookies Firefox refused: a page is quiet once no
/// request has started or finished for half a second, and a refused line is found by its absence from the store
/// (``reportsRefusals`` is false).
public final class FirefoxDriver: BrowserDriver {
    public var browser: Browser { .firefox }
    private let rpc: RPCSession
    private let process: BrowserProcess?
    private var stopped = false
    private let acceptsAnyCertificate: Bool
    private var context = ""
    private var lastNetwork = Date.distantPast
    private var status: Int? = nil

    /// The preferences every run needs (no first-run pages, updates, telemetry or background requests).
    static let quiet: [(String, String)] = [
        ("browser.shell.checkDefaultBrowser", "false"), ("datareporting.policy.dataSubmissionEnabled", "false"),
        ("toolkit.telemetry.reportingpolicy.firstRun", "false"),
        ("browser.startup.homepage_override.mstone", "\"ignore\""), ("app.update.enabled", "false"),
        ("network.captive-portal-service.enabled", "false"), ("network.connectivity-service.enabled", "false"),
        ("browser.safebrowsing.malware.enabled", "false"), ("browser.safebrowsing.phishing.enabled", "false"),
        ("network.dns.disablePrefetch", "true"), ("network.prefetch-next", "false"),
        ("extensions.update.enabled", "false"),
        // The browser's own traffic off (telemetry, remote settings, experiments, sign-in, push, safe-browsing
        // lists, captive-portal and region checks): it would go through the audit's proxy beside the site's.
        ("toolkit.telemetry.enabled", "false"), ("toolkit.telemetry.unified", "false"),
        ("datareporting.healthreport.uploadEnabled", "false"), ("browser.ping-centre.telemetry", "false"),
        ("app.normandy.enabled", "false"), ("app.shield.optoutstudies.enabled", "false"),
        ("messaging-system.rsexperimentloader.enabled", "false"), ("identity.fxaccounts.enabled", "false"),
        ("services.settings.server", "\"data:,#remote-settings-off\""), ("dom.push.connection.enabled", "false"),
        ("browser.safebrowsing.downloads.remote.enabled", "false"),
        ("browser.safebrowsing.provider.google4.updateURL", "\"\""),
        ("browser.safebrowsing.provider.mozilla.updateURL", "\"\""), ("browser.region.update.enabled", "false"),
        ("browser.search.update", "false"), ("media.gmp-manager.updateEnabled", "false"),
        ("extensions.getAddons.cache.enabled", "false"), ("browser.newtabpage.enabled", "false"),
        ("browser.discovery.enabled", "false"), ("network.trr.mode", "5"),
    ]

    /// Starts `binary` with `options`.
    static func start(binary: String, options: DriverOptions) throws(BrowserFailure) -> FirefoxDriver {
        let process = try BrowserProcess(engine: "firefox")
        // Every http and https request (loopback hosts too) through the proxy.
        var prefs =
            quiet + [
                ("network.proxy.type", "1"), ("network.proxy.http", "\"127.0.0.1\""),
                ("network.proxy.http_port", "\(options.proxyPort)"), ("network.proxy.ssl", "\"127.0.0.1\""),
                ("network.proxy.ssl_port", "\(options.proxyPort)"), ("network.proxy.no_proxies_on", "\"\""),
                ("network.proxy.allow_hijacking_localhost", "true"),
            ]
        // network.cookie.cookieBehavior: 0 accepts every cookie, 1 refuses third-party ones.
        switch options.thirdParty {
        case .default: break
        case .allow: prefs.append(("network.cookie.cookieBehavior", "0"))
        case .block: prefs.append(("network.cookie.cookieBehavior", "1"))
        }
        try process.write("user.js", prefs.map { "user_pref(\"\($0.0)\", \($0.1));\n" }.joined())
        var trusted = false
        if let ca = options.authority,
            let certutil = ["/usr/bin/certutil", "/usr/local/bin/certutil"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        {
            // The profile's cert9.db, made before Firefox first opens it, with the CA trusted for TLS servers ("C");
            // the user's profiles are never touched.
            let database = "sql:" + process.profile
            let made = (try? ChildProcess.run(certutil, ["-N", "-d", database, "--empty-password"]))?.status
            let added =
                (try? ChildProcess.run(
                    certutil, ["-A", "-n", "cookie-proxy audit (throwaway)", "-t", "C,,", "-i", ca, "-d", database]))?
                .status
            trusted = made == 0 && added == 0
        }
        let errors: (read: Int32, write: Int32)
        do { errors = try ChildProcess.pipe() } catch { throw BrowserFailure(error.description) }
        var env = options.environment
        env["MOZ_CRASHREPORTER_DISABLE"] = "1"
        let size = options.window.map { ["--width=\($0.width)", "--height=\($0.height)"] } ?? []
        do {
            try process.start(
                binary,
                ["--headless", "--no-remote", "--profile", process.profile, "--remote-debugging-port=0"] + size,
                environment: env, descriptors: [-1, -1, errors.write], newGroup: true)
        } catch {
            close(errors.read)
            close(errors.write)
            throw error
        }
        close(errors.write)
        // "WebDriver BiDi listening on ws://127.0.0.1:PORT" on its standard error; the rest of it is drained (a full
        // pipe would stop Firefox) by a thread that ends with the pipe.
        let address = listeningAddress(errors.read)
        let drain = Thread {
            var sink = [UInt8](repeating: 0, count: 4096)
            while sink.withUnsafeMutableBytes({ read(errors.read, $0.baseAddress, $0.count) }) > 0 {}
            close(errors.read)
        }
        drain.start()
        guard let (host, port) = address else {
            throw BrowserFailure("Firefox did not start WebDriver BiDi within 30 s")
        }
        let socket = try WebSocketClient(host: host, port: port, path: "/session")
        return try FirefoxDriver(
            channel: try options.channel(socket, .firefox), process: process, acceptsAnyCertificate: !trusted)
    }

    /// A driver over `channel` (a live WebSocket, or a transcript with no `process`): a new session, the window's
    /// browsing context, the network events subscribed.
    init(channel: any BrowserChannel, process: BrowserProcess? = nil, acceptsAnyCertificate: Bool)
        throws(BrowserFailure)
    {
        (rpc, self.process) = (RPCSession(channel, peer: "Firefox"), process)
        self.acceptsAnyCertificate = acceptsAnyCertificate
        struct New: Encodable {
            struct Capabilities: Encodable {
                struct Match: Encodable { var acceptInsecureCerts: Bool }
                var alwaysMatch: Match
            }
            var capabilities: Capabilities
        }
        struct Tree: Decodable {
            struct Context: Decodable { var context: String }
            var contexts: [Context]
        }
        try rpc.call(
            "session.new", New(capabilities: .init(alwaysMatch: .init(acceptInsecureCerts: acceptsAnyCertificate))))
        context = try rpc.call("browsingContext.getTree", as: Tree.self).contexts.first?.context ?? ""
        try rpc.call(
            "session.subscribe",
            ["events": ["network.beforeRequestSent", "network.responseCompleted", "network.fetchError"]])
    }

    deinit { stop() }

    /// Ends the browser once: the protocol's close, then the process (a replay has none: the close is in it).
    public func stop() {
        guard !stopped else { return }
        stopped = true
        let polite = { [self] in if !rpc.channel.closed { try? rpc.call("session.end", seconds: 5) } }
        if let process { process.stop(polite: polite) } else { polite() }
    }

    public var isAlive: Bool { !rpc.channel.closed && !(process?.exited ?? false) }

    public var trust: String {
        acceptsAnyCertificate
            ? "Firefox accepted any certificate from the proxy (no certutil to make its profile trust the run's CA)"
            : "Firefox trusted the run's CA in its new profile's certificate database only"
    }

    public var reportsRefusals: Bool { false }

    /// Reads Firefox's standard error until it names its BiDi address (host and port), for up to 30 seconds.
    private static func listeningAddress(_ fd: Int32) -> (String, Int)? {
        let deadline = Date().addingTimeInterval(30)
        var text = ""
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let range = text.range(of: "WebDriver BiDi listening on ws://"),
                let end = text[range.upperBound...].firstIndex(where: { $0 == "\n" || $0 == "/" })
            {
                let authority = text[range.upperBound..<end]
                guard let colon = authority.lastIndex(of: ":"),
                    let port = Int(authority[authority.index(after: colon)...])
                else { return nil }
                return (String(authority[..<colon]), port)
            }
            let left = Int(deadline.timeIntervalSinceNow * 1000)
            guard left > 0, Descriptors.waitReadable(fd, milliseconds: left) else { return nil }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            text += String(decoding: chunk[0..<n], as: UTF8.self)
        }
    }

    private struct Navigate: Encodable {
        var context: String
        var url: String
        var wait = "complete"
    }

    public func open(_ url: String, wait: Double, until ready: PageReadiness) throws(BrowserFailure) -> PageLoad {
        status = nil
        let end = rpc.channel.now.addingTimeInterval(wait)
        do {
            try rpc.call("browsingContext.navigate", Navigate(context: context, url: url), seconds: wait)
        } catch {
            guard isAlive else { throw error }
            // A failed navigation (the proxy's answer arrives as a page; a connection error does not).
            if status == nil {
                try? rpc.call("browsingContext.navigate", Navigate(context: context, url: "about:blank"), seconds: 5)
                return PageLoad(
                    status: nil, problem: "Firefox could not load the page within \(Int(wait)) s: \(error.description)")
            }
        }
        guard ready == .quiet else { return PageLoad(status: status, problem: nil) }
        let idle = try quiet(0.5, until: end)
        return PageLoad(
            status: status,
            problem: idle ? nil : "the page's network was not idle after \(Int(wait)) s (read as it was)")
    }

    public func settle(quiet: Double, wait: Double) throws(BrowserFailure) {
        _ = try self.quiet(quiet, until: rpc.channel.now.addingTimeInterval(wait))
    }

    /// Reads events until no request has started or finished for `seconds`; false when `end` came first.
    private func quiet(_ seconds: Double, until end: Date) throws(BrowserFailure) -> Bool {
        lastNetwork = rpc.channel.now
        while true {
            let quietAt = lastNetwork.addingTimeInterval(seconds)
            if quietAt <= rpc.channel.now { return true }
            if end <= rpc.channel.now { return false }
            if let event = try rpc.nextEvent(until: min(quietAt, end)) { handle(event) }
        }
    }

    public func evaluate(_ script: String) throws(BrowserFailure) -> String? {
        struct Evaluate: Encodable {
            struct Target: Encodable { var context: String }
            var expression: String
            var target: Target
            var awaitPromise = false
        }
        struct Evaluated: Decodable {
            struct Result: Decodable { var value: StringIfAny? }
            var result: Result?
        }
        return try rpc.call(
            "script.evaluate", Evaluate(expression: script, target: .init(context: context)), as: Evaluated.self
        ).result?.value?.string
    }

    public func takeRefused() -> [RefusedLine] { [] }

    /// BiDi's `network.Cookie`.
    struct Cookie: Decodable {
        /// `network.BytesValue`: a string, or base64 when it is not UTF-8.
        struct Bytes: Decodable {
            var type: String
            var value: String
        }
        var name: String
        var value: Bytes
        var domain: String
        var path: String
        var expiry: Double?
        var secure: Bool
        var httpOnly: Bool
        var sameSite: String?

        var cookie: BrowserCookie {
            var text = value.value
            if value.type == "base64" {
                text = Data(base64Encoded: text).map { String(decoding: $0, as: UTF8.self) } ?? text
            }
            // BiDi gives a name's bytes as Latin-1 characters (the value as UTF-8): read back as the same bytes.
            var name = self.name
            if name.unicodeScalars.allSatisfy({ $0.value < 256 }) {
                name = String(decoding: name.unicodeScalars.map { UInt8($0.value) }, as: UTF8.self)
            }
            return BrowserCookie(
                name: name, value: text, domain: domain, path: path, expires: expiry, secure: secure,
                httpOnly: httpOnly, sameSite: ["strict": "Strict", "lax": "Lax", "none": "None"][sameSite ?? ""])
        }
    }

    public func cookies() throws(BrowserFailure) -> [BrowserCookie] {
        struct Cookies: Decodable { var cookies: [Cookie] }
        return try rpc.call("storage.getCookies", as: Cookies.self).cookies.map(\.cookie)
    }

    public func clearCookies() throws(BrowserFailure) {
        try rpc.call("storage.deleteCookies")
    }

    public func screenshot() throws(BrowserFailure) -> Data? {
        struct Shot: Decodable { var data: String }
        return Data(
            base64Encoded: try rpc.call("browsingContext.captureScreenshot", ["context": context], as: Shot.self).data)
    }

    private struct Completed: Decodable {
        struct Response: Decodable { var status: Int }
        var navigation: String?
        var context: String?
        var response: Response
    }

    private func handle(_ event: RPCSession.Event) {
        switch event.method {
        case "network.beforeRequestSent", "network.fetchError":
            lastNetwork = rpc.channel.now
        case "network.responseCompleted":
            lastNetwork = rpc.channel.now
            if let e = event.params(Completed.self), e.navigation != nil, e.context == context {
                status = e.response.status
            }
        default: break
        }
    }
}
