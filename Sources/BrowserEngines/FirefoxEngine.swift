import CookieKit
import Foundation
import ProxyPlatform

/// `parse --browser firefox`: what the machine's Firefox stores for a Set-Cookie line.
///
/// Firefox (Debian's `firefox-esr`) runs headless with a fresh profile whose proxy, for http and https and every
/// host, is the local ``LineServer`` (Firefox has no host-resolver switch; https arrives as a `CONNECT`, the tunnel
/// is the server's TLS, and `acceptInsecureCerts` lets its throwaway certificate pass). It is driven over WebDriver
/// BiDi, built into Firefox (`--remote-debugging-port=0`: the address it listens on is read from its standard
/// error; no geckodriver): `browsingContext.navigate` to the URL, `storage.getCookies` to read the jar back,
/// `storage.deleteCookies` before each line.
final class FirefoxEngine: BrowserEngine {
    private let server: LineServer
    private let pid: Int32
    private let profile: String
    private let socket: WebSocketClient
    private var context = ""
    private var nextID = 0

    init(binary: String) throws(BrowserFailure) {
        profile = try makeProfile("firefox")
        server = try LineServer(directory: profile)
        let prefs: [(String, String)] = [
            ("network.proxy.type", "1"), ("network.proxy.http", "\"127.0.0.1\""),
            ("network.proxy.http_port", "\(server.port)"), ("network.proxy.ssl", "\"127.0.0.1\""),
            ("network.proxy.ssl_port", "\(server.port)"), ("network.proxy.no_proxies_on", "\"\""),
            ("network.proxy.allow_hijacking_localhost", "true"), ("browser.shell.checkDefaultBrowser", "false"),
            ("datareporting.policy.dataSubmissionEnabled", "false"),
            ("toolkit.telemetry.reportingpolicy.firstRun", "false"),
            ("browser.startup.homepage_override.mstone", "\"ignore\""), ("app.update.enabled", "false"),
            ("network.captive-portal-service.enabled", "false"), ("network.connectivity-service.enabled", "false"),
            ("browser.safebrowsing.malware.enabled", "false"), ("browser.safebrowsing.phishing.enabled", "false"),
            ("network.dns.disablePrefetch", "true"), ("network.prefetch-next", "false"),
            ("extensions.update.enabled", "false"),
        ]
        let userJS = prefs.map { "user_pref(\"\($0.0)\", \($0.1));\n" }.joined()
        guard FileManager.default.createFile(atPath: profile + "/user.js", contents: Data(userJS.utf8)) else {
            throw BrowserFailure("cannot write \(profile)/user.js")
        }
        let errors: (read: Int32, write: Int32)
        do { errors = try ChildProcess.pipe() } catch { throw BrowserFailure(error.description) }
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = profile
        env["MOZ_CRASHREPORTER_DISABLE"] = "1"
        do {
            pid = try ChildProcess.spawn(
                binary, ["--headless", "--no-remote", "--profile", profile, "--remote-debugging-port=0"],
                environment: env, descriptors: [-1, -1, errors.write], newGroup: true)
        } catch {
            close(errors.read)
            close(errors.write)
            throw BrowserFailure(error.description)
        }
        close(errors.write)
        // "WebDriver BiDi listening on ws://127.0.0.1:PORT" on its standard error; the rest of it is drained (a full
        // pipe would stop Firefox) by a thread that ends with the pipe.
        let address = Self.listeningAddress(errors.read)
        let drain = Thread {
            var sink = [UInt8](repeating: 0, count: 4096)
            while sink.withUnsafeMutableBytes({ read(errors.read, $0.baseAddress, $0.count) }) > 0 {}
            close(errors.read)
        }
        drain.start()
        guard let (host, port) = address else {
            stopChild(pid, group: true)
            try? FileManager.default.removeItem(atPath: profile)
            throw BrowserFailure("Firefox did not start WebDriver BiDi within 30 s")
        }
        do {
            socket = try WebSocketClient(host: host, port: port, path: "/session")
            _ = try call("session.new", ["capabilities": ["alwaysMatch": ["acceptInsecureCerts": true]]])
            let tree = try call("browsingContext.getTree", [:])
            context = ((tree["contexts"] as? [[String: Any]])?.first?["context"] as? String) ?? ""
        } catch {
            stopChild(pid, group: true)
            try? FileManager.default.removeItem(atPath: profile)
            throw error
        }
    }

    deinit {
        stopChild(pid, group: true) { _ = try? call("session.end", [:], seconds: 5) }
        server.stop()
        try? FileManager.default.removeItem(atPath: profile)
    }

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

    func check(_ line: String, url: RequestURL, readAt: String?) throws(BrowserFailure) -> BrowserCookie? {
        _ = try call("storage.deleteCookies", [:])
        server.set(line: line, host: url.host, path: url.path)
        do {
            _ = try call("browsingContext.navigate", ["context": context, "url": url.description, "wait": "complete"])
        } catch  where !error.description.hasPrefix("the browser") {
            // A page that failed to load may still have set its cookie: what matters is the jar.
        }
        let cookies = try call("storage.getCookies", [:])["cookies"] as? [[String: Any]] ?? []
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
        let sameSite = ["strict": "Strict", "lax": "Lax", "none": "None"][c["sameSite"] as? String ?? ""]
        return BrowserCookie(
            reported: c, name: name, value: text, sameSite: sameSite ?? "Default", persistent: c["expiry"] != nil)
    }

    private func call(_ method: String, _ params: [String: Any], seconds: Double = 20) throws(BrowserFailure)
        -> [String: Any]
    {
        nextID += 1
        let id = nextID
        guard let data = try? JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": params])
        else { throw BrowserFailure("cannot encode \(method)") }
        try socket.send(String(decoding: data, as: UTF8.self))
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let text = try socket.receive(until: deadline)
            guard let message = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                message["id"] as? Int == id
            else { continue }
            if message["type"] as? String == "error" {
                throw BrowserFailure(
                    "Firefox refused \(method): \(message["error"] as? String ?? "") \(message["message"] as? String ?? "")"
                )
            }
            return message["result"] as? [String: Any] ?? [:]
        }
    }
}
