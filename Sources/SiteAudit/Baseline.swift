import CookieKit
import JSONStream
import Terminal

/// A cookie as a report records it: the facts one run of a site is compared on with another (`--baseline`,
/// `report diff`). Read from a ``SiteCookie`` or back from a report's JSON (`report.json`'s `cookies`, a
/// `fleet.json` site's `cookieList`), so that a comparison reads the same whichever side was in memory.
public struct RecordedCookie: Sendable, Hashable {
    public var name: String
    /// Without a leading dot.
    public var domain: String
    public var path: String
    public var hostOnly: Bool
    public var partitionKey: String?
    public var party: String
    public var setBy: String
    /// The consent states it was in the store in, in the audit's order.
    public var states: [String]
    /// Seconds from when the store was read; nil for a session cookie.
    public var lifetime: Int64?
    public var secure: Bool
    public var httpOnly: Bool
    public var sameSite: String
    public var category: String
    public var findings: [String]

    public init(_ c: SiteCookie) {
        (name, domain, path, hostOnly, partitionKey) = (c.name, c.domain, c.path, c.hostOnly, c.partitionKey)
        (party, setBy, states, lifetime) = (c.party, c.setBy, c.states.map(\.rawValue), c.lifetime)
        (secure, httpOnly, sameSite, category, findings) = (
            c.secure, c.httpOnly, c.sameSite, c.category.rawValue, c.findings
        )
    }

    /// Read from a cookie of `report.json` (``SiteCookie/json``) or of `fleet.json`: nil when it is not one.
    public init?(json v: JSONValue) {
        guard let name = v["name"]?.string, let domain = v["domain"]?.string, let path = v["path"]?.string else {
            return nil
        }
        (self.name, self.domain, self.path) = (name, domain, path)
        hostOnly = v["hostOnly"]?.bool ?? true
        partitionKey = v["partitionKey"]?.string
        party = v["party"]?.string ?? ""
        setBy = v["setBy"]?.string ?? ""
        states = v["states"]?.array?.compactMap(\.string) ?? []
        lifetime = v["lifetime"]?.int
        secure = v["secure"]?.bool ?? false
        httpOnly = v["httpOnly"]?.bool ?? false
        sameSite = v["sameSite"]?.string ?? "Default"
        category = v["category"]?.string ?? CookieCategory.unknown.rawValue
        findings = v["findings"]?.array?.compactMap(\.string) ?? []
    }

    /// As `fleet.json`'s `cookieList` writes it (the fields ``init(json:)`` reads, named as in `report.json`).
    public var json: JSONValue {
        .object([
            ("name", .string(name)), ("domain", .string(domain)), ("path", .string(path)),
            ("hostOnly", .bool(hostOnly)), ("partitionKey", JSONValue(partitionKey)), ("party", .string(party)),
            ("setBy", .string(setBy)), ("states", .array(states.map { .string($0) })),
            ("lifetime", lifetime.map { .int($0) } ?? .string("session")), ("secure", .bool(secure)),
            ("httpOnly", .bool(httpOnly)), ("sameSite", .string(sameSite)), ("category", .string(category)),
            ("findings", .array(findings.map { .string($0) })),
        ])
    }

    /// What a cookie is, from one run to the next: its site (the audit's start origin, outside this type), its
    /// name, domain and path — the draft's own identity of a stored cookie (RFC 6265bis §5.7 step 23) without
    /// host-only, which is a fact that may change. A partitioned cookie and an unpartitioned one of the same
    /// identity are paired by partition.
    var identity: String { "\(name)\u{0}\(domain)\u{0}\(path)" }
}

