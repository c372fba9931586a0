import Foundation
import SiteAudit

/// One consent state of `audit URL --browser firefox`: a headless Firefox with a fresh profile whose every http and
/// https request goes to the audit's proxy, driven over WebDriver BiDi (``FirefoxBiDi``). BiDi reports neither
/// network idleness nor the cookies Firefox refused: a page is idle once no request has started or finished for
/// half a second, and the audit finds a refused line by its absence from the store (``reportsRefusals`` is false).
public final class FirefoxSiteSession: SiteBrowser {
    private let browser: FirefoxBiDi
    private var context = ""
    private var lastNetwork = Date()
    private var status: Int? = nil

    /// `trust`: the proxy's CA (PEM), which the new profile trusts (``FirefoxBiDi``).
    public init(binary: String, proxyPort: Int, thirdParty: ThirdPartyCookies = .default, trust: String? = nil)
        throws(BrowserFailure)
    {
        var prefs = FirefoxBiDi.proxy(host: "127.0.0.1", port: proxyPort)
        // network.cookie.cookieBehavior: 0 accepts every cookie, 1 refuses third-party ones.
        switch thirdParty {
        case .default: break
        case .allow: prefs.append(("network.cookie.cookieBehavior", "0"))
        case .block: prefs.append(("network.cookie.cookieBehavior", "1"))
        }
        browser = try FirefoxBiDi(
            binary: binary, prefs: prefs, arguments: ["--width=1280", "--height=900"], trust: trust)
        context = try browser.topContext()
        try browser.call(
            "session.subscribe",
            ["events": ["network.beforeRequestSent", "network.responseCompleted", "network.fetchError"]])
    }

    public var trust: String {
        browser.acceptsAnyCertificate
            ? "Firefox accepted any certificate from the proxy (no certutil to make its profile trust the run's CA)"
            : "Firefox trusted the run's CA in its new profile's certificate database only"
    }

    /// Firefox says nothing over BiDi about the lines it refuses.
    public var reportsRefusals: Bool { false }

    public var isAlive: Bool { !browser.exited }

    public func visit(_ url: String, wait: Double) throws(BrowserFailure) -> (status: Int?, problem: String?) {
        status = nil
        let end = Date().addingTimeInterval(wait)
        do {
            try browser.call(
                "browsingContext.navigate", ["context": context, "url": url, "wait": "complete"], seconds: wait)
        } catch {
            guard isAlive else { throw error }
            // A failed navigation (the proxy's answer arrives as a page; a connection error does not).
            if status == nil {
                _ = try? browser.call(
                    "browsingContext.navigate", ["context": context, "url": "about:blank"], seconds: 5)
                return (nil, "Firefox could not load the page within \(Int(wait)) s: \(error.description)")
            }
        }
        let idle = try quiet(0.5, until: end)
        return (status, idle ? nil : "the page's network was not idle after \(Int(wait)) s (read as it was)")
    }

    public func settle(quiet: Double, wait: Double) throws(BrowserFailure) {
        _ = try self.quiet(quiet, until: Date().addingTimeInterval(wait))
    }

    /// Reads events until no request has started or finished for `seconds`; false when `end` came first.
    private func quiet(_ seconds: Double, until end: Date) throws(BrowserFailure) -> Bool {
        lastNetwork = Date()
        while true {
            let quietAt = lastNetwork.addingTimeInterval(seconds)
            if quietAt <= Date() { return true }
            if end <= Date() { return false }
            if let event = try browser.nextEvent(until: min(quietAt, end)) { handle(event) }
        }
    }

    public func evaluate(_ script: String) throws(BrowserFailure) -> String? {
        let result = try browser.call(
            "script.evaluate", ["expression": script, "target": ["context": context], "awaitPromise": false])
        return (result["result"] as? [String: Any])?["value"] as? String
    }

    public func takeRefused() -> [(url: String, line: String, reasons: [String])] { [] }

    public func cookies() throws(BrowserFailure) -> [BrowserStoredCookie] {
        let list = try browser.call("storage.getCookies")["cookies"] as? [[String: Any]] ?? []
        return list.map { c in
            return BrowserStoredCookie(
                name: c["name"] as? String ?? "", domain: c["domain"] as? String ?? "",
                path: c["path"] as? String ?? "/",
                expires: (c["expiry"] as? Double) ?? (c["expiry"] as? Int).map(Double.init),
                secure: c["secure"] as? Bool ?? false, httpOnly: c["httpOnly"] as? Bool ?? false,
                sameSite: FirefoxBiDi.sameSite(c["sameSite"]),
                partitionKey: nil)
        }
    }

    public func screenshot() throws(BrowserFailure) -> Data? {
        let shot = try browser.call("browsingContext.captureScreenshot", ["context": context])
        return (shot["data"] as? String).flatMap { Data(base64Encoded: $0) }
    }

    private func handle(_ event: [String: Any]) {
        guard let method = event["method"] as? String, let params = event["params"] as? [String: Any] else { return }
        switch method {
        case "network.beforeRequestSent":
            lastNetwork = Date()
        case "network.responseCompleted":
            lastNetwork = Date()
            if params["navigation"] is String, params["context"] as? String == context,
                let response = params["response"] as? [String: Any]
            {
                status = response["status"] as? Int
            }
        case "network.fetchError":
            lastNetwork = Date()
        default: break
        }
    }
}
