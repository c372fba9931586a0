import CookieKit
import Foundation
import ProxyPlatform

/// `parse --browser webkit`: what WebKitGTK stores for a Set-Cookie line.
///
/// Debian's WebKitWebDriver (`webkit2gtk-driver`) starts WebKitGTK's MiniBrowser in automation mode with a fresh
/// session; its proxy (the environment's, which GLib's resolver reads: plain http in absolute form, https by
/// `CONNECT`) is the local ``LineServer`` for every host. It is driven over classic WebDriver (HTTP and JSON on loopback): navigate to
/// the URL, then read the cookies back. WebDriver gives only the cookies of the current document, so the jar is read
/// where the cookie would apply (`readAt`, the path the draft stores it under, else the URL's own). Without a display
/// (`DISPLAY`, `WAYLAND_DISPLAY`) the driver runs under `xvfb-run`.
///
/// WebKitGTK's cookie storage is libsoup's, not the CFNetwork store of Safari and WKWebView: they share WebKit's
/// page loading, its third-party blocking policy and its SameSite handling (no Lax by default: a cookie without
/// SameSite is None, reported here as the draft's Default), not the parser and the jar (docs/browser-differences.md).
final class WebKitEngine: BrowserEngine {
    private let server: LineServer
    private let pid: Int32
    private let profile: String
    private let port: Int
    private var session = ""
    private var current = ""

    /// The MiniBrowser the driver starts: `COOKIE_PROXY_MINIBROWSER`, else beside WebKitGTK's libraries.
    static func miniBrowser(_ environment: [String: String]) throws(BrowserFailure) -> String {
        if let given = environment["COOKIE_PROXY_MINIBROWSER"] {
            guard FileManager.default.isExecutableFile(atPath: given) else {
                throw BrowserFailure("COOKIE_PROXY_MINIBROWSER=\(given) is not an executable file", missing: true)
            }
            return given
        }
        let roots = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/libexec"]
        let apis = ["webkit2gtk-4.1", "webkit2gtk-4.0", "webkitgtk-6.0"]
        for root in roots {
            for api in apis where FileManager.default.isExecutableFile(atPath: "\(root)/\(api)/MiniBrowser") {
                return "\(root)/\(api)/MiniBrowser"
            }
        }
        throw BrowserFailure(
            "no WebKitGTK MiniBrowser found (looked in \(roots.joined(separator: ", ")) for \(apis.joined(separator: "|"))"
                + "/MiniBrowser); install it (Debian: apt-get install webkit2gtk-driver) or set COOKIE_PROXY_MINIBROWSER",
            missing: true)
    }

    init(driver: String, environment: [String: String]) throws(BrowserFailure) {
        let browser = try Self.miniBrowser(environment)
        var command = [driver]
        if (environment["DISPLAY"] ?? "").isEmpty && (environment["WAYLAND_DISPLAY"] ?? "").isEmpty {
            let wrapper = "/usr/bin/xvfb-run"
            guard FileManager.default.isExecutableFile(atPath: wrapper) else {
                throw BrowserFailure(
                    "WebKit needs a display: there is none (DISPLAY is unset) and no \(wrapper) to make one; install it "
                        + "(Debian: apt-get install xvfb)", missing: true)
            }
            command = [wrapper, "-a", driver]
        }
        profile = try makeProfile("webkit")
        server = try LineServer(directory: profile)
        port = Self.freePort()
        var env = environment
        env["HOME"] = profile
        env["http_proxy"] = "http://127.0.0.1:\(server.port)"
        env["https_proxy"] = "http://127.0.0.1:\(server.port)"
        // The driver reaches the browser over loopback, which must not go through the proxy (the session never
        // starts otherwise); a loopback URL is asked at the server's own port (``check``).
        env["no_proxy"] = "127.0.0.1,localhost"
        // WebKit's bubblewrap sandbox cannot start as root or in most containers; the pages it loads here all come
        // from the local server.
        env["WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS"] = "1"
        do {
            pid = try ChildProcess.spawn(
                command[0], Array(command.dropFirst()) + ["--port=\(port)"], environment: env,
                descriptors: [-1, -1, -1],
                newGroup: true)
        } catch {
            throw BrowserFailure(error.description)
        }
        do throws(BrowserFailure) {
            try waitForDriver()
            let capabilities: [String: Any] = [
                "acceptInsecureCerts": true,
                "webkitgtk:browserOptions": ["binary": browser, "args": ["--automation"]],
                // "system": the environment's proxies for both schemes (a "manual" sslProxy is spoken to in TLS).
                "proxy": ["proxyType": "system"],
            ]
            let answer = try call("POST", "/session", ["capabilities": ["alwaysMatch": capabilities]])
            session = (answer as? [String: Any])?["sessionId"] as? String ?? ""
            guard !session.isEmpty else { throw BrowserFailure("WebKitWebDriver gave no session") }
        } catch {
            stopChild(pid, group: true)
            try? FileManager.default.removeItem(atPath: profile)
            throw error
        }
    }

    deinit {
        stopChild(pid, group: true) { _ = try? call("DELETE", "/session/\(session)", nil) }
        server.stop()
        try? FileManager.default.removeItem(atPath: profile)
    }

    func check(_ line: String, url: RequestURL, readAt path: String?) throws(BrowserFailure) -> BrowserCookie? {
        _ = try call("DELETE", "/session/\(session)/cookie", nil)
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
        _ = try? call("POST", "/session/\(session)/url", ["url": url])
    }

    /// The first cookie for `host` among the current document's.
    private func cookieHere(_ host: String) throws(BrowserFailure) -> [String: Any]? {
        BrowserCookie.first(of: try call("GET", "/session/\(session)/cookie", nil) as? [[String: Any]] ?? [], for: host)
    }

    private static func freePort() -> Int {
        guard case .success(let bound) = Descriptors.listen(host: "127.0.0.1", port: 0) else { return 4444 }
        close(bound.fd)
        return bound.port
    }

    private func waitForDriver() throws(BrowserFailure) {
        for _ in 0..<200 {
            if case .success(let fd) = Descriptors.connect(host: "127.0.0.1", port: port, milliseconds: 200) {
                close(fd)
                return
            }
            if ChildProcess.reap(pid) != nil { throw BrowserFailure("WebKitWebDriver exited at start") }
            usleep(50_000)
        }
        throw BrowserFailure("WebKitWebDriver did not listen on 127.0.0.1:\(port) within 10 s")
    }

    /// One WebDriver command: its `value`.
    private func call(_ method: String, _ path: String, _ body: [String: Any]?) throws(BrowserFailure) -> Any? {
        let data = body.flatMap { try? JSONSerialization.data(withJSONObject: $0) } ?? Data()
        var request = Array(
            ("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(data.count)\r\nConnection: close\r\n\r\n").utf8)
        request += data
        // The driver keeps the connection open after its answer: read to the end of its Content-Length.
        let answer: (status: Int, body: ArraySlice<UInt8>)
        switch LoopbackClient.exchange(host: "127.0.0.1", port: port, request: request, milliseconds: 60_000) {
        case .success(let a): answer = a
        case .failure(let error): throw BrowserFailure("WebKitWebDriver: \(method) \(path): \(error)")
        }
        let body = answer.body
        let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        guard answer.status == 200 else {
            let message = (object?["value"] as? [String: Any])?["message"] as? String ?? "status \(answer.status)"
            throw BrowserFailure("WebKitWebDriver refused \(method) \(path): \(message)")
        }
        return object?["value"]
    }
}
