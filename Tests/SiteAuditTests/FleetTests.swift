import CookieKit
import JSONStream
@testable import SiteAudit
import Testing

@Suite struct FleetListTests {
    @Test func sitesAreReadInOrderWithCommentsAndBlankLinesSkipped() throws {
        let list = try FleetList(
            text: """
                # the shops
                https://shop.example/

                http://blog.example:8080/start   # a comment after a blank
                https://Shop.Example:8443/a#fragment
                \thttps://[::1]:9000/
                """, file: "sites.txt")
        #expect(
            list.sites.map(\.site) == [
                "https://shop.example:443", "http://blog.example:8080", "https://shop.example:8443",
                "https://[::1]:9000",
            ])
        #expect(list.sites.map(\.folder) == ["shop.example-443", "blog.example-8080", "shop.example-8443", "__1-9000"])
        #expect(list.sites.map(\.line) == [2, 4, 5, 6])
        #expect(list.sites[2].url == "https://Shop.Example:8443/a#fragment")
    }

    @Test(arguments: [
        (
            "https://a.example/\nftp://b.example/\n",
            "sites.txt:2: 'ftp://b.example/' is not an http:// or https:// URL with a host"
        ),
        ("https://a.example/\nnot a url\n", "sites.txt:2: 'not a url' is not an http:// or https:// URL with a host"),
        (
            "https://a.example/x\n\nhttps://A.example:443/y\n",
            "sites.txt:3: https://a.example:443 is already on line 1: a site is audited once"
        ),
        ("# nothing\n\n", "sites.txt: no URL in it (one start URL per line)"),
        (
            "https://a.example/\n\u{1B}[31mhttps://b\n",
            "sites.txt:2: '\\x1b[31mhttps://b' is not an http:// or https:// URL with a host"
        ),
    ])
    func aBadLineIsRefusedWithItsLineNumber(text: String, says: String) {
        #expect(throws: FleetList.Failure(description: says)) { try FleetList(text: text, file: "sites.txt") }
    }

    /// `--shard` read: K/N with K from 1, or Kubernetes' 0-based index from the environment; each mistake says why.
    @Test(arguments: [
        ("2/5", [:], "2/5"), ("5/5", [:], "5/5"), ("JOB_COMPLETION_INDEX/4", ["JOB_COMPLETION_INDEX": "3"], "4/4"),
        ("0/5", [:], "--shard '0/5': K is from 1 to 5"), ("6/5", [:], "--shard '6/5': K is from 1 to 5"),
        ("2", [:], "--shard '2' is K/N, e.g. 2/5 (N from 1 to 10000)"),
        ("1/0", [:], "--shard '1/0' is K/N, e.g. 2/5 (N from 1 to 10000)"),
        (
            "JOB_COMPLETION_INDEX/4", [:],
            "--shard JOB_COMPLETION_INDEX/4: the variable is not set, not an index from 0 to 3"
        ),
        (
            "JOB_COMPLETION_INDEX/4", ["JOB_COMPLETION_INDEX": "4"],
            "--shard JOB_COMPLETION_INDEX/4: the variable is '4', not an index from 0 to 3"
        ),
    ])
    func aShardIsKOfNOrKubernetesIndexAndAMistakeSaysWhy(text: String, environment: [String: String], read: String) {
        do {
            let (k, n) = try FleetList.shard(text, environment: environment)
            #expect("\(k)/\(n)" == read)
        } catch {
            #expect(error.description == read)
        }
    }

    @Test(arguments: [1, 2, 3, 7])
    func theShardsAreDisjointCoverTheListAndDoNotDependOnItsOrder(n: Int) throws {
        let urls = (1...40).map { "https://site\($0).example/" }
        let list = try FleetList(text: urls.joined(separator: "\n"), file: "f")
        let reversed = try FleetList(text: urls.reversed().joined(separator: "\n"), file: "f")
        var seen: [String] = []
        for k in 1...n {
            let part = list.shard(k, of: n).map(\.site)
            #expect(Set(part) == Set(reversed.shard(k, of: n).map(\.site)))
            seen += part
        }
        #expect(seen.count == 40)
        #expect(Set(seen) == Set(list.sites.map(\.site)))
        if n == 3 {
            // Every part has some of the 40 sites (FNV-1a spreads them).
            #expect((1...3).allSatisfy { !list.shard($0, of: 3).isEmpty })
        }
    }
}

