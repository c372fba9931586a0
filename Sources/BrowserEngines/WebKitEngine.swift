import CookieKit
import Foundation
import ProxyPlatform

/// `parse --browser webkit`: what WebKitGTK stores for a Set-Cookie line.
///
/// WebKitGTK's MiniBrowser over classic WebDriver (``WebKitDriver``), its proxy the local ``LineServer`` for every
/// host: navigate to the URL, then read the cookies back. WebDriver gives only the cookies of the current document, so the jar is read
/// where the cookie would apply (`readAt`, the path the draft stores it under, else the URL's own). Without a display
/// (`DISPLAY`, `WAYLAND_DISPLAY`) the driver runs under `xvfb-run`.
///
/// WebKitGTK's cookie storage is libsoup's, not the CFNetwork store of Safari and WKWebView: they share WebKit's
/// page loading, its third-party blocking policy and its SameSite handling (no Lax by default: a cookie without
/// SameSite is None, reported here as the draft's Default), not the parser and the jar (docs/browser-differences.md).
final class WebKitEngine: BrowserEngine {
    private let server: LineServer
    private let driver: WebKitDriver
    /// The line server's CA folder.
    private let folder: String

    init(driver path: String, environment: [String: String]) throws(BrowserFailure) {
        folder = try makeProfile("webkit-lines")
        server = try LineServer(directory: folder)
        do {
            driver = try WebKitDriver(driver: path, proxyPort: server.port, environment: environment)
        } catch {
            server.stop()
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    func check(_ line: String, url: RequestURL, readAt path: String?) throws(BrowserFailure) -> BrowserCookie? {
        try driver.command("DELETE", "/cookie")
        let host = LineServer.normalised(url.host)
        // Delete All Cookies reaches the current document's cookies only, and for an IPv6 host it reaches none:
        // what a previous line left would be read as this line's answer, so it is an error instead.
        if let kept = try cookieHere(host) {
            throw BrowserFailure(
                "WebKit kept the cookie \(kept["name"] as? String ?? "") of a previous line for \(url.host) and "
                    + "WebDriver cannot delete it: ask one line per run for this host")
        }
        server.set(line: line, host: url.host, path: url.path)
        // Loopback is not proxied (the driver reaches the browser over it).
        let target = server.reachable(url)
        navigate(target.description)
        var cookie = try cookieHere(host)
        if cookie == nil, let path, path != url.path {
            // Read again where the cookie applies: the origin with the draft's path.
            var there = target
            there.path = path
            navigate(there.description)
            cookie = try cookieHere(host)
        }
        guard let c = cookie else { return nil }
        var sameSite = c["sameSite"] as? String ?? "None"
        if sameSite == "None" && SetCookie(line).attributes.sameSite == .default { sameSite = "Default" }
        return BrowserCookie(
            reported: c, name: c["name"] as? String ?? "", value: c["value"] as? String ?? "", sameSite: sameSite,
            persistent: c["expiry"] != nil)
    }

    private func navigate(_ url: String) {
        // A page that failed to load may still have set its cookie: what matters is the jar.
        _ = try? driver.command("POST", "/url", ["url": url])
    }

    /// The first cookie for `host` among the current document's.
    private func cookieHere(_ host: String) throws(BrowserFailure) -> [String: Any]? {
        BrowserCookie.first(of: try driver.command("GET", "/cookie") as? [[String: Any]] ?? [], for: host)
    }
}
