import CookieKit
import Foundation
import SiteAudit

/// A browser that `audit --browser` drives through the site, one consent state per instance (a fresh profile):
/// Chromium over the DevTools protocol (``ChromiumSiteSession``), Firefox over WebDriver BiDi
/// (``FirefoxSiteSession``), WebKitGTK over classic WebDriver (``WebKitSiteSession``).
public protocol SiteBrowser: AnyObject {
    /// Loads `url` and waits until its network is idle, at most `wait` seconds: the document's status (nil when
    /// none came) and why the page is incomplete.
    func visit(_ url: String, wait: Double) throws(BrowserFailure) -> (status: Int?, problem: String?)
    /// Reads events until the network has been quiet for `quiet` seconds, at most `wait` (after a click).
    func settle(quiet: Double, wait: Double) throws(BrowserFailure)
    /// A script's value, when it returns a string.
    func evaluate(_ script: String) throws(BrowserFailure) -> String?
    /// The lines the browser refused since the last call, with the response URL and the browser's reasons.
    func takeRefused() -> [(url: String, line: String, reasons: [String])]
    /// The browser's whole cookie store.
    func cookies() throws(BrowserFailure) -> [BrowserStoredCookie]
    /// A screenshot of the page (PNG).
    func screenshot() throws(BrowserFailure) -> Data?
    /// Whether the browser is still running.
    var isAlive: Bool { get }
    /// Whether ``takeRefused()`` reports what the browser refused (else the audit infers it from the store).
    var reportsRefusals: Bool { get }
    /// Whether ``cookies()`` gives only the current document's cookies (WebKit over classic WebDriver).
    var readsOnlyThePagesCookies: Bool { get }
    /// How the browser trusts the proxy's certificates, for the report.
    var trust: String { get }
}

extension SiteBrowser {
    public var reportsRefusals: Bool { true }
    public var readsOnlyThePagesCookies: Bool { false }
}

/// Third-party cookies as the audit asks: allowed, blocked, or as the browser's own default has them.
public enum ThirdPartyCookies: String, Sendable, CaseIterable {
    case `default`, allow, block
}

extension Browser {
    /// The engine as the lint's verdicts name it.
    public var verdictEngine: EngineVerdict.Engine {
        switch self {
        case .chromium: .chromium
        case .firefox: .firefox
        case .webkit: .webkit
        }
    }

    /// A fresh browser of this engine for one consent state, its traffic through the proxy on `proxyPort`, whose
    /// leaves it trusts by `pin` (Chromium), by its CA `ca` in the new profile's database (Firefox, with `certutil`),
    /// or by accepting the proxy's certificates (WebKit, and Firefox without `certutil`: every request goes to the
    /// proxy, which verifies the upstream's).
    public func siteBrowser(
        binary: String, proxyPort: Int, pin: String, thirdParty: ThirdPartyCookies, ca: String? = nil
    ) throws(BrowserFailure) -> any SiteBrowser {
        switch self {
        case .chromium:
            return try ChromiumSiteSession(binary: binary, proxyPort: proxyPort, pin: pin, thirdParty: thirdParty)
        case .firefox:
            return try FirefoxSiteSession(binary: binary, proxyPort: proxyPort, thirdParty: thirdParty, trust: ca)
        case .webkit:
            guard thirdParty == .default else {
                throw BrowserFailure(
                    "WebKit's third-party cookie policy cannot be set over WebDriver (it blocks them): leave"
                        + " --third-party at default for webkit")
            }
            return try WebKitSiteSession(
                driver: binary, proxyPort: proxyPort, environment: ProcessInfo.processInfo.environment)
        }
    }
}
