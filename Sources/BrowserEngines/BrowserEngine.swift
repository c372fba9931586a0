import CookieKit
import Foundation
import ProxyPlatform

/// A browser engine asked what it stores for one Set-Cookie line (`parse --browser`): each runs with a fresh
/// profile for the life of the value, every host name it is sent to answered by a local ``LineServer`` with that
/// one line, and what it then holds read back over its own automation protocol.
public protocol BrowserEngine: AnyObject {
    /// What the engine stores when `url` answers with `Set-Cookie: line`: nil if it stores nothing for that host.
    /// `readAt` is the path the cookie should apply to (the draft's), for an engine that can read only the cookies
    /// of the page it shows (WebKit over WebDriver); the others read the whole jar and ignore it.
    func check(_ line: String, url: RequestURL, readAt: String?) throws(BrowserFailure) -> BrowserCookie?
}

/// Why an engine could not be asked; `missing` when it is not installed (the message names what to install).
public struct BrowserFailure: Error, CustomStringConvertible {
    public let description: String
    public let missing: Bool
    public init(_ description: String, missing: Bool = false) {
        self.description = description
        self.missing = missing
    }
}

/// A cookie as an engine keeps it, in the fields `parse` reports (the draft's view is written in the same shape).
public struct BrowserCookie: Equatable, Sendable {
    public var name: String
    public var value: String
    public var domain: String
    public var hostOnly: Bool
    public var path: String
    public var secure: Bool
    public var httpOnly: Bool
    public var sameSite: String
    public var persistent: Bool

    public init(
        name: String, value: String, domain: String, hostOnly: Bool, path: String, secure: Bool, httpOnly: Bool,
        sameSite: String, persistent: Bool
    ) {
        (self.name, self.value, self.domain, self.hostOnly, self.path) = (name, value, domain, hostOnly, path)
        (self.secure, self.httpOnly, self.sameSite, self.persistent) = (secure, httpOnly, sameSite, persistent)
    }

    /// The first of the cookies an engine reports (JSON objects with a `domain`) that is one for `host`: only those
    /// count (an engine's own background requests reach the local server too, never answered with the line).
    static func first(of cookies: [[String: Any]], for host: String) -> [String: Any]? {
        cookies.first { domainMatches(host, bareDomain($0["domain"] as? String ?? "").lowercased()) }
    }

    /// A cookie as an engine reports it (the fields the three protocols share: `domain` with a leading dot for a
    /// domain cookie, `path`, `secure`, `httpOnly`), with the fields each reads its own way.
    init(reported c: [String: Any], name: String, value: String, sameSite: String, persistent: Bool) {
        let domain = c["domain"] as? String ?? ""
        self.init(
            name: name, value: value, domain: Self.bareDomain(domain), hostOnly: !domain.hasPrefix("."),
            path: c["path"] as? String ?? "/", secure: c["secure"] as? Bool ?? false,
            httpOnly: c["httpOnly"] as? Bool ?? false, sameSite: sameSite, persistent: persistent)
    }

    /// An engine's domain as the draft's fields write it: without a leading dot, an IPv6 address without brackets.
    static func bareDomain(_ domain: String) -> String {
        let d = domain.hasPrefix(".") ? String(domain.dropFirst()) : domain
        return d.hasPrefix("[") && d.hasSuffix("]") ? String(d.dropFirst().dropLast()) : d
    }

    /// The fields in which `other` differs from this one.
    public func differences(from other: BrowserCookie) -> [String] {
        [
            ("name", name == other.name), ("value", value == other.value), ("domain", domain == other.domain),
            ("hostOnly", hostOnly == other.hostOnly), ("path", path == other.path), ("secure", secure == other.secure),
            ("httpOnly", httpOnly == other.httpOnly), ("sameSite", sameSite == other.sameSite),
            ("persistent", persistent == other.persistent),
        ].filter { !$0.1 }.map(\.0)
    }
}

/// The engines `parse --browser` can ask, where each is looked for, and what to install when it is not there.
public enum Browser: String, CaseIterable, Sendable {
    case chromium, firefox, webkit

    /// The engine's name as users know it.
    public var title: String {
        switch self {
        case .chromium: "Chromium"
        case .firefox: "Firefox"
        case .webkit: "WebKit"
        }
    }

    /// The variable that names the executable instead of the searched paths.
    var variable: String { "COOKIE_PROXY_" + rawValue.uppercased() }

    var searched: [String] {
        switch self {
        case .chromium:
            [
                "/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser",
                "/usr/bin/google-chrome",
                "/Applications/Chromium.app/Contents/MacOS/Chromium",
                "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
            ]
        case .firefox:
            [
                "/usr/bin/firefox-esr", "/usr/lib/firefox-esr/firefox-esr", "/usr/bin/firefox",
                "/Applications/Firefox.app/Contents/MacOS/firefox",
            ]
        // The driver; the MiniBrowser it starts is found beside WebKitGTK's libraries (``WebKitEngine``).
        case .webkit: ["/usr/bin/WebKitWebDriver", "/usr/local/bin/WebKitWebDriver"]
        }
    }

    var package: String {
        switch self {
        case .chromium: "chromium"
        case .firefox: "firefox-esr"
        case .webkit: "webkit2gtk-driver"
        }
    }

    /// The executable: the variable's, else the first searched path that exists.
    public func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws(BrowserFailure)
        -> String
    {
        if let given = environment[variable] {
            guard FileManager.default.isExecutableFile(atPath: given) else {
                throw BrowserFailure("\(variable)=\(given) is not an executable file", missing: true)
            }
            return given
        }
        guard let found = searched.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BrowserFailure(
                "no \(title) found (looked for \(searched.joined(separator: ", "))); install it (Debian: apt-get "
                    + "install \(package)) or set \(variable) to its executable", missing: true)
        }
        return found
    }

    /// A fresh instance of the engine (started now; stopped when the value is released).
    public func start(environment: [String: String] = ProcessInfo.processInfo.environment) throws(BrowserFailure)
        -> any BrowserEngine
    {
        let binary = try locate(environment: environment)
        switch self {
        case .chromium: return try ChromiumEngine(binary: binary)
        case .firefox: return try FirefoxEngine(binary: binary)
        case .webkit: return try WebKitEngine(driver: binary, environment: environment)
        }
    }
}

/// A fresh profile folder (mode 0700) for one engine's run; removed by its owner.
func makeProfile(_ engine: String) throws(BrowserFailure) -> String {
    let path = NSTemporaryDirectory() + "cookie-proxy-\(engine)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    do {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
        throw BrowserFailure("cannot create a profile folder \(path): \(error.localizedDescription)")
    }
    return path
}

/// Ends a child: `polite` first (a close command), then SIGTERM to its group after a second, SIGKILL after five.
func stopChild(_ pid: Int32, group: Bool, polite: () -> Void = {}) {
    polite()
    let target = group ? -pid : pid
    for (wait, signal) in [(50, SIGTERM), (200, SIGKILL)] {
        for _ in 0..<wait {
            if ChildProcess.reap(pid) != nil { return }
            usleep(20_000)
        }
        kill(target, signal)
    }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
}
