import CookieKit

/// What a browser saw on one page of a site audit, as the driver gathered it: the page, what its loading did, the
/// Set-Cookie lines the proxy relayed meanwhile, the lines the browser refused (in its words), and its cookie store
/// afterwards.
public struct PageVisit: Sendable {
    public var url: String
    public var state: ConsentState
    /// The document's status; nil when no response came.
    public var status: Int?
    /// Why the page is incomplete or missing (a navigation error, not idle in time, the browser crashed).
    public var problem: String?
    /// The Set-Cookie lines the proxy relayed while the page loaded, with the URL of the response of each.
    public var lines: [(url: String, line: String)]
    /// The lines the browser refused, with the URL of each response and the browser's reasons.
    public var refused: [(url: String, line: String, reasons: [String])]
    /// The browser's whole cookie store once the page was idle.
    public var store: [BrowserCookie]
    /// When the store was read (seconds since the epoch): lifetimes are counted from it.
    public var readAt: Double
    /// The file name of the page's screenshot, when one was written (`--out`).
    public var screenshot: String?
    /// The site answered the page (not the proxy, for a site it could not reach).
    public var reached: Bool
    /// The cookies the page's requests carried, as the proxy saw their Cookie headers: each request's host and a
    /// cookie's name.
    public var sent: [(host: String, name: String)]
    /// The site-context findings the proxy's lint gave each line (`cross-site-samesite`, `third-party-unpartitioned`,
    /// …: RFC 6265bis §5.2, from the request's Fetch Metadata), by ``lineKey(url:line:)``: the only explanation of a
    /// refusal that the line alone does not give.
    public var siteFindings: [String: [String]]

    /// The key of a line's ``siteFindings``: its response's URL and the line.
    public static func lineKey(url: String, line: String) -> String { url + "\u{0}" + line }

    public init(
        url: String, state: ConsentState, status: Int?, problem: String?, lines: [(url: String, line: String)],
        refused: [(url: String, line: String, reasons: [String])], store: [BrowserCookie], readAt: Double,
        screenshot: String? = nil, reached: Bool = true, sent: [(host: String, name: String)] = [],
        siteFindings: [String: [String]] = [:]
    ) {
        (self.reached, self.sent, self.siteFindings) = (reached, sent, siteFindings)
        (self.url, self.state, self.status, self.problem) = (url, state, status, problem)
        (self.lines, self.refused, self.store, self.readAt, self.screenshot) = (
            lines, refused, store, readAt, screenshot
        )
    }
}

/// A cookie as a browser keeps it: what every driver reads from its store (the shape of the DevTools protocol's
/// `Network.Cookie`, which BiDi's and WebDriver's cookies map onto), and what the draft would keep, written the same
/// way for `parse --browser` to compare.
public struct BrowserCookie: Sendable, Hashable {
    public var name: String
    public var value: String
    /// With a leading dot for a domain cookie (host-only without).
    public var domain: String
    public var path: String
    /// Seconds since the epoch; nil for a session cookie.
    public var expires: Double?
    public var secure: Bool
    public var httpOnly: Bool
    /// Strict, Lax or None as set; nil when the cookie had none (the draft's Default).
    public var sameSite: String?
    /// The top-level site of a partitioned cookie (CHIPS).
    public var partitionKey: String?

    public init(
        name: String, value: String = "", domain: String, path: String, expires: Double?, secure: Bool,
        httpOnly: Bool, sameSite: String?, partitionKey: String? = nil
    ) {
        (self.name, self.value, self.domain, self.path, self.expires) = (name, value, domain, path, expires)
        (self.secure, self.httpOnly, self.sameSite, self.partitionKey) = (secure, httpOnly, sameSite, partitionKey)
    }

    /// What tells two cookies of a store apart (RFC 6265bis §5.7 step 23: name, domain, host-only, path; CHIPS
    /// adds the partition).
    public var key: String { "\(name)\u{0}\(domain)\u{0}\(path)\u{0}\(partitionKey ?? "")" }

