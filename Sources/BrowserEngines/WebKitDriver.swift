import Foundation
import ProxyPlatform

/// WebKitGTK driven over classic WebDriver: Debian's WebKitWebDriver (`webkit2gtk-driver`) starting the MiniBrowser
/// in automation mode with a fresh session, under `xvfb-run` without a display. Its proxy is the environment's
/// (which GLib's resolver reads: plain http in absolute form, https by `CONNECT`), for every host but loopback (the
/// driver reaches the browser over it). Owns the driver process and the profile folder.
public final class WebKitDriver {
    private let pid: Int32
    public let profile: String
    private let port: Int
    private var session = ""

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

    /// Starts the driver and a session whose every http and https request goes to the proxy on `proxyPort`.
    public init(driver: String, proxyPort: Int, environment: [String: String]) throws(BrowserFailure) {
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
        port = Self.freePort()
        var env = environment
        env["HOME"] = profile
        // The proxy is the browser's own setting (MiniBrowser's `--proxy`, WebKit's custom proxy mode with no host
        // ignored), not the environment's: a `no_proxy` for the driver's loopback connection to the browser would
        // send a loopback site (a dev server on localhost) around the proxy too.
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "all_proxy"] {
            env[name] = nil
        }
        // WebKit's bubblewrap sandbox cannot start as root or in most containers; its pages come through the
        // local proxy.
        env["WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS"] = "1"
        do {
            pid = try ChildProcess.spawn(
                command[0], Array(command.dropFirst()) + ["--port=\(port)"], environment: env,
                descriptors: [-1, -1, -1], newGroup: true)
        } catch {
            try? FileManager.default.removeItem(atPath: profile)
            throw BrowserFailure(error.description)
        }
        do throws(BrowserFailure) {
            try waitForDriver()
            let capabilities: [String: Any] = [
                "acceptInsecureCerts": true,
                "webkitgtk:browserOptions": [
                    "binary": browser,
                    "args": ["--automation", "--proxy=http://127.0.0.1:\(proxyPort)", "--ignore-host="],
                ],
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
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Whether the driver process has ended.
    public var exited: Bool { kill(pid, 0) != 0 }

    /// A command of the session (`path` after `/session/ID`): its `value`; at most `seconds` for the answer.
    @discardableResult
    public func command(_ method: String, _ path: String, _ body: [String: Any]? = nil, seconds: Double = 60)
        throws(BrowserFailure) -> Any?
    {
        try call(method, "/session/\(session)\(path)", body, seconds: seconds)
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

    /// One WebDriver request: its `value`.
    private func call(_ method: String, _ path: String, _ body: [String: Any]?, seconds: Double = 60)
        throws(BrowserFailure) -> Any?
    {
        let data = body.flatMap { try? JSONSerialization.data(withJSONObject: $0) } ?? Data()
        var request = Array(
            ("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(data.count)\r\nConnection: close\r\n\r\n").utf8)
        request += data
        // The driver keeps the connection open after its answer: read to the end of its Content-Length.
        let answer: (status: Int, body: ArraySlice<UInt8>)
        switch LoopbackClient.exchange(
            host: "127.0.0.1", port: port, request: request, milliseconds: Int(seconds * 1000))
        {
        case .success(let a): answer = a
        case .failure(let error): throw BrowserFailure("WebKitWebDriver: \(method) \(path): \(error)")
        }
        let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
        guard answer.status == 200 else {
            let message = (object?["value"] as? [String: Any])?["message"] as? String ?? "status \(answer.status)"
            throw BrowserFailure("WebKitWebDriver refused \(method) \(path): \(message)")
        }
        return object?["value"]
    }
}
