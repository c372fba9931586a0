import BrowserEngines
import BuildVersion
import CookieInspector
import CookieRules
import CookieKit
import ExchangeFacts
import Foundation
import JSONStream
import Locking
import ProxyApp
import ProxyPlatform
import ProxyTLS
import SiteAudit
import Terminal

/// `cookie-proxy audit URL --browser chromium`: the site as its visitors' browsers see it. The proxy is started in
/// this process (intercepting every https host with a CA made for the run in a folder of its own, removed after),
/// and a headless Chromium browses through it: in each consent state a fresh profile, the start page and then the
/// same-site links a seed picks, each page waited for until its network is idle. The proxy's observer records every
/// Set-Cookie line relayed (`http`); what the browser's store holds with no line behind it was set by a script.
public enum SiteAuditRun {
    /// ``run(engines:_:out:progress:)`` on a thread of its own while this one waits for it or for SIGINT/SIGTERM,
    /// which stop it after the page in hand (the browsers and the proxy are stopped, and what was visited is
    /// reported); its progress on standard error (``ProgressBar``, redrawn in place on a terminal). The outcome, and
    /// whether a signal cut it short.
    public static func runInForeground(
        engines: [Browser], _ options: Options, out: String?, terminal: Bool
    ) -> (outcome: Outcome, interrupted: Bool) {
        inForeground(options, terminal: terminal) { options, bar in
            run(engines: engines, options, out: out, progress: bar.show)
        }
    }

    /// `body` on a thread of its own with `options` whose `cancelled` turns true on SIGINT or SIGTERM, while this
    /// one waits for it or for the signals (its progress drawn by the ``ProgressBar`` it is given). What it
    /// returned, and whether a signal cut it short.
    static func inForeground<T: Sendable>(
        _ options: Options, terminal: Bool, _ body: @escaping @Sendable (Options, ProgressBar) -> T
    ) -> (outcome: T, interrupted: Bool) {
        var signals = BlockedSignals([SIGINT, SIGTERM])
        let stop = Locked(false)
        let done = Locked<T?>(nil)
        var options = options
        options.cancelled = { stop.withLock { $0 } }
        let bar = ProgressBar(terminal: terminal)
        let worker = Thread { [options] in
            let outcome = body(options, bar)
            done.withLock { $0 = outcome }
        }
        worker.start()
        var interrupted = false
        while done.withLock({ $0 == nil }) {
            if signals.wait(milliseconds: 100) != 0, !interrupted {
                interrupted = true
                stop.withLock { $0 = true }
                Console.err("interrupted: stopping after the page in hand; the pages visited are reported")
            }
        }
        bar.finish()
        return (done.withLock { $0! }, interrupted)
    }

    public struct Options: Sendable {
        public var url: String
        public var pages = 10
        public var seed: UInt64 = 1
        public var wait: Double = 10
        public var states: [ConsentState] = ConsentState.allCases
        public var acceptSelector: String? = nil
        public var rejectSelector: String? = nil
        public var resolve: [String: String] = [:]
        public var upstreamCAFile: String? = nil
        public var insecureHosts: Set<String> = []
        /// The browser engine that visits the pages.
        public var engine = Browser.chromium
        public var thirdParty = ThirdPartyCookies.default
        /// `--rules`: a second pass through a proxy that applies them (the path names them in the report).
        public var rules: (path: String, set: RuleSet)? = nil
        /// The site's declared cookies (`--policy`).
        public var policy: CookiePolicy? = nil
        /// Asked between pages: true stops the audit there (an interrupt), and the pages visited are reported.
        public var cancelled: @Sendable () -> Bool = { false }
        /// `--parallel`: above 1, the consent states are visited at once (a browser and a proxy each).
        public var parallel = 1
        /// Screenshots of each page go here (`--out`), when set.
        public var screenshots: String? = nil
        /// `--sitemap`: the pages are the site's sitemaps' (robots.txt's `Sitemap:` lines, else /sitemap.xml), not
        /// its links.
        public var sitemap = false
        /// `--baseline`: an earlier run's cookies, compared with this run's site by site.
        public var baseline: AuditSnapshot? = nil
        public init(url: String) { self.url = url }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Where the audit is: the pass (`rules` for the second), the state, the page's number of `pages`, its URL;
    /// or a message (the browser ended).
    public struct Progress: Sendable {
        public var pass: String
        public var state: ConsentState
        public var page: Int
        public var pages: Int
        public var url: String
        public var message: String? = nil

        /// As a line: `[rules-none] page 2/10: URL`.
        public var line: String {
            let tag = "[\(pass.isEmpty ? "" : pass + "-")\(state.rawValue)]"
            return message.map { "\(tag) \($0)" } ?? "\(tag) page \(page)/\(pages): \(url)"
        }
    }

