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

    /// `--browser all --out DIR`: beside each engine's folder, the side by side as `report.json` (every engine's
    /// report and the comparison, as `--format json` prints it), `report.txt` and `report.html`, and a
    /// `manifest.json` over every file of the folder, the engines' folders' included (their paths relative to it).
    static func writeComparison(_ outcome: Outcome, start: String, to folder: String) throws(Failure) {
        do {
            try Data(outcome.report(format: "json").utf8).write(to: URL(fileURLWithPath: "\(folder)/report.json"))
            try Data(outcome.report(format: "text").utf8).write(to: URL(fileURLWithPath: "\(folder)/report.txt"))
            let html = EngineComparison(outcome.scans).html(start: start, engines: outcome.scans.map(\.engine))
            try Data(html.utf8).write(to: URL(fileURLWithPath: "\(folder)/report.html"))
            try writeManifest(folder, recursive: true)
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure(description: "cannot write the side by side in \(folder): \(error.localizedDescription)")
        }
    }

    /// `manifest.json` in `folder`: the SHA-256 and size of every other file in it (and, `recursive`, in its
    /// folders, by relative path), in name order.
    static func writeManifest(_ folder: String, recursive: Bool) throws {
        var names: [String] = []
        if recursive {
            let walker = FileManager.default.enumerator(atPath: folder)
            while let name = walker?.nextObject() as? String {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: "\(folder)/\(name)", isDirectory: &isDirectory),
                    !isDirectory.boolValue, name != "manifest.json"
                {
                    names.append(name)
                }
            }
        } else {
            names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0 != "manifest.json" }
        }
        var files: [(String, JSONValue)] = []
        for name in names.sorted() {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(name)")))
            files.append(
                (
                    name,
                    .object([
                        ("sha256", .string(String(decoding: LogKey.hex(sha256(bytes)), as: UTF8.self))),
                        ("bytes", .int(Int64(bytes.count))),
                    ])
                ))
        }
        let manifest = JSONValue.object([("files", .object(files))])
        try Data(manifest.serialized.utf8).write(to: URL(fileURLWithPath: "\(folder)/manifest.json"))
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

    /// One pass over the site: a proxy (with `rules`, if any) and, per consent state, a fresh browser visiting
    /// `pages` (the first pass picks them: empty). `label` prefixes its evidence files and progress lines. With
    /// `parallel` above 1, the states are visited at once, each through a proxy of its own (its lines are its
    /// own): the first state picks the pages as it goes and the others follow it; each state's log and access log
    /// are joined into the pass's files afterwards, in the states' order, as one proxy would have written them.
    static func pass(
        _ o: Options, binary: String, home: String, rules: RuleSet?, pages: [String], label: String,
        progress: @escaping @Sendable (Progress) -> Void
    ) throws(Failure) -> (outcomes: [ConsentOutcome], visits: [PageVisit], pages: [String], trust: [String]) {
        // The audited site's registrable domain: a browser service under it is the site (``BrowserTraffic``).
        let siteDomain =
            RequestURL(o.url).map { PublicSuffixList.system.registrableDomain(of: $0.host) ?? $0.host } ?? ""
        let prefix = label.isEmpty ? "" : label + "-"
        let states = o.states
        let atOnce = o.parallel > 1 && states.count > 1
        var proxies: [RunningProxy] = []
        var facts: [PassProxy] = []
        defer { for p in proxies { p.stop(drain: 0) } }
        for state in atOnce ? states : [states.first ?? .none] {
            let started = try startProxy(
                o, home: home, rules: rules, siteDomain: siteDomain,
                files: o.screenshots.map { ($0, prefix + (atOnce ? "\(state.rawValue)-" : "")) })
            proxies.append(started.proxy)
            facts.append(started.facts)
        }
        var recorded: UInt64 = 0
        let list = PageList(pages)
        var trust: [String] = []
        var sitemapPages: [String]? = nil
        if o.sitemap, pages.isEmpty, !o.cancelled() {
            let first = facts[0]
            let found = sitemap(o, binary: binary, options: options(first, thirdParty: o.thirdParty))
            sitemapPages = found.pages
            trust.append(found.note)
            // What the sitemaps' responses set is not a page's: their lines are dropped with the throwaway profile.
            _ = first.lines.take()
        }
        var results: [(outcome: ConsentOutcome, visits: [PageVisit], trust: String?)] = []
        if atOnce {
            let held = Locked<[Int: (outcome: ConsentOutcome, visits: [PageVisit], trust: String?)]>([:])
            let done = DispatchSemaphore(value: 0)
            for (i, state) in states.enumerated() {
                let proxy = facts[i]
                let picks = sitemapPages
                Thread {
                    let result = visit(
                        state, o, binary: binary, via: proxy, list: list, picking: i == 0 && pages.isEmpty,
                        atOnce: true, sitemapPages: picks, label: label, siteDomain: siteDomain, progress: progress)
                    held.withLock { $0[i] = result }
                    done.signal()
                }.start()
            }
            for _ in states { done.wait() }
            results = held.withLock { r in states.indices.compactMap { r[$0] } }
        } else {
            for state in states where !o.cancelled() {
                results.append(
                    visit(
                        state, o, binary: binary, via: facts[0], list: list, picking: list.isEmpty, atOnce: false,
                        sitemapPages: sitemapPages, label: label, siteDomain: siteDomain, progress: progress))
                if let folder = o.screenshots {
                    // The state's exchanges as the proxy saw them (values redacted as in the log).
                    let (bytes, last) = proxies[0].har(after: recorded, version: cookieProxyBuildVersion)
                    recorded = last
                    try? Data(bytes).write(to: URL(fileURLWithPath: "\(folder)/\(prefix)scan-\(state.rawValue).har"))
                }
            }
        }
        if atOnce, let folder = o.screenshots {
            for (i, state) in states.enumerated() {
                let (bytes, _) = proxies[i].har(after: 0, version: cookieProxyBuildVersion)
                try? Data(bytes).write(to: URL(fileURLWithPath: "\(folder)/\(prefix)scan-\(state.rawValue).har"))
            }
            // The logs are whole once their proxies have stopped: then joined in the states' order.
            for p in proxies { p.stop(drain: 0) }
            proxies = []
            for name in ["proxy-log.jsonl", "access.jsonl"] {
                join(states.map { "\(folder)/\(prefix)\($0.rawValue)-\(name)" }, into: "\(folder)/\(prefix)\(name)")
            }
        }
        for r in results { if let t = r.trust, !trust.contains(t) { trust.append(t) } }
        return (results.map { $0.outcome }, results.flatMap { $0.visits }, list.pages, trust)
    }

    /// `parts` appended to `file` in order, and removed (a part that is missing is skipped).
    static func join(_ parts: [String], into file: String) {
        var whole = Data()
        for part in parts {
            guard let data = FileManager.default.contents(atPath: part) else { continue }
            whole.append(data)
            try? FileManager.default.removeItem(atPath: part)
        }
        try? whole.write(to: URL(fileURLWithPath: file))
    }

    /// What a state's browser needs of its proxy: the recorder of the lines it relays, the pin of its leaves' key,
    /// its port, its CA.
    struct PassProxy: Sendable {
        let lines: LineRecorder
        let pin: String
        let port: Int
        /// The throwaway CA's certificate (a browser that trusts by its trust store: Firefox).
        let authority: String?
    }

    /// Starts a proxy intercepting every https host, as the audit's browsers go through it. `files`: the evidence
    /// folder and the prefix of its log's and access log's names, when evidence is asked for.
    static func startProxy(
        _ o: Options, home: String, rules: RuleSet?, siteDomain: String, files: (folder: String, prefix: String)?
    ) throws(Failure) -> (proxy: RunningProxy, facts: PassProxy) {
        let lines = LineRecorder()
        var c = ProxyApp.Configuration(home: home)
        c.listeners = [.init(host: "127.0.0.1", port: 0)]
        c.intercept.all = true
        c.tls.upstreamCAFile = o.upstreamCAFile
        c.tls.insecureHosts = o.insecureHosts
        c.tls.commonName = "cookie-proxy audit (throwaway)"
        c.resolve = o.resolve
        // A name the user resolved to this machine is the site under audit.
        c.allowLoopbackUpstream = o.resolve.values.contains { $0.hasPrefix("127.") || $0 == "::1" }
        c.lifecycle = false
        c.observers = [lines]
        if let rules { c.rules = rules }
        // With evidence asked for: the inspector's store keeps every exchange for the states' HAR files; the
        // transformation log records every Set-Cookie line (the first pass is a dry run of no rules: it changes
        // nothing and logs each line), the access log every request (values redacted in both, as in `run`).
        if let (folder, prefix) = files {
            c.inspector = .init(host: "127.0.0.1", port: 0, capacity: 1_000_000, anyPortIfTaken: true)
            c.log = .init(destination: .file("\(folder)/\(prefix)proxy-log.jsonl"))
            c.dryRun = rules == nil
            c.accessLog = "\(folder)/\(prefix)access.jsonl"
            c.accessLogFormat = .json
            let site = siteDomain
            c.accessLogOwnTraffic = { BrowserTraffic.isBrowsersOwn($0, site: site) }
        }
        let proxy: RunningProxy
        do {
            proxy = try ProxyApp.start(c)
        } catch {
            throw Failure(description: "cannot start the proxy: \(error)")
        }
        do {
            guard let leaves = proxy.tls?.interception.server.leaves else {
                throw Failure(description: "the proxy has no https interception")
            }
            let pin = Data(try leaves.publicKeySHA256()).base64EncodedString()
            let facts = PassProxy(
                lines: lines, pin: pin, port: proxy.listenerPorts.first ?? 0, authority: proxy.tls?.ca.certificatePath)
            return (proxy, facts)
        } catch let failure as Failure {
            proxy.stop(drain: 0)
            throw failure
        } catch {
            proxy.stop(drain: 0)
            throw Failure(description: "cannot read the proxy's leaf key: \(error)")
        }
    }

    /// The pages of a pass: given (the second pass), or picked by one state as it goes (`add`) while the others
    /// follow (``page(_:cancelled:)`` waits for the picker when the states go at once).
    final class PageList: Sendable {
        private let held: Locked<(pages: [String], final: Bool)>
        init(_ pages: [String]) { held = Locked((pages, !pages.isEmpty)) }

        var pages: [String] { held.withLock { $0.pages } }
        /// Nothing picked yet, and nobody finished picking: the next state picks.
        var isEmpty: Bool { held.withLock { $0.pages.isEmpty && !$0.final } }
        func add(_ url: String) { held.withLock { $0.pages.append(url) } }
        /// The picker is done: the list is whole.
        func finish() { held.withLock { $0.final = true } }
        /// The picker's browser ended before it was done: the next state picks again (one state at a time).
        func reset() { held.withLock { $0 = ([], false) } }
        /// How many pages, as far as known: the list's length once whole, else `limit`.
        func count(orLimit limit: Int) -> Int { held.withLock { $0.final ? $0.pages.count : limit } }

        /// The `i`-th page (from 0), once the picker has it; nil when the list ended before it or `cancelled`.
        func page(_ i: Int, cancelled: () -> Bool) -> String? {
            while !cancelled() {
                let (page, final) = held.withLock { ($0.pages.indices.contains(i) ? $0.pages[i] : nil, $0.final) }
                if let page { return page }
                if final { return nil }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return nil
        }
    }

    /// One consent state: a fresh browser visiting the pass's pages through `proxy` (picking them when `picking`),
    /// its consent clicked on the first page. How the state went, its visits, and how the browser trusted the
    /// proxy.
    static func visit(
        _ state: ConsentState, _ o: Options, binary: String, via p: PassProxy, list: PageList, picking: Bool,
        atOnce: Bool, sitemapPages: [String]?, label: String, siteDomain: String,
        progress: @Sendable (Progress) -> Void
    ) -> (outcome: ConsentOutcome, visits: [PageVisit], trust: String?) {
        let lines = p.lines
        let prefix = label.isEmpty ? "" : label + "-"
        let session: any BrowserDriver
        do {
            session = try o.engine.start(binary: binary, options: options(p, thirdParty: o.thirdParty))
        } catch {
            if picking { atOnce ? list.finish() : list.reset() }
            return (
                ConsentOutcome(state: state, applied: false, detail: "\(o.engine.title): \(error.description)"), [], nil
            )
        }
        _ = lines.take()
        var visits: [PageVisit] = []
        var sample = PageSample(start: o.url, limit: o.pages, seed: o.seed, suffixes: .system)
        if let sitemapPages { sample.found(sitemapPages) }
        var visited = 0
        var outcome = ConsentOutcome(state: state, applied: state == .none, detail: "no interaction")
        var ended = false
        while !o.cancelled(),
            let url = picking ? sample.next(visited: visited) : list.page(visited, cancelled: o.cancelled)
        {
            visited += 1
            progress(
                Progress(
                    pass: label, state: state, page: visited, pages: picking ? o.pages : list.count(orLimit: o.pages),
                    url: url))
            var problem: String? = nil
            var status: Int? = nil
            var screenshot: String? = nil
            var reached = true
            do {
                let load = try session.open(url, wait: o.wait, until: .quiet)
                (status, problem) = (load.status, load.problem)
                // A browser whose protocol does not give the document's status (WebKit): the proxy's.
                if status == nil, problem == nil { status = lines.status(url) }
                if let answered = lines.answeredStatus(url) {
                    // The site was not reached: the proxy's own answer says why (its first line).
                    let why = (try? session.evaluate(ConsentButtons.bodyTextScript)) ?? nil
                    problem =
                        "the proxy could not fetch the page (\(answered)): "
                        + (why?.split(separator: "\n").first.map(String.init)
                            ?? "no reason given; check the host (--resolve HOST:ADDRESS)")
                    reached = false
                }
                if visited == 1, let choice = state.button {
                    outcome = try consent(
                        choice, state: state, session: session,
                        selector: choice == .accept ? o.acceptSelector : o.rejectSelector, wait: o.wait)
                }
                if picking, sitemapPages == nil, let links = try session.evaluate(ConsentButtons.linksScript),
                    let list = try? JSONSerialization.jsonObject(with: Data(links.utf8)) as? [String]
                {
                    sample.found(list)
                }
                if let folder = o.screenshots, let png = try session.screenshot() {
                    let name = "\(prefix)\(state.rawValue)-\(visited).png"
                    do {
                        try png.write(to: URL(fileURLWithPath: "\(folder)/\(name)"))
                        screenshot = name
                    } catch {
                        problem = "cannot write its screenshot \(folder)/\(name): \(error.localizedDescription)"
                    }
                }
            } catch {
                problem = error.description
            }
            // The browser's own traffic (``BrowserTraffic``) is not the site's: its lines, cookies and sends are
            // left out.
            let store = ((try? session.cookies()) ?? []).filter {
                !BrowserTraffic.isBrowsersOwn($0.bareDomain, site: siteDomain)
            }
            var (relayed, carried) = lines.take()
            relayed.removeAll {
                RequestURL($0.url).map { BrowserTraffic.isBrowsersOwn($0.host, site: siteDomain) } ?? false
            }
            carried.removeAll { BrowserTraffic.isBrowsersOwn($0.host, site: siteDomain) }
            let now = Date().timeIntervalSince1970
            // A browser that does not say what it refused: the lines whose cookie is not in its store.
            let refused =
                session.reportsRefusals
                ? session.takeRefused()
                : SiteScan.absentLines(
                    relayed, store: store, now: now, engine: o.engine.verdictEngine,
                    onlyFor: session.readsOnlyThePagesCookies ? url : nil)
            visits.append(
                PageVisit(
                    url: url, state: state, status: status, problem: problem, lines: relayed,
                    refused: refused, store: store, readAt: now,
                    screenshot: screenshot, reached: reached && status != nil, sent: carried,
                    siteFindings: lines.siteFindings()))
            if picking { list.add(url) }
            if problem != nil, !session.isAlive {
                // A first state cut short has not picked all the pages: one at a time, the next state picks them
                // again; at once, the others visit those it picked.
                if picking { atOnce ? list.finish() : list.reset() }
                ended = true
                progress(
                    Progress(
                        pass: label, state: state, page: visited, pages: o.pages, url: url,
                        message: "\(o.engine.title) ended; the state's other pages are not visited"))
                break
            }
        }
        if picking, !ended { list.finish() }
        if visited == 0, o.cancelled() {
            outcome = ConsentOutcome(state: state, applied: false, detail: "not visited: the audit was interrupted")
        }
        let trust = session.trust
        session.stop()
        return (outcome, visits, trust)
    }

    /// A browser's options: through the pass's proxy, trusting it by its leaves' pin.
    static func options(_ p: PassProxy, thirdParty: ThirdPartyCookies) -> DriverOptions {
        DriverOptions(
            proxyPort: p.port, pin: p.pin, authority: p.authority, thirdParty: thirdParty, window: (1280, 900))
    }

    /// `--sitemap`: the page URLs of the site's sitemaps, read by a browser of their own (a throwaway profile,
    /// through the pass's proxy) — robots.txt's `Sitemap:` lines, else /sitemap.xml, a sitemap index's sitemaps in
    /// turn, at most ``Sitemaps/maximumSitemaps`` — and a note saying what was read. Nil pages: no sitemap was
    /// found, and the pages are the start page's links.
    static func sitemap(_ o: Options, binary: String, options: DriverOptions) -> (pages: [String]?, note: String) {
        guard let origin = FleetList.site(of: o.url)?.site else { return (nil, "--sitemap: not an http(s) URL") }
        let session: any BrowserDriver
        do {
            session = try o.engine.start(binary: binary, options: options)
        } catch {
            return (nil, "--sitemap: \(o.engine.title) could not start to read the sitemaps (\(error.description))")
        }
        defer { session.stop() }
        var named: [String] = []
        if let load = try? session.open(origin + "/robots.txt", wait: o.wait, until: .loaded),
            load.problem == nil, (load.status ?? 200) < 400,
            let text = (try? session.evaluate(Sitemaps.textScript)) ?? nil
        {
            named = Sitemaps.named(inRobots: text)
        }
        var queue = named.isEmpty ? [origin + "/sitemap.xml"] : named
        var read = 0
        var seen: Set<String> = []
        var pages: [String] = []
        while !queue.isEmpty, read < Sitemaps.maximumSitemaps, !o.cancelled() {
            let url = queue.removeFirst()
            guard seen.insert(url).inserted else { continue }
            guard let load = try? session.open(url, wait: o.wait, until: .loaded), load.problem == nil,
                (load.status ?? 200) < 400, let json = (try? session.evaluate(Sitemaps.readScript)) ?? nil,
                let sitemap = Sitemaps.read(json)
            else { continue }
            read += 1
            if sitemap.index { queue += sitemap.locations } else { pages += sitemap.locations }
        }
        let robots = named.isEmpty ? "robots.txt named none" : "robots.txt named \(named.count)"
        guard read > 0 else {
            let tried = named.isEmpty ? "/sitemap.xml is not one" : "none of them is one"
            return (nil, "--sitemap: no sitemap found (\(robots); \(tried)): the pages are the start page's links")
        }
        return (pages, "pages from the sitemaps: \(pages.count) URL(s) in \(read) sitemap(s) (\(robots))")
    }

    /// The evidence in `folder` (the screenshots are already there): `report.json`, `report.txt`, `report.html`,
    /// and `manifest.json`, the SHA-256 of every other file in the folder.
    public static func writeEvidence(_ scan: SiteScan, to folder: String) throws(Failure) {
        do {
            try Data(scan.json.serialized.utf8).write(to: URL(fileURLWithPath: "\(folder)/report.json"))
            try Data(scan.text.text.utf8).write(to: URL(fileURLWithPath: "\(folder)/report.txt"))
            try Data(scan.html.utf8).write(to: URL(fileURLWithPath: "\(folder)/report.html"))
            try writeManifest(folder, recursive: false)
        } catch {
            throw Failure(description: "cannot write the evidence in \(folder): \(error.localizedDescription)")
        }
    }

    /// Finds the state's button, clicks it and checks the click took.
    static func consent(
        _ choice: ConsentButtons.Choice, state: ConsentState, session: any BrowserDriver, selector: String?,
        wait: Double
    ) throws(BrowserFailure) -> ConsentOutcome {
        struct Found: Decodable {
            var found: Bool
            var how: String?
            var looked: String?
        }
        struct Taken: Decodable {
            var taken: Bool
            var sign: String?
        }
        guard let text = try session.evaluate(ConsentButtons.findScript(choice, selector: selector)),
            let found = try? JSONDecoder().decode(Found.self, from: Data(text.utf8))
        else {
            return ConsentOutcome(state: state, applied: false, detail: "the page could not be searched for a button")
        }
        guard found.found else {
            let detail =
                selector.map { "--\(choice.rawValue) '\($0)' matched no visible element on the start page" }
                ?? "no \(choice.rawValue) button found on the start page; looked for \(found.looked ?? ""): give it"
                + " with --\(choice.rawValue) SELECTOR"
            return ConsentOutcome(state: state, applied: false, detail: detail)
        }
        let before = (try? session.cookies())?.map(\.key).sorted() ?? []
        _ = try session.evaluate(ConsentButtons.clickScript)
        try session.settle(quiet: 0.5, wait: min(wait, 5))
        if let text = try session.evaluate(ConsentButtons.verifyScript),
            let taken = try? JSONDecoder().decode(Taken.self, from: Data(text.utf8)), taken.taken
        {
            return ConsentOutcome(
                state: state, applied: true, detail: "clicked \(found.how ?? ""); \(taken.sign ?? "")")
        }
        if (try? session.cookies())?.map(\.key).sorted() ?? [] != before {
            return ConsentOutcome(
                state: state, applied: true, detail: "clicked \(found.how ?? ""); the browser's cookies changed")
        }
        return ConsentOutcome(
            state: state, applied: false,
            detail: "clicked \(found.how ?? "") but nothing showed it took (the banner stayed, no cookie or storage"
                + " changed)")
    }
}
