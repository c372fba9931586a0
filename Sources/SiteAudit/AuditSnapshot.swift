import CookieKit
import CookieReports
import JSONStream
import Terminal

/// An earlier run's cookies by site, as `--baseline` and `report diff` read them: from a `fleet.json` (every site
/// of the fleet) or a `report.json` of one engine (its start URL's site).
public struct AuditSnapshot: Sendable {
    /// The path as given (it names the baseline in the reports).
    public var path: String
    /// By site (``FleetList/site(of:)``): its start URL, cookies and the consent states visited.
    public var sites: [String: (url: String, cookies: [RecordedCookie], states: [String])]

    /// `text`, a `fleet.json` or a `report.json`, read from `file` (named in the failures) and known as `path`.
    public init(text: String, file: String, path: String) throws(ReportReadFailure) {
        self.path = path
        let value = try ReportReadFailure.json(text, file: file)
        if value["fleet"] != nil {
            let fleet = try FleetReport(json: value, file: file)
            sites = [:]
            for s in fleet.sites where s.status != 2 { sites[s.site] = (s.url, s.cookies, s.states) }
            return
        }
        if value["engines"] != nil {
            throw ReportReadFailure(
                description:
                    "\(file) holds several engines (--browser all): give one engine's folder or report.json instead")
        }
        guard let start = value["start"]?.string, let site = FleetList.site(of: start)?.site,
            let cookies = value["cookies"]?.array
        else {
            throw ReportReadFailure(description: "\(file) is neither a fleet.json nor an audit --browser report.json")
        }
        let states: [String]
        if case .object(let fields)? = value["consent"] { states = fields.map(\.0) } else { states = [] }
        sites = [site: (start, cookies.compactMap(RecordedCookie.init(json:)), states)]
    }

    /// `site`'s cookies, nil when the snapshot does not have the site (or did not reach it).
    public func cookies(of site: String) -> [RecordedCookie]? { sites[site]?.cookies }
    /// The consent states `site` was visited in (empty when not known).
    public func states(of site: String) -> [String] { sites[site]?.states ?? [] }
}

/// `cookie-proxy report diff OLD NEW`: every site of either run compared (``BaselineComparison``); a site only in
/// NEW has every cookie new, a site only in OLD every cookie gone.
public struct SnapshotDiff: Sendable {
    public var old: String
    public var new: String
    /// Each site of either run, by origin: whether NEW has it, and its cookies compared.
    public var sites: [(site: String, inNew: Bool, comparison: BaselineComparison)]

    public init(old: AuditSnapshot, new: AuditSnapshot) {
        (self.old, self.new) = (old.path, new.path)
        var sites: [(String, Bool, BaselineComparison)] = []
        for site in Set(old.sites.keys).union(new.sites.keys).sorted() {
            let after = new.sites[site]?.cookies
            let states = (old.states(of: site), new.states(of: site))
            sites.append(
                (
                    site, after != nil,
                    BaselineComparison(
                        from: old.path, before: old.sites[site]?.cookies, after: after ?? [],
                        states: states.0.isEmpty || states.1.isEmpty ? nil : states)
                ))
        }
        self.sites = sites
    }

    public func count(_ kind: CookieChange.Kind) -> Int { sites.reduce(0) { $0 + $1.comparison.count(kind) } }

    public var counts: String {
        CookieChange.Kind.allCases.map { "\(count($0)) \($0.rawValue)" }.joined(separator: ", ")
    }

    /// A line per cookie of a kind in `kinds`, named by site.
    public func failures(of kinds: Set<String>) -> [String] {
        sites.flatMap { $0.comparison.failures(of: kinds, site: $0.site) }
    }

    public var json: JSONValue {
        .object([
            ("old", .string(old)), ("new", .string(new)),
            ("counts", .object(CookieChange.Kind.allCases.map { ($0.rawValue, .int(Int64(count($0)))) })),
            (
                "sites",
                .array(
                    sites.map { s in
                        .object([
                            ("site", .string(s.site)), ("inOld", .bool(s.comparison.siteInBaseline)),
                            ("inNew", .bool(s.inNew)),
                            ("cookies", .array(s.comparison.rows.map(\.json))),
                        ])
                    })
            ),
        ])
    }

    public var text: TerminalText {
        var out: TerminalText = "\(old) → \(new): \(counts)\n"
        for s in sites {
            let shown = s.comparison.rows.filter { $0.kind != .same }
            out += "\n\(s.site): \(s.comparison.counts)"
            out += s.comparison.siteInBaseline ? (s.inNew ? "\n" : " (not in \(new))\n") : " (not in \(old))\n"
            for row in shown { out += "  \(row.line)\n" }
        }
        return out
    }

    /// JUnit: a suite per site, a case per cookie, failed when it is new, changed or gone.
    public var junit: String {
        var report = JUnitReport()
        for s in sites {
            for row in s.comparison.rows {
                let failed = row.kind != .same
                report.add(
                    suite: s.site, name: "\(row.name) (\(row.domain)\(row.path))",
                    failure: failed ? (row.kind.rawValue, row.line, row.line) : nil, output: nil)
            }
        }
        return report.text(name: "cookie-proxy report diff")
    }

    /// SARIF 2.1.0: a result per cookie that is new, changed or gone (`cookie-new`, `cookie-changed`,
    /// `cookie-gone`), at its site.
    public func sarif(toolVersion: String, time: Int64) -> String {
        var report = FindingsReport()
        for s in sites {
            for row in s.comparison.rows where row.kind != .same {
                report.add(
                    .init(host: row.domain, cookie: row.name, code: "cookie-\(row.kind.rawValue)"), level: .warning,
                    url: s.site, time: time, message: row.line)
            }
        }
        return report.sarif(toolVersion: toolVersion)
    }
}