    public var hostOnly: Bool { !domain.hasPrefix(".") }
    /// The domain as the draft's fields write it: without a leading dot, an IPv6 address without brackets.
    public var bareDomain: String {
        let d = domain.hasPrefix(".") ? domain.dropFirst() : domain[...]
        return String(d.hasPrefix("[") && d.hasSuffix("]") ? d.dropFirst().dropLast() : d)
    }
    public var persistent: Bool { expires != nil }
}

/// How one consent state went: whether its button was found and the click took, and why not.
public struct ConsentOutcome: Sendable {
    public var state: ConsentState
    /// The state is what it says: `none` always; `accept`/`reject` when the button was clicked and it took.
    public var applied: Bool
    /// How the button was found and what showed the click took, or why the state was not applied.
    public var detail: String
    public init(state: ConsentState, applied: Bool, detail: String) {
        (self.state, self.applied, self.detail) = (state, applied, detail)
    }
}

/// One cookie of a site audit: what the browser kept, where it came from, what it is for, what is wrong with it.
public struct SiteCookie: Sendable {
    public var name: String
    /// Without a leading dot.
    public var domain: String
    public var path: String
    public var hostOnly: Bool
    public var partitionKey: String?
    /// `first` when its domain's registrable domain is the top-level site's, else `third`.
    public var party: String
    /// `http` (a Set-Cookie line the proxy relayed) or `script` (in the store with no line behind it).
    public var setBy: String
    /// The response URL of its Set-Cookie line, or the page whose script set it.
    public var setOn: String
    public var firstPage: String
    public var firstState: ConsentState
    /// The consent states it was in the store in.
    public var states: [ConsentState]
    /// Seconds from when the store was read; nil for a session cookie.
    public var lifetime: Int64?
    public var secure: Bool
    public var httpOnly: Bool
    /// Strict, Lax, None, or Default (none set).
    public var sameSite: String
    public var category: CookieCategory
    /// `policy` (the declaring entry), `open-cookie-database` (the row that matched), or `none`.
    public var categorySource: String
    public var row: CookieDatabase.Row?
    /// The policy's entry that declares it (`--policy`).
    public var declared: CookiePolicy.Entry?
    /// The lint's findings on its Set-Cookie line (codes), and the audit's own (`set-before-consent`).
    public var findings: [String]
    /// Each engine's verdict on its Set-Cookie line (``EngineVerdict``), when it had one.
    public var engines: String?
    /// The Set-Cookie line, when it came from one.
    public var line: String?
    /// A request carried it back (in a state it was in).
    public var sent = false
}

/// A Set-Cookie line a browser refused.
public struct RefusedCookie: Sendable {
    public var name: String
    public var url: String
    public var page: String
    public var state: ConsentState
    /// The browser's own reasons (Chromium's `CookieBlockedReason`/`SetCookieBlockedReason` names).
    public var reasons: [String]
    public var line: String
    /// How many times in the state it was refused (once per page that loaded the response, usually).
    public var times: Int
    /// The cookie the line would have made, classified as a kept one is (one row whether kept or refused): its
    /// domain (the Domain attribute, else the response's host) and path, its party, its category and where that
    /// came from, its attributes, its lifetime in seconds (nil: a session cookie), and the findings of its line
    /// (the lint's, and `set-before-consent` for an analytics or marketing line sent before consent).
    public var domain = ""
    public var path = "/"
    public var hostOnly = true
    public var party = "first"
    public var category = CookieCategory.unknown
    public var categorySource = "none"
    public var secure = false
    public var httpOnly = false
    public var sameSite = "Default"
    public var partitioned = false
    public var lifetime: Int64? = nil
    public var findings: [String] = []
    /// The refusal was the browser's privacy settings alone (``SiteScan/isBlocked(_:)``), not the line's own.
    public var blocked: Bool { SiteScan.isBlocked(reasons) }
}

/// A browser audit of a site: the pages visited in each consent state, how each state went, every cookie the
/// browser kept and every line it refused.
public struct SiteScan: Sendable {
    public var engine: String
    public var start: String
    public var seed: UInt64
    /// The browser's third-party cookie setting for the run (`default`: its own).
    public var thirdParty = "default"
    /// With `--rules`: the same pages through the rules, cookie by cookie.
    public var rules: RulesComparison? = nil
    /// With `--baseline`: every cookie compared with the same site's in an earlier run.
    public var baseline: BaselineComparison? = nil
    /// What this engine's report cannot show (its automation protocol's limits).
    public var notes: [String] = []
    public var states: [ConsentOutcome]
    public var pages: [PageVisit]
    public var cookies: [SiteCookie]
    public var refused: [RefusedCookie]

