import CookieKit
import JSONStream
import Terminal

/// The sites of `audit --browser --urls FILE`: one start URL per line; blank lines and `#` comments (a line's rest
/// after a `#` that starts it or follows a blank) are skipped. A site is the start URL's origin (scheme, host,
/// port): two lines of one site are refused, as is a line that is not an http(s) URL — each with its line number.
public struct FleetList: Sendable, Equatable {
    public struct Site: Sendable, Equatable {
        /// The start URL as written.
        public var url: String
        /// The origin, `https://shop.example:443`: what names the site in every report and baseline.
        public var site: String
        /// Its folder under `--out`: `shop.example-443` (letters, digits, `.`, `-` and `_` only).
        public var folder: String
        public var line: Int
    }

    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public var sites: [Site]

    public init(sites: [Site]) { self.sites = sites }

    public init(text: String, file: String) throws(Failure) {
        var sites: [Site] = []
        var seen: [String: Int] = [:]
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = Substring(raw)
            if let hash = line.indices.first(where: {
                line[$0] == "#" && ($0 == line.startIndex || line[line.index(before: $0)].isWhitespace)
            }) {
                line = line[..<hash]
            }
            let url = line.trimmingBlanks
            guard !url.isEmpty else { continue }
            guard let site = Self.site(of: url) else {
                throw Failure(
                    description:
                        "\(file):\(i + 1): '\(TerminalText.escape(url))' is not an http:// or https:// URL with a host")
            }
            if let earlier = seen[site.site] {
                throw Failure(
                    description: "\(file):\(i + 1): \(site.site) is already on line \(earlier): a site is audited once")
            }
            seen[site.site] = i + 1
            sites.append(Site(url: url, site: site.site, folder: site.folder, line: i + 1))
        }
        guard !sites.isEmpty else { throw Failure(description: "\(file): no URL in it (one start URL per line)") }
        self.sites = sites
    }

    /// A start URL's site and folder; nil when it is not an http(s) URL with a host.
    public static func site(of url: String) -> (site: String, folder: String)? {
        guard let u = RequestURL(url), u.scheme == "http" || u.scheme == "https", !u.host.isEmpty else { return nil }
        let port = u.port ?? (u.scheme == "https" ? 443 : 80)
        let host = u.host.lowercased()
        let shown = host.contains(":") ? "[\(host)]" : host
        let folder = String(
            String.UnicodeScalarView(
                "\(host)-\(port)".unicodeScalars.map {
                    $0.properties.isASCIIHexDigit || ("a"..."z").contains($0) || $0 == "." || $0 == "-" ? $0 : "_"
                }))
        return ("\(u.scheme)://\(shown):\(port)", folder)
    }

    /// `--shard K/N`: the sites whose shard is K (1 to N). A site's shard is a hash of its origin (FNV-1a, 64
    /// bits) modulo N: the same in every run and on every machine, whatever else is in the list or its order.
    public func shard(_ k: Int, of n: Int) -> [Site] {
        sites.filter { Self.shard(of: $0.site, among: n) == k }
    }

    /// `--shard K/N` read: K from 1 to N, or `JOB_COMPLETION_INDEX/N` (a Kubernetes Indexed Job's index, 0-based,
    /// from `environment`).
    public static func shard(_ text: String, environment: [String: String]) throws(Failure) -> (Int, Int) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let n = Int(parts[1]), (1...10_000).contains(n) else {
            throw Failure(description: "--shard '\(text)' is K/N, e.g. 2/5 (N from 1 to 10000)")
        }
        if parts[0] == "JOB_COMPLETION_INDEX" {
            let given = environment["JOB_COMPLETION_INDEX"]
            guard let index = given.flatMap({ Int($0) }), (0..<n).contains(index) else {
                throw Failure(
                    description:
                        "--shard JOB_COMPLETION_INDEX/\(n): the variable is \(given.map { "'\($0)'" } ?? "not set"), not an index from 0 to \(n - 1)"
                )
            }
            return (index + 1, n)
        }
        guard let k = Int(parts[0]), (1...n).contains(k) else {
            throw Failure(description: "--shard '\(text)': K is from 1 to \(n)")
        }
        return (k, n)
    }

    public static func shard(of site: String, among n: Int) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in site.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return Int(hash % UInt64(n)) + 1
    }
}

