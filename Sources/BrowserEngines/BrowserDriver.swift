import CookieKit
import Foundation
import SiteAudit

/// One browser driven for its cookies over its own automation protocol: Chromium over the DevTools protocol
/// (``ChromiumDriver``), Firefox over WebDriver BiDi (``FirefoxDriver``), WebKitGTK over classic WebDriver
/// (``WebKitDriver``). One driver per browser serves both `parse --browser` (``LineProbe``: what it stores for one
/// line) and `audit --browser` (a site's pages in one consent state). Each starts with a fresh profile whose every
/// request goes to a proxy (``DriverOptions``), owns its process and profile (``BrowserProcess``), and speaks
/// through a ``BrowserChannel`` — the live browser's, or a recorded transcript's, which is how BrowserEnginesTests
/// test each driver without a browser.
public protocol BrowserDriver: AnyObject {
    /// The engine.
    var browser: Browser { get }
    /// Loads `url`, waiting at most `wait` seconds until it is `ready`: the document's status (nil when none came,
    /// or the protocol does not say) and why the page is incomplete (a navigation error, not ready in time).
    /// Throws only when the browser cannot be asked any more.
    func open(_ url: String, wait: Double, until ready: PageReadiness) throws(BrowserFailure) -> PageLoad
    /// Reads the page's network until it has been quiet for `quiet` seconds, at most `wait` (after a click).
    func settle(quiet: Double, wait: Double) throws(BrowserFailure)
    /// A script's value, when it returns a string (a click is a script: `element.click()`).
    func evaluate(_ script: String) throws(BrowserFailure) -> String?
    /// The browser's cookie store, each cookie with its partition (the current document's cookies only when
    /// ``readsOnlyThePagesCookies``).
    func cookies() throws(BrowserFailure) -> [BrowserCookie]
    /// Empties the store (the current document's cookies only when ``readsOnlyThePagesCookies``).
    func clearCookies() throws(BrowserFailure)
    /// The lines the browser refused since the last call, in its words (empty when ``reportsRefusals`` is false).
    func takeRefused() -> [RefusedLine]
    /// A screenshot of the page (PNG).
    func screenshot() throws(BrowserFailure) -> Data?
    /// Ends the browser (once; also when the driver is released).
    func stop()
    /// Whether the browser is still running.
    var isAlive: Bool { get }
    /// Whether ``takeRefused()`` reports what the browser refused (else a refusal is found by its absence).
    var reportsRefusals: Bool { get }
    /// Whether ``cookies()`` gives only the current document's cookies (WebKit over classic WebDriver).
    var readsOnlyThePagesCookies: Bool { get }
    /// Whether a cookie set without SameSite is reported as `None` (WebKit), not without one.
    var reportsDefaultSameSiteAsNone: Bool { get }
    /// How the browser trusts the proxy's certificates, for the report.
    var trust: String { get }
}

extension BrowserDriver {
    public var reportsRefusals: Bool { true }
    public var readsOnlyThePagesCookies: Bool { false }
    public var reportsDefaultSameSiteAsNone: Bool { false }
}

/// A line the browser refused: the URL of the response it came in, the line, the browser's reasons.
public typealias RefusedLine = (url: String, line: String, reasons: [String])

/// When a page counts as loaded: its load event (`parse`: one document), or its network quiet (`audit`: a page's
/// scripts set cookies after the load).
public enum PageReadiness: Sendable {
    case loaded, quiet
}

/// What loading a page gave: the document's status, and why the page is incomplete.
public struct PageLoad: Sendable, Equatable {
    public var status: Int?
    public var problem: String?
    public init(status: Int?, problem: String?) { (self.status, self.problem) = (status, problem) }
}

/// Third-party cookies as the audit asks: allowed, blocked, or as the browser's own default has them.
public enum ThirdPartyCookies: String, Sendable, CaseIterable {
    case `default`, allow, block
}

/// How a driver starts its browser: every http and https request (loopback hosts too) to the proxy on
/// `127.0.0.1:proxyPort`, whose certificates it trusts by `pin` (Chromium: the base64 SHA-256 of the leaf key), by
/// the CA at `authority` in the new profile's database (Firefox, with NSS's `certutil`), or else by accepting any
/// certificate (WebKit; `parse --browser`'s throwaway server): the proxy verifies the upstream's.
public struct DriverOptions: Sendable {
    public var proxyPort: Int
    public var pin: String?
    public var authority: String?
    public var thirdParty: ThirdPartyCookies
    /// The window's size (a page's layout decides which consent banner shows).
    public var window: (width: Int, height: Int)?
    public var environment: [String: String]
    /// A folder where each driver writes its transcript (``RecordingChannel``): `COOKIE_PROXY_BROWSER_TRANSCRIPTS`.
    public var transcripts: String?

    public init(
        proxyPort: Int, pin: String? = nil, authority: String? = nil, thirdParty: ThirdPartyCookies = .default,
        window: (width: Int, height: Int)? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        (self.proxyPort, self.pin, self.authority, self.thirdParty) = (proxyPort, pin, authority, thirdParty)
        (self.window, self.environment) = (window, environment)
        transcripts = environment["COOKIE_PROXY_BROWSER_TRANSCRIPTS"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The channel as the driver uses it: recorded when asked.
    func channel(_ channel: any BrowserChannel, _ browser: Browser) throws(BrowserFailure) -> any BrowserChannel {
        guard let folder = transcripts else { return channel }
        let name = "\(browser.rawValue)-\(getpid())-\(Int(Date().timeIntervalSince1970 * 1000) % 100_000_000)"
        return try RecordingChannel(channel, to: "\(folder)/\(name).transcript")
    }
}

/// Why a browser could not be asked; `missing` when it is not installed (the message names what to install).
public struct BrowserFailure: Error, CustomStringConvertible {
    public let description: String
    public let missing: Bool
    public init(_ description: String, missing: Bool = false) {
        self.description = description
        self.missing = missing
    }
}

/// The engines, where each is looked for, and what to install when it is not there.
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

    /// The engine as the lint's verdicts name it.
    public var verdictEngine: EngineVerdict.Engine {
        switch self {
        case .chromium: .chromium
        case .firefox: .firefox
        case .webkit: .webkit
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
        // The driver; the MiniBrowser it starts is found beside WebKitGTK's libraries (``WebKitDriver``).
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

    /// A fresh browser of this engine (`binary`, from ``locate(environment:)``), started now with `options`.
    public func start(binary: String, options: DriverOptions) throws(BrowserFailure) -> any BrowserDriver {
        switch self {
        case .chromium: return try ChromiumDriver.start(binary: binary, options: options)
        case .firefox: return try FirefoxDriver.start(binary: binary, options: options)
        case .webkit: return try WebKitDriver.start(driver: binary, options: options)
        }
    }
}
