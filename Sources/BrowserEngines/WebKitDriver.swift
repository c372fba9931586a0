import Foundation
import ProxyPlatform
import SiteAudit

/// WebKitGTK over classic WebDriver: Debian's WebKitWebDriver (`webkit2gtk-driver`) starting the MiniBrowser in
/// automation mode with a fresh session, under `xvfb-run` without a display. Its proxy is the browser's own setting
/// (MiniBrowser's `--proxy`, WebKit's custom proxy mode with no host ignored), for every host, loopback too; it
/// accepts any certificate (WebKitGTK has no per-profile trust). Classic WebDriver says little: a page is quiet once
/// its resource timing list has not grown for half a second; the cookies read are the current document's only (no
/// third-party cookie, no other path's); nothing says what WebKit refused (``reportsRefusals`` is false); the
/// document's status is the proxy's to say.
///
/// WebKitGTK's cookie storage is libsoup's, not the CFNetwork store of Safari and WKWebView: they share WebKit's
/// page loading, its third-party blocking policy and its SameSite handling (no Lax by default: a cookie without
/// SameSite is reported None), not the parser and the jar (docs/browser-differences.md).
public final class WebKitDriver: BrowserDriver {
    public var browser: Browser { .webkit }
    private let channel: any BrowserChannel
    private let process: BrowserProcess?
    private var stopped = false
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

