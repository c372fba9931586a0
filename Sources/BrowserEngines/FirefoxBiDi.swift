import Foundation
import ProxyPlatform

/// A headless Firefox with a fresh profile (its `user.js` written from `prefs` first), driven over WebDriver BiDi,
/// which Firefox serves itself (`--remote-debugging-port=0`: the address it listens on is read from its standard
/// error; no geckodriver). Events that arrive while a reply is awaited are kept in order for ``nextEvent(until:)``.
/// Owns the process and its profile: both go when the value is released.
public final class FirefoxBiDi {
    private let pid: Int32
    public let profile: String
    private let socket: WebSocketClient
    private var nextID = 0
    private var events: [[String: Any]] = []
    private var reaped = false

    /// The preferences every run needs (no first-run pages, updates, telemetry or background requests).
    static let quiet: [(String, String)] = [
        ("browser.shell.checkDefaultBrowser", "false"), ("datareporting.policy.dataSubmissionEnabled", "false"),
        ("toolkit.telemetry.reportingpolicy.firstRun", "false"),
        ("browser.startup.homepage_override.mstone", "\"ignore\""), ("app.update.enabled", "false"),
        ("network.captive-portal-service.enabled", "false"), ("network.connectivity-service.enabled", "false"),
        ("browser.safebrowsing.malware.enabled", "false"), ("browser.safebrowsing.phishing.enabled", "false"),
        ("network.dns.disablePrefetch", "true"), ("network.prefetch-next", "false"),
        ("extensions.update.enabled", "false"),
        // The browser's own traffic off (telemetry, remote settings, experiments, sign-in, push, safe-browsing
        // lists, captive-portal and region checks): it would go through the audit's proxy beside the site's.
        ("toolkit.telemetry.enabled", "false"), ("toolkit.telemetry.unified", "false"),
        ("datareporting.healthreport.uploadEnabled", "false"), ("browser.ping-centre.telemetry", "false"),
        ("app.normandy.enabled", "false"), ("app.shield.optoutstudies.enabled", "false"),
        ("messaging-system.rsexperimentloader.enabled", "false"), ("identity.fxaccounts.enabled", "false"),
        ("services.settings.server", "\"data:,#remote-settings-off\""), ("dom.push.connection.enabled", "false"),
        ("browser.safebrowsing.downloads.remote.enabled", "false"),
        ("browser.safebrowsing.provider.google4.updateURL", "\"\""),
        ("browser.safebrowsing.provider.mozilla.updateURL", "\"\""), ("browser.region.update.enabled", "false"),
        ("browser.search.update", "false"), ("media.gmp-manager.updateEnabled", "false"),
        ("extensions.getAddons.cache.enabled", "false"), ("browser.newtabpage.enabled", "false"),
        ("browser.discovery.enabled", "false"), ("network.trr.mode", "5"),
    ]

    /// Proxy preferences: every http and https request (loopback hosts too) through `host:port`.
    static func proxy(host: String, port: Int) -> [(String, String)] {
        [
            ("network.proxy.type", "1"), ("network.proxy.http", "\"\(host)\""), ("network.proxy.http_port", "\(port)"),
            ("network.proxy.ssl", "\"\(host)\""), ("network.proxy.ssl_port", "\(port)"),
            ("network.proxy.no_proxies_on", "\"\""), ("network.proxy.allow_hijacking_localhost", "true"),
        ]
    }

    /// Whether the session accepts any certificate (`acceptInsecureCerts`): when no CA was given, or the profile's
    /// NSS database could not be made to trust it (no `certutil`).
    public private(set) var acceptsAnyCertificate = true