@Suite struct BaselineComparisonTests {
    static func cookie(
        _ name: String, domain: String = "shop.example", path: String = "/", lifetime: Int64? = 86_400,
        sameSite: String = "Lax", category: String = "unknown", states: [String] = ["none"],
        partition: String? = nil, secure: Bool = true
    ) -> RecordedCookie {
        var c = RecordedCookie(
            json: .object([("name", .string(name)), ("domain", .string(domain)), ("path", .string(path))]))!
        (c.lifetime, c.sameSite, c.category, c.states, c.partitionKey, c.secure) = (
            lifetime, sameSite, category, states, partition, secure
        )
        (c.party, c.setBy) = ("first", "http")
        return c
    }

    /// before, after → the change and its facts (`fact:before:after`).
    @Test(arguments: [
        ([cookie("sid")], [cookie("sid")], "same", ""),
        ([], [cookie("sid")], "new", ""),
        ([cookie("sid")], [], "gone", ""),
        ([cookie("sid")], [cookie("sid", lifetime: 86_398)], "same", ""),
        ([cookie("sid", lifetime: 31_536_000)], [cookie("sid", lifetime: 31_449_600)], "same", ""),
        ([cookie("sid", lifetime: 86_400)], [cookie("sid", lifetime: 604_800)], "changed", "lifetime:1 day:7 days"),
        ([cookie("sid")], [cookie("sid", lifetime: nil)], "changed", "lifetime:1 day:session"),
        (
            [cookie("sid")], [cookie("sid", sameSite: "None", category: "marketing")], "changed",
            "sameSite:Lax:None category:unknown:marketing"
        ),
        ([cookie("sid")], [cookie("sid", states: ["none", "accept"])], "changed", "states:none:none,accept"),
        ([cookie("sid")], [cookie("sid", secure: false)], "changed", "secure:true:false"),
        ([cookie("sid", path: "/a")], [cookie("sid", path: "/b")], "new gone", ""),
    ])
    func eachCookieIsNewGoneChangedOrSameByItsFacts(
        before: [RecordedCookie], after: [RecordedCookie], kinds: String, facts: String
    ) {
        let c = BaselineComparison(from: "old", before: before, after: after)
        #expect(c.rows.map(\.kind.rawValue).joined(separator: " ") == kinds)
        #expect(
            c.rows.flatMap(\.facts).map { "\($0.fact):\($0.before):\($0.after)" }.joined(separator: " ") == facts)
    }

    @Test func partitionedAndUnpartitionedCookiesOfOneIdentityArePairedByPartition() {
        let before = [Self.cookie("ad", partition: "https://a.example"), Self.cookie("ad")]
        let after = [Self.cookie("ad"), Self.cookie("ad", sameSite: "None", partition: "https://a.example")]
        let c = BaselineComparison(from: "old", before: before, after: after)
        #expect(c.rows.map(\.kind) == [.changed, .same])
        #expect(c.rows[0].partitionKey == "https://a.example")
    }

    @Test func aSiteNotInTheBaselineHasEveryCookieNewAndTheRowsListNewAndChangedFirst() {
        #expect(
            BaselineComparison(from: "old", before: nil, after: [Self.cookie("b"), Self.cookie("a")]).rows.map(\.name)
                == ["a", "b"])
        let c = BaselineComparison(
            from: "old", before: [Self.cookie("a"), Self.cookie("g"), Self.cookie("c")],
            after: [Self.cookie("a"), Self.cookie("n"), Self.cookie("c", lifetime: nil)])
        #expect(c.rows.map { "\($0.kind.rawValue) \($0.name)" } == ["new n", "changed c", "gone g", "same a"])
        #expect(c.counts == "1 new, 1 changed, 1 gone, 1 same")
        #expect(
            c.failures(of: ["new", "gone"], site: "https://shop.example:443") == [
                "https://shop.example:443: new: n (shop.example/)", "https://shop.example:443: gone: g (shop.example/)",
            ])
    }

    /// Runs that visited different consent states are compared over the states both visited: an accept-only
    /// cookie is not gone from a run of `none` alone, and a cookie's states are read within those.
    @Test func runsOfDifferentConsentStatesAreComparedOverTheStatesBothVisited() {
        let before = [
            Self.cookie("sid", states: ["none", "reject", "accept"]), Self.cookie("_ga", states: ["accept"]),
            Self.cookie("tmp", states: ["none"]),
        ]
        let after = [Self.cookie("sid", states: ["none"]), Self.cookie("new", states: ["none"])]
        let c = BaselineComparison(
            from: "old", before: before, after: after, states: (["none", "reject", "accept"], ["none"]))
        #expect(c.rows.map { "\($0.kind.rawValue) \($0.name)" } == ["new new", "gone tmp", "same sid"])
        #expect(c.comparedStates == ["none"])
        #expect(c.text.text.contains("compared over the consent states both runs visited: none"))
        let same = BaselineComparison(from: "old", before: before, after: before, states: (["none"], ["none"]))
        #expect(same.comparedStates == nil && same.rows.allSatisfy { $0.kind == .same })
    }

    @Test func theComparisonReadsBackFromItsJSON() throws {
        let c = BaselineComparison(
            from: "runs/monday", before: [Self.cookie("a"), Self.cookie("g")],
            after: [Self.cookie("a", sameSite: "None"), Self.cookie("n", partition: "https://x.example")])
        let back = try #require(BaselineComparison(json: c.json))
        #expect(back.json == c.json)
        #expect(back.rows == c.rows)
    }
}