    /// Starts the driver `driver` and a session with `options`.
    static func start(driver: String, options: DriverOptions) throws(BrowserFailure) -> WebKitDriver {
        guard options.thirdParty == .default else {
            throw BrowserFailure(
                "WebKit's third-party cookie policy cannot be set over WebDriver (it blocks them): leave"
                    + " --third-party at default for webkit")
        }
        let environment = options.environment
        let miniBrowser = try miniBrowser(environment)
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
        let process = try BrowserProcess(engine: "webkit")
        let port = freePort()
        var env = environment
        // The proxy is the browser's own setting, not the environment's: a `no_proxy` for the driver's loopback
        // connection to the browser would send a loopback site (a dev server on localhost) around the proxy too.
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "all_proxy"] {
            env[name] = nil
        }
        // WebKit's bubblewrap sandbox cannot start as root or in most containers; its pages come through the
        // local proxy.
        env["WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS"] = "1"
        try process.start(
            command[0], Array(command.dropFirst()) + ["--port=\(port)"], environment: env, descriptors: [-1, -1, -1],
            newGroup: true)
        try waitForDriver(port: port, process: process)
        let browserOptions = BrowserOptions(
            binary: miniBrowser,
            args: ["--automation", "--proxy=http://127.0.0.1:\(options.proxyPort)", "--ignore-host="])
        let driver = try WebKitDriver(
            channel: try options.channel(WebDriverChannel(port: port), .webkit), process: process,
            browserOptions: browserOptions)
        if let window = options.window {
            try? driver.command("POST", "/window/rect", ["width": window.width, "height": window.height])
        }
        return driver
    }

    /// `webkitgtk:browserOptions`: the browser the driver starts and its arguments.
    struct BrowserOptions: Codable {
        var binary: String
        var args: [String]
    }

    /// A driver over `channel` (live WebDriver requests, or a transcript with no `process`): a new session.
    init(channel: any BrowserChannel, process: BrowserProcess? = nil, browserOptions: BrowserOptions)
        throws(BrowserFailure)
    {
        (self.channel, self.process) = (channel, process)
        struct New: Encodable {
            struct Capabilities: Encodable {
                struct Match: Encodable {
                    var acceptInsecureCerts = true
                    var browserOptions: BrowserOptions
                    enum CodingKeys: String, CodingKey {
                        case acceptInsecureCerts, browserOptions = "webkitgtk:browserOptions"
                    }
                }
                var alwaysMatch: Match
            }
            var capabilities: Capabilities
        }
        struct Session: Decodable { var sessionId: String }
        session =
            try request(
                "POST", "/session", New(capabilities: .init(alwaysMatch: .init(browserOptions: browserOptions))),
                as: Session.self
            ).sessionId
    }

    deinit { stop() }

    /// Ends the browser once: the protocol's close, then the process (a replay has none: the close is in it).
    public func stop() {
        guard !stopped else { return }
        stopped = true
        let polite = { [self] in
            if !channel.closed { _ = try? request("DELETE", "/session/\(session)", as: Ignored.self) }
        }
        if let process { process.stop(polite: polite) } else { polite() }
    }

    public var isAlive: Bool { !channel.closed && !(process?.exited ?? false) }
    public var reportsRefusals: Bool { false }
    public var readsOnlyThePagesCookies: Bool { true }
    public var reportsDefaultSameSiteAsNone: Bool { true }
    public var trust: String { "WebKit accepted any certificate from the proxy (WebKitGTK has no per-profile trust)" }

    private static func freePort() -> Int {
        guard case .success(let bound) = Descriptors.listen(host: "127.0.0.1", port: 0) else { return 4444 }
        close(bound.fd)
        return bound.port
    }

    private static func waitForDriver(port: Int, process: BrowserProcess) throws(BrowserFailure) {
        for _ in 0..<200 {
            if case .success(let fd) = Descriptors.connect(host: "127.0.0.1", port: port, milliseconds: 200) {
                close(fd)
                return
            }
            if process.exited { throw BrowserFailure("WebKitWebDriver exited at start") }
            usleep(50_000)
        }
        throw BrowserFailure("WebKitWebDriver did not listen on 127.0.0.1:\(port) within 10 s")
    }

    /// A WebDriver answer: `{"value": …}`, an error's `value` being `{"error", "message"}`.
    private struct Answer<V: Decodable>: Decodable { var value: V }
    private struct Refusal: Decodable { var message: String? }

    /// One WebDriver request (`path` whole): its answer's `value` as `V`; at most `seconds` for it.
    private func request<V: Decodable>(
        _ method: String, _ path: String, _ body: (some Encodable)? = NoParameters?.none, seconds: Double = 60,
        as type: V.Type
    ) throws(BrowserFailure) -> V {
        var message = "\(method) \(path)"
        if let body {
            guard let text = encodeJSON(body) else { throw BrowserFailure("cannot encode \(method) \(path)") }
            message += " " + text
        }
        try channel.send(message)
        guard let answer = try channel.receive(until: channel.now.addingTimeInterval(seconds)) else {
            throw BrowserFailure("WebKitWebDriver did not answer \(method) \(path) in \(Int(seconds)) s")
        }
        let space = answer.firstIndex(of: " ") ?? answer.endIndex
        let status = Int(answer[..<space]) ?? 0
        let body = space < answer.endIndex ? String(answer[answer.index(after: space)...]) : ""
        guard status == 200 else {
            let why = decodeJSON(Answer<Refusal>.self, body)?.value.message ?? "status \(status)"
            throw BrowserFailure("WebKitWebDriver refused \(method) \(path): \(why)")
        }
        guard let value = decodeJSON(Answer<V>.self, body)?.value else {
            throw BrowserFailure(
                "WebKitWebDriver answered \(method) \(path) in an unexpected shape: \(body.prefix(200))")
        }
        return value
    }

    /// A command of the session (`path` after `/session/ID`), its answer not read.
    func command(_ method: String, _ path: String, _ body: (some Encodable)? = NoParameters?.none, seconds: Double = 60)
        throws(BrowserFailure)
    {
        _ = try request(method, "/session/\(session)\(path)", body, seconds: seconds, as: Ignored.self)
    }

    private struct Script: Encodable {
        var script: String
        var args: [String] = []
    }

    public func open(_ url: String, wait: Double, until ready: PageReadiness) throws(BrowserFailure) -> PageLoad {
        let end = channel.now.addingTimeInterval(wait)
        do {
            // Navigate To answers once the page has loaded (the "normal" page load strategy).
            try command("POST", "/url", ["url": url], seconds: wait)
        } catch {
            guard isAlive else { throw error }
            return PageLoad(
                status: nil, problem: "WebKit could not load the page within \(Int(wait)) s: \(error.description)")
        }
        guard ready == .quiet else { return PageLoad(status: nil, problem: nil) }
        let idle = try quiet(0.5, until: end)
        return PageLoad(
            status: nil, problem: idle ? nil : "the page's network was not idle after \(Int(wait)) s (read as it was)")
    }

    public func settle(quiet seconds: Double, wait: Double) throws(BrowserFailure) {
        _ = try quiet(seconds, until: channel.now.addingTimeInterval(wait))
    }

    /// Polls the page's resource timing entries until their count holds for `seconds`; false when `end` came first.
    private func quiet(_ seconds: Double, until end: Date) throws(BrowserFailure) -> Bool {
        var count = -1
        var since = channel.now
        while channel.now < end {
            let now =
                (try? request(
                    "POST", "/session/\(session)/execute/sync",
                    Script(script: "return performance.getEntriesByType('resource').length"), seconds: 5,
                    as: Int.self)) ?? -2
            if now != count { (count, since) = (now, channel.now) }
            if channel.now.timeIntervalSince(since) >= seconds { return true }
            channel.pause(0.1)
        }
        return false
    }

    public func evaluate(_ script: String) throws(BrowserFailure) -> String? {
        try request(
            "POST", "/session/\(session)/execute/sync", Script(script: "return (\(script));"), as: StringIfAny.self
        ).string
    }

    public func takeRefused() -> [RefusedLine] { [] }

    /// WebDriver's cookie: a host-only cookie's domain without a dot and a domain cookie's with one.
    struct Cookie: Decodable {
        var name: String
        var value: String
        var domain: String
        var path: String?
        var expiry: Double?
        var secure: Bool?
        var httpOnly: Bool?
        var sameSite: String?

        var cookie: BrowserCookie {
            BrowserCookie(
                name: name, value: value, domain: domain, path: path ?? "/", expires: expiry, secure: secure ?? false,
                httpOnly: httpOnly ?? false, sameSite: sameSite)
        }
    }

    public func cookies() throws(BrowserFailure) -> [BrowserCookie] {
        try request("GET", "/session/\(session)/cookie", as: [Cookie].self).map(\.cookie)
    }

    public func clearCookies() throws(BrowserFailure) {
        try command("DELETE", "/cookie")
    }

    public func screenshot() throws(BrowserFailure) -> Data? {
        Data(base64Encoded: try request("GET", "/session/\(session)/screenshot", as: String.self))
    }
}