/// One cookie compared with the baseline: `new` (not in the baseline), `gone` (in the baseline, not now),
/// `changed` (which facts, each before → after) or `same`.
public struct CookieChange: Sendable, Hashable {
    public enum Kind: String, Sendable, CaseIterable {
        case new, changed, gone, same
    }
    /// A fact that differs: its name (``BaselineComparison/facts``) and both sides as a person reads them.
    public struct Fact: Sendable, Hashable {
        public var fact: String
        public var before: String
        public var after: String
    }
    public var kind: Kind
    public var name: String
    public var domain: String
    public var path: String
    /// The partition of a partitioned cookie (CHIPS): two cookies of one identity told apart.
    public var partitionKey: String?
    public var facts: [Fact]

    public var json: JSONValue {
        .object([
            ("change", .string(kind.rawValue)), ("name", .string(name)), ("domain", .string(domain)),
            ("path", .string(path)), ("partitionKey", JSONValue(partitionKey)),
            (
                "facts",
                .array(
                    facts.map {
                        .object([
                            ("fact", .string($0.fact)), ("before", .string($0.before)), ("after", .string($0.after)),
                        ])
                    })
            ),
        ])
    }

    init?(json v: JSONValue) {
        guard let kind = v["change"]?.string.flatMap(Kind.init(rawValue:)), let name = v["name"]?.string,
            let domain = v["domain"]?.string, let path = v["path"]?.string
        else { return nil }
        (self.kind, self.name, self.domain, self.path) = (kind, name, domain, path)
        partitionKey = v["partitionKey"]?.string
        facts = (v["facts"]?.array ?? []).compactMap { f in
            guard let fact = f["fact"]?.string, let before = f["before"]?.string, let after = f["after"]?.string
            else { return nil }
            return Fact(fact: fact, before: before, after: after)
        }
    }

    init(kind: Kind, _ c: RecordedCookie, facts: [Fact] = []) {
        (self.kind, name, domain, path, self.facts) = (kind, c.name, c.domain, c.path, facts)
        partitionKey = c.partitionKey
    }

    /// `name (domain/path)`, and the facts: `changed: lifetime 7 days → 1 year, category unknown → marketing`.
    public var line: String {
        let what = "\(name) (\(domain)\(path))"
        guard !facts.isEmpty else { return "\(kind.rawValue): \(what)" }
        return "\(kind.rawValue): \(what): "
            + facts.map { "\($0.fact) \($0.before) → \($0.after)" }.joined(separator: ", ")
    }
}

/// One site's cookies compared with the same site's in an earlier run (`--baseline`): every cookie of either run
/// once, new and changed first. The rules (docs/site-audit.md "Comparing with a baseline"): a cookie is its
/// site, name, domain and path (``RecordedCookie``'s identity); the facts compared are ``facts``; a lifetime is
/// the same when both are session cookies, or both persistent within a tenth of the longer or a minute (a cookie
/// with a fixed `Expires` date is read a day shorter each night; a `Max-Age` is read a second or two apart).
public struct BaselineComparison: Sendable {
    /// The baseline as given (a folder, `report.json` or `fleet.json`).
    public var from: String
    /// The site was in the baseline: when not, every cookie is new.
    public var siteInBaseline: Bool
    public var rows: [CookieChange]

    /// The facts compared, in the order a change lists them.
    public static let facts = [
        "hostOnly", "partitionKey", "secure", "httpOnly", "sameSite", "lifetime", "category", "party", "states",
        "setBy",
    ]

    public init(from: String, siteInBaseline: Bool, rows: [CookieChange]) {
        (self.from, self.siteInBaseline, self.rows) = (from, siteInBaseline, rows)
    }

    /// The consent states both runs visited, when they differ (nil: the same states, or not known): a cookie is
    /// compared over those alone — its presence and its `states` — so that a run of `--consent none` against one
    /// of all three does not read every accept-only cookie as gone.
    public var comparedStates: [String]? = nil

