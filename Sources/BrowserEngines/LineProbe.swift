import CookieKit
import Foundation
import SiteAudit

/// `parse --browser`: one engine asked what it stores for a Set-Cookie line. Its driver starts with a fresh profile
/// whose proxy is a local ``LineServer``, which answers every host name's navigation to the URL with exactly that one
/// line (over http, or https inside a `CONNECT` with a throwaway certificate the browser accepts); the jar is emptied
/// before each line and read back after the load.
final class LineProbe {
    let driver: any BrowserDriver
    /// The server behind every host; nil when the driver replays a transcript (the recording had one).
    private let server: LineServer?

    init(driver: any BrowserDriver, server: LineServer?) {
        (self.driver, self.server) = (driver, server)
    }

    /// A fresh `browser` behind a new line server.
    convenience init(_ browser: Browser, environment: [String: String]) throws(BrowserFailure) {
        let binary = try browser.locate(environment: environment)
        let server = try LineServer()
        do {
            self.init(
                driver: try browser.start(
                    binary: binary, options: DriverOptions(proxyPort: server.port, environment: environment)),
                server: server)
        } catch {
            server.stop()
            throw error
        }
    }

    deinit {
        driver.stop()
        server?.stop()
    }

    /// What the engine stores when `url` answers with `Set-Cookie: line`, in the draft's terms (a SameSite the
    /// browser reports for a line without one is Default): nil if it stores nothing for that host. `readAt` is the
    /// path the cookie should apply to (the draft's), read there too by a driver that reads only the current
    /// document's cookies.
    func check(_ line: String, url: RequestURL, readAt: String?) throws(BrowserFailure) -> BrowserCookie? {
        try driver.clearCookies()
        let host = LineServer.normalised(url.host)
        // Such a driver's clear reaches the current document's cookies only, and for an IPv6 host none: what a
        // previous line left would be read as this line's answer, so it is an error instead.
        if driver.readsOnlyThePagesCookies, let kept = try first(for: host) {
            throw BrowserFailure(
                "\(driver.browser.title) kept the cookie \(kept.name) of a previous line for \(url.host) and "
                    + "\(driver.browser.title)'s protocol cannot delete it: ask one line per run for this host")
        }
        server?.set(line: line, host: url.host, path: url.path)
        // A loopback host is reached at the server's port (cookies do not depend on the port). A page that failed to
        // load may still have set its cookie: what matters is the jar.
        let target = server?.reachable(url) ?? url
        _ = try driver.open(target.description, wait: 15, until: .loaded)
        var cookie = try first(for: host)
        if cookie == nil, driver.readsOnlyThePagesCookies, let readAt, readAt != url.path {
            // Read again where the cookie applies: the origin with the draft's path.
            var there = target
            there.path = readAt
            _ = try driver.open(there.description, wait: 15, until: .loaded)
            cookie = try first(for: host)
        }
        guard var c = cookie else { return nil }
        if driver.reportsDefaultSameSiteAsNone, c.sameSite == "None", SetCookie(line).attributes.sameSite == .default {
            c.sameSite = nil
        }
        return c
    }

    /// The first cookie for `host` in the store: only those count (an engine's own background requests reach the
    /// local server too, never answered with the line).
    private func first(for host: String) throws(BrowserFailure) -> BrowserCookie? {
        try driver.cookies().first { domainMatches(host, $0.bareDomain.lowercased()) }
    }
}