@Suite struct FleetReportTests {
    static func site(_ origin: String, _ cookies: [RecordedCookie], failures: [String] = [], reached: Int = 3)
        -> FleetSite
    {
        let s = FleetList.site(of: origin + "/")!
        var f = FleetSite(
            .init(url: origin + "/", site: s.site, folder: s.folder, line: 1), engine: "chromium", error: "x")
        (f.error, f.pagesVisited, f.pagesReached, f.cookies, f.failures) = (nil, 3, reached, cookies, failures)
        return f
    }

    @Test func aFleetReadsBackFromItsJSONAndItsStatusIsTheWorstSites() throws {
        func c(_ name: String, category: String = "unknown") -> RecordedCookie {
            BaselineComparisonTests.cookie(name, category: category)
        }
        var b = Self.site("https://b.example", [c("sid", category: "necessary"), c("_ga", category: "analytics")])
        b.baseline = BaselineComparison(from: "old", before: [c("sid")], after: b.cookies)
        let a = Self.site("https://a.example", [c("_ga", category: "analytics")], failures: ["_ga: set-before-consent"])
        let fleet = FleetReport(engine: "chromium", sites: [b, a], shards: ["2/3"])
        #expect(fleet.sites.map(\.site) == ["https://a.example:443", "https://b.example:443"])
        #expect(fleet.status == 1)
        #expect(
            FleetReport(engine: "chromium", sites: [a, Self.site("https://c.example", [], reached: 0)]).status == 2)
        let back = try FleetReport(json: fleet.json, file: "fleet.json")
        #expect(back.json == fleet.json)
        #expect(
            fleet.names.map { "\($0.name) \($0.sites.count) \($0.categories)" } == [
                "_ga 2 [\"analytics\"]", "sid 1 [\"necessary\"]",
            ])
        #expect(fleet.changes?.map { "\($0.1) \($0.0.rawValue)" } == ["1 new", "1 changed", "0 gone", "0 same"])
    }

    @Test func aSitesNamesAreEscapedInTheTextAndTheHTML() {
        func c(_ name: String, category: String = "unknown") -> RecordedCookie {
            BaselineComparisonTests.cookie(name, category: category)
        }
        let fleet = FleetReport(
            engine: "chromium", sites: [Self.site("https://a.example", [c("\u{1B}[2Jx<script>")])])
        #expect(!fleet.text.text.contains("\u{1B}"))
        #expect(!fleet.html.contains("<script>"))
        #expect(fleet.html.contains("&lt;script&gt;"))
    }

    @Test func aSnapshotIsReadFromAFleetOrFromOneReportAndAnythingElseIsRefused() throws {
        func c(_ name: String, category: String = "unknown") -> RecordedCookie {
            BaselineComparisonTests.cookie(name, category: category)
        }
        let fleet = FleetReport(engine: "chromium", sites: [Self.site("https://a.example", [c("sid")])])
        let fromFleet = try AuditSnapshot(text: fleet.json.serialized, file: "f/fleet.json", path: "f")
        #expect(fromFleet.cookies(of: "https://a.example:443")?.map(\.name) == ["sid"])
        let report =
            #"{"engine":"chromium","start":"https://b.example/x","cookies":[{"name":"a","domain":"b.example","path":"/"}]}"#
        let fromReport = try AuditSnapshot(text: report, file: "report.json", path: "report.json")
        #expect(fromReport.cookies(of: "https://b.example:443")?.map(\.name) == ["a"])
        #expect(throws: ReportReadFailure.self) {
            try AuditSnapshot(text: #"{"engines":{}}"#, file: "r.json", path: "r.json")
        }
        #expect(throws: ReportReadFailure.self) {
            try AuditSnapshot(text: "[1", file: "r.json", path: "r.json")
        }
        let diff = SnapshotDiff(old: fromFleet, new: fromReport)
        #expect(
            diff.sites.map { "\($0.site) \($0.inNew) \($0.comparison.counts)" } == [
                "https://a.example:443 false 0 new, 0 changed, 1 gone, 0 same",
                "https://b.example:443 true 1 new, 0 changed, 0 gone, 0 same",
            ])
    }
}

