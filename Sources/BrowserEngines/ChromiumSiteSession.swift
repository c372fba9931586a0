import Foundation
import SiteAudit

/// One consent state of `audit URL --browser chromium`: a headless Chromium with a fresh profile, its traffic sent
/// through the audit's proxy (`--proxy-server`), which it trusts by the pin of the proxy's leaf key alone
/// (`--ignore-certificate-errors-spki-list`: no trust store is touched). Cross-site frames stay in the page's
/// process (site isolation off), so the page's Network domain reports every frame's cookies, including the ones
/// Chromium refused and why (`Network.responseReceivedExtraInfo`'s `blockedCookies`).
public final class ChromiumSiteSession: SiteBrowser {
    private let browser: DevToolsPipe
    private var session = ""
    private var mainFrame = ""
    /// Each request's URL, to name the response a refused line came in.
    private var urls: [String: String] = [:]
    private var refused: [(url: String, line: String, reasons: [String])] = []
    private var lastNetwork = Date()
    /// The navigation in hand: its loader, the document's status, whether it went idle.
    private var loader = ""
    private var status: Int? = nil
    private var idle = false

    /// `pin`: the base64 SHA-256 of the proxy's leaf key (``publicKeySHA256``).
    public init(binary: String, proxyPort: Int, pin: String, thirdParty: ThirdPartyCookies = .default)
        throws(BrowserFailure)
    {
        browser = try DevToolsPipe(
            binary: binary,
            arguments: [
                // `<-loopback>`: loopback hosts (localhost, 127.0.0.1, *.localhost) go through the proxy too, as
                // every other host (Chromium sends them direct by default: a dev server would be audited blind).
                "--proxy-server=http://127.0.0.1:\(proxyPort)", "--proxy-bypass-list=<-loopback>",
                "--ignore-certificate-errors-spki-list=\(pin)",
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
                "--window-size=1280,900",
            ],
            // The profile's `profile.cookie_controls_mode`: 0 allows third-party cookies, 1 blocks them.
            preferences: thirdParty == .default
                ? nil : #"{"profile":{"cookie_controls_mode":\#(thirdParty == .allow ? 0 : 1)}}"#)
        session = try browser.openPage()
        try browser.call("Page.setLifecycleEventsEnabled", ["enabled": true], session: session)
        try browser.call("Network.enable", session: session)
        let tree = try browser.call("Page.getFrameTree", session: session)
        mainFrame = ((tree["frameTree"] as? [String: Any])?["frame"] as? [String: Any])?["id"] as? String ?? ""
    }

    /// Loads `url` and waits until its network is idle, at most `wait` seconds. The document's status (nil when
    /// none came), and why the page is incomplete (a navigation error; not idle in time).
    public func visit(_ url: String, wait: Double) throws(BrowserFailure) -> (status: Int?, problem: String?) {
        (status, idle) = (nil, false)
        let navigated: [String: Any]
        do {
            // Page.navigate answers once the document's response starts: a server that never answers is waited
            // for as long as a page may take to go idle, then stopped.
            navigated = try browser.call("Page.navigate", ["url": url], session: session, seconds: wait)
        } catch {
            guard isAlive else { throw error }
            _ = try? browser.call("Page.stopLoading", session: session)
            return (nil, "no response within \(Self.seconds(wait)): the page was stopped (a longer --wait waits more)")
        }
        if let error = navigated["errorText"] as? String, !error.isEmpty {
            return (nil, "Chromium could not load the page: \(error)")
        }
        loader = navigated["loaderId"] as? String ?? ""
        let deadline = Date().addingTimeInterval(wait)
        while !idle, let event = try browser.nextEvent(until: deadline) { handle(event) }
        if browser.exited { throw BrowserFailure("Chromium ended while loading \(url) (it crashed or was killed)") }
        return (status, idle ? nil : "the page's network was not idle after \(Self.seconds(wait)) (read as it was)")
    }

    /// Reads events until the network has been quiet for `quiet` seconds, at most `wait` (after a click).
    public func settle(quiet: Double, wait: Double) throws(BrowserFailure) {
        let end = Date().addingTimeInterval(wait)
        lastNetwork = Date()
        while Date() < end {
            let quietUntil = lastNetwork.addingTimeInterval(quiet)
            if quietUntil <= Date() { return }
            if let event = try browser.nextEvent(until: min(quietUntil, end)) { handle(event) }
        }
    }

    /// Whether the browser is still running.
    public var isAlive: Bool { !browser.exited }

    public var trust: String { "Chromium trusted the proxy's leaves by their key's pin, in this run only" }

    /// A script's value, when it returns a string.
    public func evaluate(_ script: String) throws(BrowserFailure) -> String? {
        let result = try browser.call(
            "Runtime.evaluate", ["expression": script, "returnByValue": true], session: session)
        return (result["result"] as? [String: Any])?["value"] as? String
    }

    /// The lines Chromium refused since the last call, with the response URL and its reasons.
    public func takeRefused() -> [(url: String, line: String, reasons: [String])] {
        defer { refused.removeAll() }
        return refused
    }

    /// Chromium's whole cookie store.
    public func cookies() throws(BrowserFailure) -> [BrowserStoredCookie] {
        let list = try browser.call("Storage.getCookies")["cookies"] as? [[String: Any]] ?? []
        return list.map { c in
            let session = c["session"] as? Bool ?? true
            // `partitionKey` is an object ({topLevelSite, hasCrossSiteAncestor}) in today's protocol, a string before.
            let key = (c["partitionKey"] as? [String: Any])?["topLevelSite"] as? String ?? c["partitionKey"] as? String
            return BrowserStoredCookie(
                name: c["name"] as? String ?? "", domain: c["domain"] as? String ?? "",
                path: c["path"] as? String ?? "/",
                expires: session ? nil : (c["expires"] as? Double ?? (c["expires"] as? Int).map(Double.init)),
                secure: c["secure"] as? Bool ?? false, httpOnly: c["httpOnly"] as? Bool ?? false,
                sameSite: c["sameSite"] as? String, partitionKey: key)
        }
    }

    /// A screenshot of the page (PNG).
    public func screenshot() throws(BrowserFailure) -> Data? {
        let shot = try browser.call("Page.captureScreenshot", ["format": "png"], session: session)
        return (shot["data"] as? String).flatMap { Data(base64Encoded: $0) }
    }

    private func handle(_ event: [String: Any]) {
        guard let method = event["method"] as? String, let params = event["params"] as? [String: Any] else { return }
        switch method {
        case "Page.lifecycleEvent":
            if params["name"] as? String == "networkIdle", params["frameId"] as? String == mainFrame,
                loader.isEmpty || params["loaderId"] as? String == loader
            {
                idle = true
            }
        case "Network.requestWillBeSent":
            lastNetwork = Date()
            if let id = params["requestId"] as? String, let url = (params["request"] as? [String: Any])?["url"] {
                urls[id] = url as? String
            }
        case "Network.responseReceived":
            lastNetwork = Date()
            if params["requestId"] as? String == loader, let response = params["response"] as? [String: Any] {
                status = response["status"] as? Int
            }
        case "Network.loadingFinished", "Network.loadingFailed":
            lastNetwork = Date()
        case "Network.responseReceivedExtraInfo":
            let id = params["requestId"] as? String ?? ""
            for blocked in params["blockedCookies"] as? [[String: Any]] ?? [] {
                let reasons = blocked["blockedReasons"] as? [String] ?? []
                refused.append((urls[id] ?? "(unknown request \(id))", blocked["cookieLine"] as? String ?? "", reasons))
            }
        default: break
        }
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }
}