extension Substring {
    var trimmingBlanks: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}

/// One site of a fleet as `fleet.json` records it: what the fleet's report, a later run's baseline and
/// `report merge` read back. Built from the site's scan, or read from a `fleet.json` row; the two are the same
/// JSON (``json`` ∘ ``init(json:)`` is the identity).
public struct FleetSite: Sendable {
    public var site: String
    public var url: String
    public var folder: String
    public var engine: String
    public var pagesVisited: Int
    public var pagesReached: Int
    /// Each page that had a problem: `URL [state]: problem`.
    public var problems: [String]
    public var cookies: [RecordedCookie]
    public var refused: Int
    /// The consent states visited, in the audit's order.
    public var states: [String]
    /// The consent states that were not applied, with why.
    public var consent: [String]
    /// What `--fail-on` failed on, a line each.
    public var failures: [String]
    /// Why the site could not be audited at all (no browser, no proxy).
    public var error: String?
    public var baseline: BaselineComparison?

    /// 0 passed, 1 failed on `--fail-on`, 2 not audited (an error, or no page reached).
    public var status: Int32 { error != nil || pagesReached == 0 ? 2 : failures.isEmpty ? 0 : 1 }

    public init(_ site: FleetList.Site, scan: SiteScan, failures: [String]) {
        (self.site, url, folder, engine) = (site.site, site.url, site.folder, scan.engine)
        pagesVisited = scan.pages.count
        pagesReached = scan.pages.filter(\.reached).count
        problems = scan.pages.compactMap { p in p.problem.map { "\(p.url) [\(p.state.rawValue)]: \($0)" } }
        cookies = scan.cookies.map(RecordedCookie.init).sorted {
            ($0.domain, $0.name, $0.path) < ($1.domain, $1.name, $1.path)
        }
        refused = scan.refused.count
        states = scan.states.map(\.state.rawValue)
        consent = scan.states.filter { !$0.applied }.map { "\($0.state.rawValue): \($0.detail)" }
        self.failures = failures
        baseline = scan.baseline
    }

    /// A site that could not be audited.
    public init(_ site: FleetList.Site, engine: String, error: String) {
        (self.site, url, folder, self.engine, self.error) = (site.site, site.url, site.folder, engine, error)
        (pagesVisited, pagesReached, problems, cookies, refused, consent, failures) = (0, 0, [], [], 0, [], [])
        states = []
    }