    /// Runs the audit; `progress` is told a line per page. Throws only when nothing could be scanned (no browser,
    /// no proxy, not an http(s) URL); a page or state that fails is reported in the scan. With `rules`, the same
    /// pages are visited again through a proxy that applies them, and the scan says what they changed.
    public static func run(_ o: Options, progress: @escaping @Sendable (Progress) -> Void) throws(Failure) -> SiteScan {
        guard let start = RequestURL(o.url), start.scheme == "http" || start.scheme == "https" else {
            throw Failure(description: "'\(o.url)' is not an http:// or https:// URL")
        }
        let binary: String
        do {
            binary = try o.engine.locate()
        } catch {
            throw Failure(description: error.description)
        }
        // One folder for both passes: one throwaway CA, and one key for the values the HAR files redact (a value
        // reads the same in both).
        let home = NSTemporaryDirectory() + "cookie-proxy-audit-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(
                atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw Failure(description: "cannot create \(home): \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(atPath: home) }
        func report(_ visited: (outcomes: [ConsentOutcome], visits: [PageVisit], pages: [String], trust: [String]))
            -> SiteScan
        {
            var scan = SiteScan.build(
                engine: o.engine.rawValue, start: o.url, seed: o.seed, states: visited.outcomes,
                visits: visited.visits, policy: o.policy)
            scan.thirdParty = o.thirdParty.rawValue
            scan.notes = visited.trust + notes(o.engine)
            return scan
        }
        let before = try pass(o, binary: binary, home: home, rules: nil, pages: [], label: "", progress: progress)
        var scan = report(before)
        if let rules = o.rules, !o.cancelled() {
            let after = try pass(
                o, binary: binary, home: home, rules: rules.set, pages: before.pages, label: "rules", progress: progress
            )
            scan.rules = RulesComparison(path: rules.path, before: scan, after: report(after))
        }
        // A run that reached no page has nothing to compare: its cookies would all read as gone.
        if let baseline = o.baseline, let site = FleetList.site(of: o.url)?.site, scan.pages.contains(where: \.reached)
        {
            let visited = baseline.states(of: site)
            scan.baseline = BaselineComparison(
                from: baseline.path, before: baseline.cookies(of: site), after: scan.cookies.map(RecordedCookie.init),
                states: visited.isEmpty ? nil : (visited, scan.states.map(\.state.rawValue)))
        }
        return scan
    }

    /// What `audit --browser` with one or more engines found: each engine's scan, in order, and the errors of the
    /// engines that could not scan at all.
    public struct Outcome: Sendable {
        public var scans: [SiteScan]
        public var errors: [String]

        /// Some page of some engine was reached.
        public var reachedAny: Bool { scans.contains { $0.pages.contains(where: \.reached) } }

        /// The report in `format` (text, json, junit, sarif); several engines as one object (json) or one after
        /// the other (text), with the side-by-side comparison.
        /// Text is escaped for a terminal (``TerminalText``); the other formats for their own syntax.
        public func report(format: String) -> String {
            guard scans.count > 1 else {
                guard let scan = scans.first else { return "" }
                switch format {
                case "json": return scan.json.serialized
                case "junit": return scan.junit
                case "sarif":
                    return scan.sarif(
                        toolVersion: cookieProxyBuildVersion, time: Int64(Date().timeIntervalSince1970 * 1000))
                default: return scan.text.text
                }
            }
            let sideBySide = EngineComparison(scans)
            if format == "json" {
                return JSONValue.object([
                    ("engines", .object(scans.map { ($0.engine, $0.json) })), ("sideBySide", sideBySide.json),
                ]).serialized
            }
            return (scans.map(\.text).joined(separator: "\n") + "\n" + sideBySide.text).text
        }

        /// What `--fail-on` fails on, a line each (named by engine when there are several).
        public func failures(of kinds: Set<String>) -> [String] {
            scans.flatMap { s in s.failures(of: kinds).map { scans.count > 1 ? "(\(s.engine)) \($0)" : $0 } }
        }
    }

    /// `--policy FILE` read: a policy error says `file:line:column` with the line and a caret (``PolicyError``); a
    /// file that cannot be read says why (``PolicyReadError``).
    public static func policy(file path: String) throws -> CookiePolicy {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw PolicyReadError(description: "error: cannot read \(path): \(error.localizedDescription)")
        }
        return try CookiePolicy(text: text, file: path)
    }

    public struct PolicyReadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs the audit with each engine in turn on the same options; with `out`, each engine's evidence goes there
    /// (in a folder per engine when there are several). `progress` is told each step, with the engine's name when
    /// there are several.
    public static func run(
        engines: [Browser], _ o: Options, out: String?, progress: @escaping @Sendable (Progress, String?) -> Void
    ) -> Outcome {
        var outcome = Outcome(scans: [], errors: [])
        for engine in engines where !o.cancelled() {
            var one = o
            one.engine = engine
            if let out, engines.count > 1 {
                one.screenshots = "\(out)/\(engine.rawValue)"
                try? FileManager.default.createDirectory(
                    atPath: "\(out)/\(engine.rawValue)", withIntermediateDirectories: true)
            }
            do {
                let scan = try run(one) { progress($0, engines.count > 1 ? engine.rawValue : nil) }
                if let folder = one.screenshots { try writeEvidence(scan, to: folder) }
                outcome.scans.append(scan)
            } catch {
                outcome.errors.append("\(engine.title): \(error.description)")
            }
        }
        if let out, engines.count > 1, outcome.scans.count > 1 {
            do {
                try writeComparison(outcome, start: o.url, to: out)
            } catch {
                outcome.errors.append(error.description)
            }
        }
        return outcome
    }

    /// What an engine's report cannot show.
    static func notes(_ engine: Browser) -> [String] {
        switch engine {
        case .chromium: []
        case .firefox:
            [
                "Firefox says nothing over WebDriver BiDi about the lines it refuses: a refused line is one whose cookie"
                    + " is missing from its store (not-in-store); partitions are not reported"
            ]
        case .webkit:
            [
                "WebKit over classic WebDriver shows only the current page's cookies: third-party cookies and other"
                    + " paths' are not listed, and a refused line is one of the page's host missing from them"
            ]
        }
    }

}
