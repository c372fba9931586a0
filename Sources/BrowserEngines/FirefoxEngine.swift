import CookieKit
import Foundation

/// `parse --browser firefox`: what the machine's Firefox stores for a Set-Cookie line.
///
/// Firefox (Debian's `firefox-esr`) runs headless with a fresh profile whose proxy, for http and https and every
/// host, is the local ``LineServer`` (Firefox has no host-resolver switch; https arrives as a `CONNECT`, the tunnel
/// is the server's TLS, and `acceptInsecureCerts` lets its throwaway certificate pass). It is driven over WebDriver
/// BiDi (``FirefoxBiDi``): `browsingContext.navigate` to the URL, `storage.getCookies` to read the jar back,
/// `storage.deleteCookies` before each line.
final class FirefoxEngine: BrowserEngine {
    private let server: LineServer
    private let browser: FirefoxBiDi
    /// The line server's CA folder.
    private let folder: String
    private var context = ""

    init(binary: String) throws(BrowserFailure) {
        folder = try makeProfile("firefox-lines")
        server = try LineServer(directory: folder)
        do {
            browser = try FirefoxBiDi(binary: binary, prefs: FirefoxBiDi.proxy(host: "127.0.0.1", port: server.port))
            context = try browser.topContext()
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

    func check(_ line: String, url: RequestURL, readAt: String?) throws(BrowserFailure) -> BrowserCookie? {
        try browser.call("storage.deleteCookies")
        server.set(line: line, host: url.host, path: url.path)
        do {
            try browser.call(
                "browsingContext.navigate", ["context": context, "url": url.description, "wait": "complete"])
        } catch  where !error.description.hasPrefix("the browser") {
            // A page that failed to load may still have set its cookie: what matters is the jar.
        }
        let cookies = try browser.call("storage.getCookies")["cookies"] as? [[String: Any]] ?? []
        guard let c = BrowserCookie.first(of: cookies, for: LineServer.normalised(url.host)) else { return nil }
        let value = c["value"] as? [String: Any] ?? [:]
        var text = value["value"] as? String ?? ""
        if value["type"] as? String == "base64" {
            text = Data(base64Encoded: text).map { String(decoding: $0, as: UTF8.self) } ?? text
        }
        // BiDi gives a name's bytes as Latin-1 characters (the value as UTF-8): read back as the same bytes.
        var name = c["name"] as? String ?? ""
        if name.unicodeScalars.allSatisfy({ $0.value < 256 }) {
            name = String(decoding: name.unicodeScalars.map { UInt8($0.value) }, as: UTF8.self)
        }
        let sameSite = FirefoxBiDi.sameSite(c["sameSite"])
        return BrowserCookie(
            reported: c, name: name, value: text, sameSite: sameSite ?? "Default", persistent: c["expiry"] != nil)
    }
}
