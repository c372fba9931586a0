import CookieKit
import Foundation

/// `parse --browser chromium`: what the machine's own Chromium stores for a Set-Cookie line.
///
/// A headless Chromium with a fresh profile is driven over the DevTools protocol on a pipe (``DevToolsPipe``). Every
/// host name resolves to a local server (`--host-resolver-rules`) that answers the navigation to the URL with exactly
/// that one Set-Cookie line, over http or https on one port (a first byte of 0x16 is TLS; the certificate comes
/// from a throwaway CA, and Chromium is told to ignore certificate errors). What Chromium then holds is read
/// back with `Storage.getCookies`; the jar is cleared before each line.
final class ChromiumEngine: BrowserEngine {
    private let server: LineServer
    private let browser: DevToolsPipe
    /// The line server's CA folder.
    private let folder: String
    private var session = ""

    init(binary: String) throws(BrowserFailure) {
        folder = try makeProfile("chromium-lines")
        server = try LineServer(directory: folder)
        do {
            browser = try DevToolsPipe(
                binary: binary,
                arguments: [
                    "--ignore-certificate-errors",
                    "--disable-features=OptimizationHints,MediaRouter,AutofillServerCommunication",
                    "--host-resolver-rules=MAP * 127.0.0.1:\(server.port)",
                ])
        } catch {
            server.stop()
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
        session = try browser.openPage()
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// What Chromium stores when `url` answers with `Set-Cookie: line`: nil if it stores nothing for that host.
    func check(_ line: String, url: RequestURL, readAt: String?) throws(BrowserFailure) -> BrowserCookie? {
        try browser.call("Storage.clearCookies")
        server.set(line: line, host: url.host, path: url.path)
        // Loopback hosts do not go through the resolver rules.
        try browser.call("Page.navigate", ["url": server.reachable(url).description], session: session)
        let deadline = Date().addingTimeInterval(15)
        var loaded = false
        while !loaded {
            guard let message = try browser.nextEvent(until: deadline) else {
                throw BrowserFailure("Chromium did not load \(url) in time")
            }
            loaded = (message["method"] as? String) == "Page.loadEventFired"
        }
        let cookies = try browser.call("Storage.getCookies")["cookies"] as? [[String: Any]] ?? []
        // Only a cookie for the URL's host counts (Chromium's own background requests reach the server too, but
        // are never answered with the line).
        guard let c = BrowserCookie.first(of: cookies, for: LineServer.normalised(url.host)) else { return nil }
        let sameSite = c["sameSite"] as? String ?? ""
        return BrowserCookie(
            reported: c, name: c["name"] as? String ?? "", value: c["value"] as? String ?? "",
            sameSite: ["Strict", "Lax", "None"].contains(sameSite) ? sameSite : "Default",
            persistent: !(c["session"] as? Bool ?? true))
    }
}