@Suite struct SitemapTests {
    @Test(arguments: [
        ("User-agent: *\nDisallow: /admin\nSitemap: https://a.example/s1.xml\n", ["https://a.example/s1.xml"]),
        (
            "sitemap:https://a.example/s1.xml\r\n  SITEMAP:  https://cdn.example/s2.xml  \r\nSitemap: https://a.example/s1.xml",
            ["https://a.example/s1.xml", "https://cdn.example/s2.xml"]
        ),
        ("Sitemap: /relative.xml\nSitemap: ftp://a.example/s.xml\nSitemaps: https://a.example/x.xml\n", []),
        ("# Sitemap: https://a.example/commented.xml\n", []),
    ])
    func robotsSitemapLinesAreAbsoluteHTTPURLsInOrderWithoutRepeats(robots: String, named: [String]) {
        #expect(Sitemaps.named(inRobots: robots) == named)
    }

    @Test func aSitemapIsAnIndexOrAListOfPagesAndAnythingElseIsNone() {
        #expect(Sitemaps.read(#"{"root":"sitemapindex","locs":["https://a.example/p.xml"]}"#)?.index == true)
        #expect(
            Sitemaps.read(#"{"root":"urlset","locs":["https://a.example/","https://a.example/b"]}"#)?.locations.count
                == 2)
        #expect(Sitemaps.read(#"{"root":"","locs":["https://a.example/"]}"#) == nil)
        #expect(Sitemaps.read("not json") == nil)
    }
}
