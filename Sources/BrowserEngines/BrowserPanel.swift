import CookieKit
import Foundation
import SiteAudit

/// `parse --browser`: the engines asked, started once (each headless with a fresh profile) and asked for every line,
/// saying what they wait for (a browser is slow to start) through `progress`.
public final class BrowserPanel {
    /// Which engine could not be started or asked, and why.
    public struct Failure: Error {
        public let browser: Browser
        public let failure: BrowserFailure
    }

    private let probes: [(Browser, LineProbe)]

    public init(_ browsers: [Browser], progress: (String) -> Void) throws(Failure) {
        var probes: [(Browser, LineProbe)] = []
        for browser in browsers {
            progress("starting \(browser.title) (headless, a fresh profile)…")
            let started = Date()
            do {
                probes.append((browser, try LineProbe(browser, environment: ProcessInfo.processInfo.environment)))
            } catch {
                throw Failure(browser: browser, failure: error)
            }
            progress("\(browser.title) ready in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
        self.probes = probes
    }

    /// What each engine stores from `url` answering `Set-Cookie: line`, beside `draft` (what the draft keeps), read
    /// back at the draft's path.
    public func ask(_ line: String, url: RequestURL, draft: BrowserCookie?, progress: (String) -> Void)
        throws(Failure) -> [BrowserVerdict]
    {
        var verdicts: [BrowserVerdict] = []
        for (browser, probe) in probes {
            progress("asking \(browser.title) what it stores from \(url)…")
            do {
                let stored = try probe.check(line, url: url, readAt: draft?.path ?? url.defaultPath)
                verdicts.append(BrowserVerdict(browser: browser, draft: draft, stored: stored))
            } catch {
                throw Failure(browser: browser, failure: error)
            }
        }
        return verdicts
    }
}
