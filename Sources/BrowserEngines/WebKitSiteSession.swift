import Foundation
import SiteAudit

/// One consent state of `audit URL --browser webkit`: WebKitGTK's MiniBrowser over classic WebDriver
/// (``WebKitDriver``), every request through the audit's proxy. Classic WebDriver says little: a page is idle once
/// its resource timing list has not grown for half a second; the cookies read are the current document's only (no
/// third-party cookie, no other path's); nothing says what WebKit refused, so the audit finds a refused line of
/// the page's own host by its absence (``reportsRefusals`` is false).
public final class WebKitSiteSession: SiteBrowser {
    private let driver: WebKitDriver

    public init(driver path: String, proxyPort: Int, environment: [String: String]) throws(BrowserFailure) {
        driver = try WebKitDriver(driver: path, proxyPort: proxyPort, environment: environment)
        _ = try? driver.command("POST", "/window/rect", ["width": 1280, "height": 900])
    }

    public var reportsRefusals: Bool { false }
    public var readsOnlyThePagesCookies: Bool { true }
    public var isAlive: Bool { !driver.exited }
    public var trust: String { "WebKit accepted any certificate from the proxy (WebKitGTK has no per-profile trust)" }

    public func visit(_ url: String, wait: Double) throws(BrowserFailure) -> (status: Int?, problem: String?) {
        let end = Date().addingTimeInterval(wait)
        do {
            // Navigate To answers once the page has loaded (the "normal" page load strategy).
            try driver.command("POST", "/url", ["url": url], seconds: wait)
        } catch {
            guard isAlive else { throw error }
            return (nil, "WebKit could not load the page within \(Int(wait)) s: \(error.description)")
        }
        let idle = try quiet(0.5, until: end)
        // The document's status is the proxy's to say (classic WebDriver does not).
        return (nil, idle ? nil : "the page's network was not idle after \(Int(wait)) s (read as it was)")
    }

    public func settle(quiet seconds: Double, wait: Double) throws(BrowserFailure) {
        _ = try quiet(seconds, until: Date().addingTimeInterval(wait))
    }

    /// Polls the page's resource timing entries until their count holds for `seconds`; false when `end` came first.
    private func quiet(_ seconds: Double, until end: Date) throws(BrowserFailure) -> Bool {
        var count = -1
        var since = Date()
        while Date() < end {
            let now =
                (try? driver.command(
                    "POST", "/execute/sync",
                    ["script": "return performance.getEntriesByType('resource').length", "args": []], seconds: 5))
                as? Int ?? -2
            if now != count { (count, since) = (now, Date()) }
            if Date().timeIntervalSince(since) >= seconds { return true }
            usleep(100_000)
        }
        return false
    }

    public func evaluate(_ script: String) throws(BrowserFailure) -> String? {
        try driver.command("POST", "/execute/sync", ["script": "return (\(script));", "args": []]) as? String
    }

    public func takeRefused() -> [(url: String, line: String, reasons: [String])] { [] }

    public func cookies() throws(BrowserFailure) -> [BrowserStoredCookie] {
        let list = try driver.command("GET", "/cookie") as? [[String: Any]] ?? []
        return list.map { c in
            // WebDriver reports a host-only cookie's domain without a dot and a domain cookie's with one.
            BrowserStoredCookie(
                name: c["name"] as? String ?? "", domain: c["domain"] as? String ?? "",
                path: c["path"] as? String ?? "/",
                expires: (c["expiry"] as? Double) ?? (c["expiry"] as? Int).map(Double.init),
                secure: c["secure"] as? Bool ?? false, httpOnly: c["httpOnly"] as? Bool ?? false,
                sameSite: c["sameSite"] as? String, partitionKey: nil)
        }
    }

    public func screenshot() throws(BrowserFailure) -> Data? {
        (try driver.command("GET", "/screenshot") as? String).flatMap { Data(base64Encoded: $0) }
    }
}