    /// Builds the report from the visits, in order (each state's pages in the order they were visited).
    public static func build(
        engine: String, start: String, seed: UInt64, states: [ConsentOutcome], visits: [PageVisit],
        policy: CookiePolicy? = nil, database: CookieDatabase = .shipped, suffixes: PublicSuffixList = .system
    ) -> SiteScan {
        let top = RequestURL(start).map { suffixes.registrableDomain(of: $0.host) ?? $0.host } ?? ""
        var cookies: [SiteCookie] = []
        var index: [String: Int] = [:]
        var refused: [RefusedCookie] = []
        var refusedIndex: [String: Int] = [:]
        var linesSoFar: [(url: String, line: String, state: ConsentState)] = []
        for visit in visits {
            linesSoFar += visit.lines.map { ($0.url, $0.line, visit.state) }
            // A line refused again in the same state (the same response on every page) is one entry, counted.
            for r in visit.refused {
                let key = "\(visit.state)\u{0}\(r.url)\u{0}\(r.line)\u{0}\(r.reasons)"
                if let i = refusedIndex[key] {
                    refused[i].times += 1
                    continue
                }
                refusedIndex[key] = refused.count
                refused.append(
                    refusedEntry(
                        r, visit: visit, top: top, policy: policy, database: database, suffixes: suffixes))
            }
            for stored in visit.store {
                if let i = index[stored.key] {
                    if !cookies[i].states.contains(visit.state) { cookies[i].states.append(visit.state) }
                    continue
                }
                index[stored.key] = cookies.count
                cookies.append(
                    entry(
                        stored, visit: visit, top: top, lines: linesSoFar.filter { $0.state == visit.state },
                        database: database, suffixes: suffixes))
            }
        }
        // Sent back: a request to a host the cookie's domain covers carried its name (the proxy saw the header).
        var sentTo: [String: Set<String>] = [:]
        for visit in visits { for s in visit.sent { sentTo[s.name, default: []].insert(s.host) } }
        for i in cookies.indices {
            let stored = cookies[i]
            cookies[i].sent =
                sentTo[stored.name]?.contains {
                    stored.hostOnly ? $0 == stored.domain : domainMatches($0, stored.domain)
                } ?? false
            // The site's own declaration comes before the database's row.
            if let policy {
                if let entry = policy.entry(for: cookies[i].name) {
                    cookies[i].declared = entry
                    if let category = entry.category {
                        (cookies[i].category, cookies[i].categorySource) = (category, "policy")
                    }
                }
                cookies[i].findings += policy.findings(for: cookies[i])
            }
            let c = cookies[i]
            if c.category.needsConsent, c.states.contains(where: { $0 != .accept }) {
                cookies[i].findings.append("set-before-consent")
            }
        }
        return SiteScan(
            engine: engine, start: start, seed: seed, states: states, pages: visits, cookies: cookies,
            refused: refused)
    }