    /// `after` compared with `before` (nil: the site is not in the baseline). `states`: the consent states each run
    /// visited, when known.
    public init(
        from: String, before: [RecordedCookie]?, after: [RecordedCookie],
        states: (before: [String], after: [String])? = nil
    ) {
        self.from = from
        siteInBaseline = before != nil
        var before = before
        var after = after
        if let states, Set(states.before) != Set(states.after) {
            let common = states.after.filter(states.before.contains)
            comparedStates = common
            func over(_ list: [RecordedCookie]) -> [RecordedCookie] {
                list.compactMap { c in
                    var c = c
                    c.states = c.states.filter(common.contains)
                    return c.states.isEmpty ? nil : c
                }
            }
            before = before.map(over)
            after = over(after)
        }
        var rows: [CookieChange] = []
        var earlier: [String: [RecordedCookie]] = [:]
        for c in before ?? [] { earlier[c.identity, default: []].append(c) }
        for key in earlier.keys { earlier[key]!.sort { ($0.partitionKey ?? "") < ($1.partitionKey ?? "") } }
        var later: [String: [RecordedCookie]] = [:]
        for c in after { later[c.identity, default: []].append(c) }
        for (key, list) in later {
            var olds = earlier.removeValue(forKey: key) ?? []
            for c in list.sorted(by: { ($0.partitionKey ?? "") < ($1.partitionKey ?? "") }) {
                // The same partition first, else the first left.
                let match = olds.firstIndex { $0.partitionKey == c.partitionKey } ?? olds.indices.first
                guard let i = match else {
                    rows.append(CookieChange(kind: .new, c))
                    continue
                }
                let old = olds.remove(at: i)
                let facts = Self.differences(old, c)
                rows.append(CookieChange(kind: facts.isEmpty ? .same : .changed, c, facts: facts))
            }
            for old in olds { rows.append(CookieChange(kind: .gone, old)) }
        }
        for olds in earlier.values { for old in olds { rows.append(CookieChange(kind: .gone, old)) } }
        self.rows = Self.ordered(rows)
    }

    /// New, changed, gone, same; each by domain, name, path, partition.
    static func ordered(_ rows: [CookieChange]) -> [CookieChange] {
        let rank = Dictionary(uniqueKeysWithValues: CookieChange.Kind.allCases.enumerated().map { ($1, $0) })
        return rows.sorted {
            (rank[$0.kind]!, $0.domain, $0.name, $0.path, $0.partitionKey ?? "")
                < (rank[$1.kind]!, $1.domain, $1.name, $1.path, $1.partitionKey ?? "")
        }
    }

    /// The facts of ``facts`` that differ, each before → after.
    static func differences(_ a: RecordedCookie, _ b: RecordedCookie) -> [CookieChange.Fact] {
        var out: [CookieChange.Fact] = []
        func fact(_ name: String, _ x: String, _ y: String) {
            if x != y { out.append(.init(fact: name, before: x, after: y)) }
        }
        fact("hostOnly", "\(a.hostOnly)", "\(b.hostOnly)")
        fact("partitionKey", a.partitionKey ?? "none", b.partitionKey ?? "none")
        fact("secure", "\(a.secure)", "\(b.secure)")
        fact("httpOnly", "\(a.httpOnly)", "\(b.httpOnly)")
        fact("sameSite", a.sameSite, b.sameSite)
        if !sameLifetime(a.lifetime, b.lifetime) {
            out.append(.init(fact: "lifetime", before: Lifetime.words(a.lifetime), after: Lifetime.words(b.lifetime)))
        }
        fact("category", a.category, b.category)
        fact("party", a.party, b.party)
        fact("states", a.states.joined(separator: ","), b.states.joined(separator: ","))
        fact("setBy", a.setBy, b.setBy)
        return out
    }

