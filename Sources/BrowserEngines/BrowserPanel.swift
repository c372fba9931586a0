import CookieKit
import Foundation

/// `parse --browser`: the engines asked, started once (each headless with a fresh profile) and asked for every line,
/// saying what they wait for (a browser is slow to start) through `progress`.
public final class BrowserPanel {
    /// Which engine could not be started or asked, and why.
    public struct Failure: Error {
        public let browser: Browser
        public let failure: BrowserFailure
    }

    private let engines: [(Browser, any BrowserEngine)]

    public init(_ browsers: [Browser], progress: (String) -> Void) throws(Failure) {
        var engines: [(Browser, any BrowserEngine)] = []
        for browser in browsers {
            progress("starting \(browser.title) (headless, a fresh profile)…")
            let started = Date()
            do {
                engines.append((browser, try browser.start()))
            } catch {
                throw Failure(browser: browser, failure: error)
            }
            progress("\(browser.title) ready in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
        self.engines = engines
    }

    /// What each engine stores from `url` answering `Set-Cookie: line`, beside `draft` (what the draft keeps), read
    /// back at the draft's path.
    public func ask(_ line: String, url: RequestURL, draft: BrowserCookie?, progress: (String) -> Void)
        throws(Failure) -> [BrowserVerdict]
    {
        var verdicts: [BrowserVerdict] = []
        for (browser, engine) in engines {
            progress("asking \(browser.title) what it stores from \(url)…")
            do {
                let stored = try engine.check(line, url: url, readAt: draft?.path ?? url.defaultPath)
                verdicts.append(BrowserVerdict(browser: browser, draft: draft, stored: stored))
            } catch {
                throw Failure(browser: browser, failure: error)
            }
        }
        return verdicts
    }
}