    /// A refused line's entry: the cookie it would have made, classified as a kept one is.
    static func refusedEntry(
        _ r: (url: String, line: String, reasons: [String]), visit: PageVisit, top: String, policy: CookiePolicy?,
        database: CookieDatabase, suffixes: PublicSuffixList
    ) -> RefusedCookie {
        let cookie = SetCookie(r.line)
        let url = RequestURL(r.url)
        let a = cookie.attributes
        var entry = RefusedCookie(
            name: cookie.name, url: r.url, page: visit.url, state: visit.state, reasons: r.reasons, line: r.line,
            times: 1)
        let domain = (a.domain?.isEmpty == false ? a.domain : nil) ?? url?.host ?? ""
        (entry.domain, entry.hostOnly) = (domain, a.domain?.isEmpty != false)
        entry.path = a.path ?? url?.defaultPath ?? "/"
        entry.party = (suffixes.registrableDomain(of: domain) ?? domain) == top ? "first" : "third"
        (entry.secure, entry.httpOnly, entry.partitioned) = (a.secure, a.httpOnly, a.partitioned)
        entry.sameSite = a.sameSite.rawValue
        let now = Int64(visit.readAt)
        entry.lifetime = a.maxAge.map { max(0, $0) } ?? a.expires.map { max(0, $0 - now) }
        if let row = database.row(for: cookie.name) {
            (entry.category, entry.categorySource) = (row.category, "open-cookie-database")
        }
        if let declared = policy?.entry(for: cookie.name), let category = declared.category {
            (entry.category, entry.categorySource) = (category, "policy")
        }
        if let url {
            entry.findings = CookieLint.findings(for: cookie, from: url, now: now, suffixes: suffixes).map(\.code)
        }
        entry.findings += visit.siteFindings[PageVisit.lineKey(url: r.url, line: r.line)] ?? []
        // Sent before consent whether or not this browser kept it: another (Firefox keeps third-party lines that
        // Chromium blocks) would have.
        if entry.category.needsConsent && visit.state != .accept { entry.findings.append("set-before-consent") }
        return entry
    }

    /// A stored cookie's entry: from the latest line of the same name whose response host the cookie's domain
    /// covers (http), else from the page's scripts.
    static func entry(
        _ c: BrowserCookie, visit: PageVisit, top: String,
        lines: [(url: String, line: String, state: ConsentState)], database: CookieDatabase,
        suffixes: PublicSuffixList
    ) -> SiteCookie {
        let domain = c.bareDomain
        let party = (suffixes.registrableDomain(of: domain) ?? domain) == top ? "first" : "third"
        let source = lines.last { l in
            let parsed = SetCookie(l.line)
            guard parsed.name == c.name, let url = RequestURL(l.url) else { return false }
            return domainMatches(url.host, domain)
        }
        var findings: [String] = []
        var engines: String? = nil
        if let source, let url = RequestURL(source.url) {
            let lint = CookieLint.findings(
                for: SetCookie(source.line), from: url, now: Int64(visit.readAt), suffixes: suffixes)
            findings =
                lint.map(\.code) + (visit.siteFindings[PageVisit.lineKey(url: source.url, line: source.line)] ?? [])
            engines = EngineVerdict.summary(lint)
        }
        let row = database.row(for: c.name)
        return SiteCookie(
            name: c.name, domain: domain, path: c.path, hostOnly: c.hostOnly, partitionKey: c.partitionKey,
            party: party, setBy: source == nil ? "script" : "http", setOn: source?.url ?? visit.url,
            firstPage: visit.url, firstState: visit.state, states: [visit.state],
            lifetime: c.expires.map { Int64(($0 - visit.readAt).rounded()) }, secure: c.secure,
            httpOnly: c.httpOnly, sameSite: c.sameSite ?? "Default", category: row?.category ?? .unknown,
            categorySource: row == nil ? "none" : "open-cookie-database", row: row, declared: nil, findings: findings,
            engines: engines, line: source?.line)
    }
}

extension SiteScan {
    /// What a CI gate can fail on (`--fail-on`): a policy's undeclared cookies, its violations, the lines a browser
    /// refused for what the line says (`rejects`), the lines it refused for its own privacy settings alone
    /// (`blocked`: third-party cookie blocking, not the site's fault and not in the default), analytics and marketing
    /// cookies set before consent (``failures(of:)``).
    public static let failKinds = auditKinds + BaselineComparison.failKinds
    /// What a run finds of itself (the rest compare it with a baseline).
    static let auditKinds = ["undeclared", "violations", "rejects", "blocked", "set-before-consent"]

    /// Refusal reasons that are the browser's privacy settings, not anything the line says: Chromium's
    /// `UserPreferences` (third-party cookies blocked), `ThirdPartyPhaseout` and `ThirdPartyBlockedInFirstPartySet`.
    public static let privacyReasons: Set<String> = [
        "UserPreferences", "ThirdPartyPhaseout", "ThirdPartyBlockedInFirstPartySet",
    ]

    /// Whether a refusal was the browser's privacy settings alone (every reason it gave is one of
    /// ``privacyReasons``).
    public static func isBlocked(_ reasons: [String]) -> Bool {
        !reasons.isEmpty && reasons.allSatisfy { privacyReasons.contains($0) }
    }