    /// Both session cookies, or both persistent and apart by at most a tenth of the longer or 60 seconds.
    static func sameLifetime(_ a: Int64?, _ b: Int64?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let x?, let y?):
            let apart = abs(x - y)
            return apart <= 60 || apart * 10 <= max(abs(x), abs(y))
        default: return false
        }
    }

    public func count(_ kind: CookieChange.Kind) -> Int { rows.filter { $0.kind == kind }.count }

    public var json: JSONValue {
        .object([
            ("from", .string(from)), ("siteInBaseline", .bool(siteInBaseline)),
            ("comparedStates", comparedStates.map { .array($0.map { .string($0) }) } ?? .null),
            ("counts", .object(CookieChange.Kind.allCases.map { ($0.rawValue, .int(Int64(count($0)))) })),
            ("cookies", .array(rows.map(\.json))),
        ])
    }

    public init?(json v: JSONValue) {
        guard let from = v["from"]?.string, let rows = v["cookies"]?.array else { return nil }
        self.init(
            from: from, siteInBaseline: v["siteInBaseline"]?.bool ?? true, rows: rows.compactMap(CookieChange.init))
        comparedStates = v["comparedStates"]?.array?.compactMap(\.string)
    }

    /// `3 new, 1 changed, 0 gone, 12 same`.
    public var counts: String {
        CookieChange.Kind.allCases.map { "\(count($0)) \($0.rawValue)" }.joined(separator: ", ")
    }

    /// The kinds `--fail-on` takes for a comparison.
    public static let failKinds = ["new", "changed", "gone"]

    /// A line per cookie of a kind in `kinds` (new, changed, gone), prefixed `site` when given.
    public func failures(of kinds: Set<String>, site: String? = nil) -> [String] {
        rows.filter { kinds.contains($0.kind.rawValue) }.map { (site.map { "\($0): " } ?? "") + $0.line }
    }

    /// For a person: the counts, then each cookie that is not the same, new and changed first (escaped for a
    /// terminal: the names and facts are the site's).
    public var text: TerminalText {
        var out: TerminalText = "Since the baseline (\(from)): \(counts)\n"
        if !siteInBaseline { out += "  the site is not in the baseline: every cookie is new\n" }
        if let comparedStates {
            out += "  compared over the consent states both runs visited: \(comparedStates.joined(separator: ", "))\n"
        }
        for row in rows where row.kind != .same { out += "  \(row.line)\n" }
        return out
    }
}

extension BaselineComparison {
    /// The comparison as a section of `report.html` and `fleet.html`: the counts, then every cookie that is not
    /// the same (new and changed first), `site` naming a site's column in the fleet's.
    func html(site: String? = nil) -> String {
        var h = "<p class=\"meta\">\(SiteScan.escape(counts)) since <code>\(SiteScan.escape(from))</code>"
        if !siteInBaseline { h += " · " + SiteScan.tag("not in the baseline: every cookie is new", "warn") }
        if let comparedStates {
            h += " · compared over the consent states both runs visited: "
            h += SiteScan.escape(comparedStates.isEmpty ? "none" : comparedStates.joined(separator: ", "))
        }
        h += "</p>\n"
        let shown = rows.filter { $0.kind != .same }
        guard !shown.isEmpty else { return h }
        h +=
            "<table><tr>\(site == nil ? "" : "<th>site</th>")<th>change</th><th>cookie</th><th>what changed</th></tr>\n"
        for row in shown {
            h += "<tr>"
            if let site { h += "<td class=\"u\">\(SiteScan.escape(site))</td>" }
            let kind = row.kind == .new ? "bad" : row.kind == .changed ? "warn" : ""
            h += "<td>\(SiteScan.tag(row.kind.rawValue, kind))</td><td class=\"u\"><code>\(SiteScan.escape(row.name))"
            h += "</code><br>\(SiteScan.escape(row.domain + row.path))</td><td class=\"u\">"
            h += row.facts.map {
                "\(SiteScan.escape($0.fact)): \(SiteScan.escape($0.before)) → \(SiteScan.escape($0.after))"
            }
            .joined(separator: "<br>")
            h += "</td></tr>\n"
        }
        return h + "</table>\n"
    }
}