    public var json: JSONValue {
        var byCategory: [(String, JSONValue)] = []
        for category in CookieCategory.allCases {
            let n = cookies.filter { $0.category == category.rawValue }.count
            if n > 0 { byCategory.append((category.rawValue, .int(Int64(n)))) }
        }
        var findings: [String: Int] = [:]
        for c in cookies { for f in c.findings { findings[f, default: 0] += 1 } }
        return .object([
            ("site", .string(site)), ("url", .string(url)), ("folder", .string(folder)), ("engine", .string(engine)),
            ("status", .int(Int64(status))), ("error", JSONValue(error)),
            ("pages", .object([("visited", .int(Int64(pagesVisited))), ("reached", .int(Int64(pagesReached)))])),
            ("problems", .array(problems.map { .string($0) })),
            ("consentStates", .array(states.map { .string($0) })),
            ("consentNotApplied", .array(consent.map { .string($0) })),
            (
                "cookies",
                .object([
                    ("total", .int(Int64(cookies.count))), ("byCategory", .object(byCategory)),
                    (
                        "byParty",
                        .object(
                            ["first", "third"].map { p in (p, .int(Int64(cookies.filter { $0.party == p }.count))) })
                    ),
                ])
            ),
            ("refused", .int(Int64(refused))),
            ("findings", .object(findings.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("failures", .array(failures.map { .string($0) })),
            ("baseline", baseline.map(\.json) ?? .null),
            ("cookieList", .array(cookies.map(\.json))),
        ])
    }

    /// A `fleet.json` site read back; nil when it is not one.
    public init?(json v: JSONValue) {
        guard let site = v["site"]?.string, let url = v["url"]?.string, let folder = v["folder"]?.string,
            let engine = v["engine"]?.string
        else { return nil }
        (self.site, self.url, self.folder, self.engine) = (site, url, folder, engine)
        error = v["error"]?.string
        pagesVisited = Int(v["pages"]?["visited"]?.int ?? 0)
        pagesReached = Int(v["pages"]?["reached"]?.int ?? 0)
        problems = v["problems"]?.array?.compactMap(\.string) ?? []
        states = v["consentStates"]?.array?.compactMap(\.string) ?? []
        consent = v["consentNotApplied"]?.array?.compactMap(\.string) ?? []
        refused = Int(v["refused"]?.int ?? 0)
        failures = v["failures"]?.array?.compactMap(\.string) ?? []
        baseline = v["baseline"].flatMap(BaselineComparison.init(json:))
        cookies = v["cookieList"]?.array?.compactMap(RecordedCookie.init(json:)) ?? []
    }
}

/// `fleet.json`, `fleet.txt` and `fleet.html`: every site of a fleet, a row each (sorted by site, so that a run
/// and its shards merged read alike), and the fleet-wide table of cookies by name across sites.
public struct FleetReport: Sendable {
    public var engine: String
    public var sites: [FleetSite]
    /// The shards the report holds (`1/3`), empty for a run of the whole list.
    public var shards: [String]
    /// The sites of the list that were not audited (an interrupt), by origin.
    public var notVisited: [String]

    public init(engine: String, sites: [FleetSite], shards: [String] = [], notVisited: [String] = []) {
        self.engine = engine
        self.sites = sites.sorted { $0.site < $1.site }
        (self.shards, self.notVisited) = (shards.sorted(), notVisited.sorted())
    }

    /// The worst site's status: 2 when a site could not be audited, 1 when one failed, else 0.
    public var status: Int32 { sites.map(\.status).max() ?? 2 }

    /// A cookie name across the fleet: the sites that set it, with its categories, parties and who set it.
    public struct NameRow: Sendable {
        public var name: String
        public var sites: [String]
        public var categories: [String]
        public var parties: [String]
        public var setBy: [String]
    }

    /// Names set on the most sites first, then by name.
    public var names: [NameRow] {
        var rows: [String: NameRow] = [:]
        for s in sites {
            for c in s.cookies {
                var row = rows[c.name] ?? NameRow(name: c.name, sites: [], categories: [], parties: [], setBy: [])
                for (keyPath, value) in [
                    (\NameRow.sites, s.site), (\.categories, c.category), (\.parties, c.party),
                    (\.setBy, c.setBy),
                ]
                where !row[keyPath: keyPath].contains(value) {
                    row[keyPath: keyPath].append(value)
                }
                rows[c.name] = row
            }
        }
        return rows.values.map { r in
            var r = r
            (r.categories, r.parties, r.setBy) = (r.categories.sorted(), r.parties.sorted(), r.setBy.sorted())
            return r
        }
        .sorted { ($1.sites.count, $0.name) < ($0.sites.count, $1.name) }
    }

    /// The comparison's counts over every site compared, nil when no site was.
    public var changes: [(CookieChange.Kind, Int)]? {
        let compared = sites.compactMap(\.baseline)
        guard !compared.isEmpty else { return nil }
        return CookieChange.Kind.allCases.map { kind in (kind, compared.reduce(0) { $0 + $1.count(kind) }) }
    }

    public var json: JSONValue {
        .object([
            (
                "fleet",
                .object([
                    ("engine", .string(engine)), ("sites", .int(Int64(sites.count))),
                    ("status", .int(Int64(status))),
                    ("shards", .array(shards.map { .string($0) })),
                    ("notVisited", .array(notVisited.map { .string($0) })),
                    ("changes", changes.map { .object($0.map { ($0.0.rawValue, .int(Int64($0.1))) }) } ?? .null),
                ])
            ),
            ("sites", .array(sites.map(\.json))),
            (
                "cookies",
                .array(
                    names.map { r in
                        .object([
                            ("name", .string(r.name)), ("sites", .array(r.sites.map { .string($0) })),
                            ("categories", .array(r.categories.map { .string($0) })),
                            ("parties", .array(r.parties.map { .string($0) })),
                            ("setBy", .array(r.setBy.map { .string($0) })),
                        ])
                    })
            ),
        ])
    }

    /// `fleet.json` read back.
    public init(json v: JSONValue, file: String) throws(ReportReadFailure) {
        guard let fleet = v["fleet"], let engine = fleet["engine"]?.string, let rows = v["sites"]?.array else {
            throw ReportReadFailure(description: "\(file) is not a fleet.json (no fleet.engine or sites)")
        }
        var sites: [FleetSite] = []
        for (i, row) in rows.enumerated() {
            guard let site = FleetSite(json: row) else {
                throw ReportReadFailure(description: "\(file): sites[\(i)] is not a site of a fleet")
            }
            sites.append(site)
        }
        self.init(
            engine: engine, sites: sites, shards: fleet["shards"]?.array?.compactMap(\.string) ?? [],
            notVisited: fleet["notVisited"]?.array?.compactMap(\.string) ?? [])
    }

    /// For a person (escaped for a terminal: every name is a site's).
    public var text: TerminalText {
        var out: TerminalText = "\(engine): \(sites.count) site(s)"
        if !shards.isEmpty { out += " (shards \(shards.joined(separator: ", ")))" }
        out += "; status \(status)\n"
        if !notVisited.isEmpty { out += "  not visited (interrupted): \(notVisited.joined(separator: ", "))\n" }
        if let changes {
            out += "  since the baseline: \(changes.map { "\($0.1) \($0.0.rawValue)" }.joined(separator: ", "))\n"
        }
        for s in sites {
            out += "\n\(s.site)  [\(s.status == 0 ? "ok" : s.status == 1 ? "FAILS" : "NOT AUDITED")]"
            out += "  pages \(s.pagesReached)/\(s.pagesVisited) reached, \(s.cookies.count) cookie(s)"
            out += " (\(s.cookies.filter { $0.party == "third" }.count) third-party), \(s.refused) refused\n"
            if let error = s.error { out += "  error: \(error)\n" }
            let categories = CookieCategory.allCases.compactMap { c -> String? in
                let n = s.cookies.filter { $0.category == c.rawValue }.count
                return n > 0 ? "\(n) \(c.rawValue)" : nil
            }
            if !categories.isEmpty { out += "  categories: \(categories.joined(separator: ", "))\n" }
            for c in s.consent { out += "  consent \(c)\n" }
            for p in s.problems.prefix(5) { out += "  page \(p)\n" }
            if s.problems.count > 5 { out += "  … \(s.problems.count - 5) more page problem(s) in its report\n" }
            for f in s.failures { out += "  fails: \(f)\n" }
            if let b = s.baseline {
                out += "  since the baseline: \(b.counts)\(b.siteInBaseline ? "" : " (the site is not in it)")\n"
                for row in b.rows where row.kind != .same { out += "    \(row.line)\n" }
            }
        }
        let names = self.names
        if !names.isEmpty {
            out += "\nCookies by name across the fleet:\n"
            for r in names {
                out += "  \(r.name)  \(r.sites.count) site(s), \(r.categories.joined(separator: "/"))"
                out += ", \(r.parties.joined(separator: "/"))-party, set by \(r.setBy.joined(separator: "/"))\n"
            }
        }
        return out
    }

    /// `fleet.html`: one self-contained page (inline styles, no script), readable from 1024 to 1920 px wide.
    public var html: String {
        let e = SiteScan.escape
        var h = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Cookie audit of \(sites.count) sites</title>
            <style>
            body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 1.5rem 2rem; max-width: 1800px; color: #1d1d1f; }
            h1 { font-size: 1.5rem; margin: 0 0 .25rem; } h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; }
            .meta { color: #555; margin: 0 0 1rem; }
            table { border-collapse: collapse; width: 100%; }
            th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid #ddd; overflow-wrap: anywhere; }
            th { background: #f4f4f6; font-weight: 600; } .u { overflow-wrap: anywhere; }
            .tag { display: inline-block; padding: 0 .4rem; border-radius: .6rem; font-size: .85em; margin: 0 .2rem .2rem 0; background: #eee; }
            .bad { background: #fde2e1; color: #8a1c13; } .good { background: #e3f5e6; color: #185c25; } .warn { background: #fff2cc; color: #6b4e00; }
            </style></head><body>
            <h1>Cookie audit of \(sites.count) sites</h1>
            <p class="meta">\(e(engine))\(shards.isEmpty ? "" : " · shards " + e(shards.joined(separator: ", "))) · status \(status)</p>

            """
        if !notVisited.isEmpty {
            h +=
                "<p class=\"meta\">\(SiteScan.tag("interrupted", "warn")) not visited: \(e(notVisited.joined(separator: ", ")))</p>\n"
        }
        h += "<h2>Sites</h2>\n<table><tr><th>site</th><th>status</th><th>pages reached</th><th>cookies</th>"
        h += "<th>third-party</th><th>by category</th><th>refused</th><th>failures</th></tr>\n"
        for s in sites {
            let status =
                s.status == 0
                ? SiteScan.tag("ok", "good") : SiteScan.tag(s.status == 1 ? "fails" : "not audited", "bad")
            h += "<tr><td class=\"u\"><a href=\"\(e(s.folder))/report.html\">\(e(s.site))</a></td><td>\(status)</td>"
            h += "<td>\(s.pagesReached)/\(s.pagesVisited)</td><td>\(s.cookies.count)</td>"
            h += "<td>\(s.cookies.filter { $0.party == "third" }.count)</td><td>"
            h += CookieCategory.allCases.compactMap { c -> String? in
                let n = s.cookies.filter { $0.category == c.rawValue }.count
                return n > 0 ? SiteScan.tag("\(n) \(c.rawValue)", c.needsConsent ? "warn" : "") : nil
            }
            .joined()
            h += "</td><td>\(s.refused)</td><td class=\"u\">"
            h += (s.error.map { [$0] } ?? s.failures).map(e).joined(separator: "<br>")
            h += "</td></tr>\n"
        }
        h += "</table>\n"
        if let changes {
            h += "<h2>Since the baseline</h2>\n<p class=\"meta\">"
            h += e(changes.map { "\($0.1) \($0.0.rawValue)" }.joined(separator: ", ")) + "</p>\n"
            for s in sites {
                guard let b = s.baseline, b.rows.contains(where: { $0.kind != .same }) || !b.siteInBaseline else {
                    continue
                }
                h += "<h3>\(e(s.site))</h3>\n" + b.html()
            }
        }
        h += "<h2>Cookies by name across the fleet</h2>\n<table><tr><th>cookie</th><th>sites</th><th>category</th>"
        h += "<th>party</th><th>set by</th></tr>\n"
        for r in names {
            h += "<tr><td class=\"u\"><code>\(e(r.name))</code></td><td class=\"u\">\(r.sites.count): "
            h += e(r.sites.joined(separator: ", ")) + "</td><td>\(e(r.categories.joined(separator: ", ")))</td>"
            h += "<td>\(e(r.parties.joined(separator: ", ")))</td><td>\(e(r.setBy.joined(separator: ", ")))</td></tr>\n"
        }
        return h + "</table>\n</body></html>\n"
    }
}

/// A report that cannot be read back (a baseline, a shard's fleet): what is wrong with it, naming the file.
public struct ReportReadFailure: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }

    /// `text` read as one JSON document (nothing after it), or why not.
    static func json(_ text: String, file: String) throws(ReportReadFailure) -> JSONValue {
        do {
            var reader = JSONReader(bytes: Array(text.utf8))
            let value = try reader.readValue("")
            try reader.finish()
            return value
        } catch {
            throw ReportReadFailure(description: "\(file) is not JSON: \(error)")
        }
    }
}

extension FleetReport {
    /// `fleet.json`'s text read back.
    public init(text: String, file: String) throws(ReportReadFailure) {
        try self.init(json: try ReportReadFailure.json(text, file: file), file: file)
    }
}