    /// Starts `binary` with `prefs` (values as JavaScript literals) and opens a BiDi session. `trust`: a CA (PEM) the
    /// new profile's own certificate database trusts for websites (with NSS's `certutil`; the user's profiles are
    /// never touched); without it, or without `certutil`, the session accepts every certificate
    /// (`acceptInsecureCerts`: every https request goes to the local proxy, which verifies the upstream's).
    public init(binary: String, prefs: [(String, String)], arguments: [String] = [], trust: String? = nil)
        throws(BrowserFailure)
    {
        profile = try makeProfile("firefox")
        let userJS = (Self.quiet + prefs).map { "user_pref(\"\($0.0)\", \($0.1));\n" }.joined()
        guard FileManager.default.createFile(atPath: profile + "/user.js", contents: Data(userJS.utf8)) else {
            try? FileManager.default.removeItem(atPath: profile)
            throw BrowserFailure("cannot write \(profile)/user.js")
        }
        if let trust,
            let certutil = ["/usr/bin/certutil", "/usr/local/bin/certutil"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        {
            // The profile's cert9.db, made before Firefox first opens it, with the CA trusted for TLS servers ("C").
            let made = (try? ChildProcess.run(certutil, ["-N", "-d", "sql:" + profile, "--empty-password"]))?.status
            let added =
                (try? ChildProcess.run(
                    certutil,
                    ["-A", "-n", "cookie-proxy audit (throwaway)", "-t", "C,,", "-i", trust, "-d", "sql:" + profile]))?
                .status
            acceptsAnyCertificate = !(made == 0 && added == 0)
        }
        let errors: (read: Int32, write: Int32)
        do { errors = try ChildProcess.pipe() } catch { throw BrowserFailure(error.description) }
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = profile
        env["MOZ_CRASHREPORTER_DISABLE"] = "1"
        do {
            pid = try ChildProcess.spawn(
                binary, ["--headless", "--no-remote", "--profile", profile, "--remote-debugging-port=0"] + arguments,
                environment: env, descriptors: [-1, -1, errors.write], newGroup: true)
        } catch {
            close(errors.read)
            close(errors.write)
            try? FileManager.default.removeItem(atPath: profile)
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
        } catch {
            stopChild(pid, group: true)
            try? FileManager.default.removeItem(atPath: profile)
            throw error
        }
        do {
            try call("session.new", ["capabilities": ["alwaysMatch": ["acceptInsecureCerts": acceptsAnyCertificate]]])
        } catch {
            stopChild(pid, group: true)
            try? FileManager.default.removeItem(atPath: profile)
            throw error
        }
    }

    deinit {
        if !reaped { stopChild(pid, group: true) { _ = try? call("session.end", seconds: 5) } }
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Whether the browser process has ended.
    public var exited: Bool {
        if !reaped, ChildProcess.reap(pid) != nil { reaped = true }
        return reaped
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

    /// Sends a command and waits at most `seconds` for its result; Firefox's error as a ``BrowserFailure``.
    @discardableResult
    public func call(_ method: String, _ params: [String: Any] = [:], seconds: Double = 20) throws(BrowserFailure)
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
            guard let message = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                continue
            }
            if message["type"] as? String == "event" {
                events.append(message)
                continue
            }
            guard message["id"] as? Int == id else { continue }
            if message["type"] as? String == "error" {
                throw BrowserFailure(
                    "Firefox refused \(method): \(message["error"] as? String ?? "") \(message["message"] as? String ?? "")"
                )
            }
            return message["result"] as? [String: Any] ?? [:]
        }
    }

    /// The browsing context of the window Firefox opened (the one tab of a fresh profile).
    public func topContext() throws(BrowserFailure) -> String {
        let tree = try call("browsingContext.getTree")
        return ((tree["contexts"] as? [[String: Any]])?.first?["context"] as? String) ?? ""
    }

    /// BiDi's `network.SameSite` (`strict`, `lax`, `none`) as the reports write it; nil for anything else.
    static func sameSite(_ value: Any?) -> String? {
        ["strict": "Strict", "lax": "Lax", "none": "None"][value as? String ?? ""]
    }

    /// The next event, kept or read; nil when none came by `deadline`.
    public func nextEvent(until deadline: Date) throws(BrowserFailure) -> [String: Any]? {
        if !events.isEmpty { return events.removeFirst() }
        while deadline > Date() {
            let text: String
            do {
                text = try socket.receive(until: deadline)
            } catch {
                if exited { throw error }
                return nil
            }
            if let message = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                message["type"] as? String == "event"
            {
                return message
            }
        }
        return nil
    }
}
