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

/// One pass over the site: its proxies, each consent state's browser visiting the pages through one, the pages
/// picked as the first state goes, the sitemaps read, the consent clicked.
extension SiteAuditRun {
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
            let picks = sitemapPages
            let each = facts
            together(states.count) { i in
                let result = visit(
                    states[i], o, binary: binary, via: each[i], list: list, picking: i == 0 && pages.isEmpty,
                    atOnce: true, sitemapPages: picks, label: label, siteDomain: siteDomain, progress: progress)
                held.withLock { $0[i] = result }
            }
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