    /// What fails a run when no kinds are named: refusals and cookies set before consent; with a policy, every kind
    /// a run finds of itself (not the comparisons with a baseline, which are asked for by name).
    public static func defaultFailKinds(policy: Bool) -> Set<String> {
        policy ? Set(auditKinds) : ["rejects", "set-before-consent"]
    }

    /// A comma-separated list of kinds read: the kinds named, and the first name that is not a kind (nil when none).
    public static func failKinds(_ list: String) -> (kinds: Set<String>, unknown: String?) {
        // Each name without the blanks around it (not line breaks: Foundation's `.whitespaces`).
        let blank: (Character) -> Bool = { $0.isWhitespace && !$0.isNewline }
        let names = list.split(separator: ",").map { name in
            String(name.drop(while: blank).reversed().drop(while: blank).reversed())
        }
        return (Set(names), names.first { !failKinds.contains($0) })
    }

    /// What a CI gate fails on, of the `kinds` asked (`undeclared`, `violations`, `rejects`, `set-before-consent`;
    /// with a baseline `new`, `changed`, `gone`): a line per cookie or refusal, empty when the gate passes.
    public func failures(of kinds: Set<String>) -> [String] {
        var out: [String] = []
        if let baseline { out += baseline.failures(of: kinds) }
        for c in cookies {
            for f in c.findings {
                let kind =
                    f == "undeclared" || f == "set-before-consent" ? f : f.hasPrefix("policy-") ? "violations" : ""
                if kinds.contains(kind) {
                    out.append("\(c.name) (\(c.domain)): \(f)\(CookiePolicy.breach(f, of: c).map { ": \($0)" } ?? "")")
                }
            }
        }
        if kinds.contains("set-before-consent") {
            for r in refused where r.findings.contains("set-before-consent") {
                out.append(
                    "\(r.name) (\(r.domain)): set-before-consent: the site sent it in consent \(r.state.rawValue); \(engine) refused it (\(r.reasons.joined(separator: ", ")))"
                )
            }
        }
        for r in refused {
            let blocked = Self.isBlocked(r.reasons)
            guard kinds.contains(blocked ? "blocked" : "rejects") else { continue }
            let what = blocked ? "blocked by the browser's privacy settings" : "refused"
            out.append("\(r.name) from \(r.url): \(what) (\(r.reasons.joined(separator: ", ")))")
        }
        return out
    }
}

extension SiteScan {
    /// The lines a browser that does not say what it refuses (Firefox over BiDi) did not keep: those whose cookie
    /// is not in the store after the page, leaving out the lines that delete a cookie (an expiry in the past). The
    /// reasons say so, with the lint's findings that predict `engine`'s refusal. `onlyFor`: the page, when the store
    /// holds only its cookies (WebKit over classic WebDriver): only the lines of its host whose path covers it are
    /// judged.
    public static func absentLines(
        _ lines: [(url: String, line: String)], store: [BrowserCookie], now: Double,
        engine: EngineVerdict.Engine, onlyFor page: String? = nil, suffixes: PublicSuffixList = .system
    ) -> [(url: String, line: String, reasons: [String])] {
        let shown = page.flatMap(RequestURL.init)
        var out: [(url: String, line: String, reasons: [String])] = []
        for l in lines {
            guard let url = RequestURL(l.url) else { continue }
            let cookie = SetCookie(l.line)
            if let shown {
                guard url.host == shown.host,
                    pathMatches(shown.path.isEmpty ? "/" : shown.path, cookie.attributes.path ?? url.defaultPath)
                else { continue }
            }
            let findings = CookieLint.findings(for: cookie, from: url, now: Int64(now), suffixes: suffixes)
            if findings.contains(where: { $0.code == "already-expired" }) { continue }
            let kept = store.contains { c in c.name == cookie.name && domainMatches(url.host, c.bareDomain) }
            guard !kept else { continue }
            let predicted =
                EngineVerdict.of(findings).first { $0.engine == engine }?.stores == false
                ? findings.filter { $0.severity == .rejects }.map(\.code) : []
            out.append((l.url, l.line, ["not-in-store"] + predicted))
        }
        return out
    }
}
