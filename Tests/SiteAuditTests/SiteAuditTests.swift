import CookieKit
import SiteAudit
import Testing

@Suite struct CookieDatabaseTests {
    /// name → category and whether a wildcard row matched, from the compiled-in copy.
    @Test(arguments: [
        ("_ga", CookieCategory.analytics, false), ("_ga_ABC123", .analytics, true), ("_gid", .analytics, false),
        ("IDE", .marketing, false), ("_fbp", .marketing, false), ("PHPSESSID", .functional, false),
        ("sid", .unknown, false), ("consent", .unknown, false), ("", .unknown, false),
    ])
    func theShippedDatabaseFindsExactNamesThenPrefixesAndGuessesNothing(
        name: String, category: CookieCategory, wildcard: Bool
    ) {
        let row = CookieDatabase.shipped.row(for: name)
        #expect((row?.category ?? .unknown) == category, "\(name): \(String(describing: row))")
        #expect((row?.wildcard ?? false) == wildcard, "\(name)")
    }

    @Test func theLongestPrefixWinsAndAnExactRowBeatsEveryPrefix() {
        let db = CookieDatabase(
            tabSeparated: """
                1\tA\tFunctional\ta_\t\tsession\t1
                2\tB\tMarketing\ta_b_\t\t1 year\t1
                3\tC\tAnalytics\ta_b_c\t\t2 years\t0
                4\tD\tSecurity\tcsrf\t\tsession\t0
                malformed line
                """)
        #expect(db.count == 4)
        #expect(db.row(for: "a_x")?.id == "1")
        #expect(db.row(for: "a_b_x")?.id == "2")
        #expect(db.row(for: "a_b_c")?.id == "3")
        #expect(db.row(for: "a_b_c")?.category == .analytics)
        #expect(db.row(for: "csrf")?.category == .necessary)
        #expect(db.row(for: "b_") == nil)
    }
}

@Suite struct PageSampleTests {
    static let links =
        (1...8).map { "https://shop.test/p/\($0)" } + [
            "https://www.shop.test/about", "https://other.test/x", "mailto:a@shop.test", "https://shop.test/p/1#top",
            "http://shop.test/p/1?q=2", "javascript:void(0)",
        ]

    static func order(seed: UInt64, limit: Int = 100) -> [String] {
        var sample = PageSample(start: "https://shop.test/", limit: limit, seed: seed, suffixes: .system)
        var visited: [String] = []
        while let next = sample.next(visited: visited.count) {
            visited.append(next)
            if visited.count == 1 { sample.found(links.shuffled()) }
        }
        return visited
    }

    @Test func aSeedPicksTheSamePagesWhateverOrderThePageListsThem() {
        let a = Self.order(seed: 1)
        #expect(a == Self.order(seed: 1))
        #expect(a != Self.order(seed: 2))
        #expect(a.first == "https://shop.test/")
    }

    @Test func onlyTheSitesOwnPagesAreVisitedEachOnceUpToTheLimit() {
        let all = Self.order(seed: 7)
        // The 8 pages, www (same registrable domain), the query variant; not other.test, mailto, javascript, nor
        // the fragment of a page already queued.
        #expect(all.count == 11, "\(all)")
        #expect(Set(all).count == all.count)
        #expect(!all.contains { $0.contains("other.test") || $0.hasPrefix("mailto") || $0.contains("#") })
        #expect(all.contains("https://www.shop.test/about") && all.contains("http://shop.test/p/1?q=2"))
        #expect(Self.order(seed: 7, limit: 3) == Array(all.prefix(3)))
    }
}

@Suite struct SiteScanTests {
    static func stored(_ name: String, _ domain: String, expires: Double? = nil, partition: String? = nil)
        -> BrowserStoredCookie
    {
        BrowserStoredCookie(
            name: name, domain: domain, path: "/", expires: expires, secure: true, httpOnly: false, sameSite: "Lax",
            partitionKey: partition)
    }

    static let visits: [PageVisit] = [
        PageVisit(
            url: "https://shop.test/", state: .none, status: 200, problem: nil,
            lines: [
                ("https://shop.test/", "sid=1; Path=/; Secure"),
                ("https://ads.test/frame", "IDE=1; Path=/; Max-Age=3600; SameSite=None; Secure"),
            ],
            refused: [("https://shop.test/", "bad=1; Domain=x.test", ["InvalidDomain"])],
            store: [
                stored("sid", "shop.test"), stored("IDE", ".ads.test", expires: 1_003_600), stored("_ga", ".shop.test"),
            ],
            readAt: 1_000_000),
        PageVisit(
            url: "https://shop.test/p/1", state: .none, status: 200, problem: nil, lines: [],
            refused: [("https://shop.test/", "bad=1; Domain=x.test", ["InvalidDomain"])],
            store: [
                stored("sid", "shop.test"), stored("IDE", ".ads.test", expires: 1_003_600), stored("_ga", ".shop.test"),
            ],
            readAt: 1_000_000),
        PageVisit(
            url: "https://shop.test/", state: .accept, status: 200, problem: nil,
            lines: [("https://shop.test/", "sid=1; Path=/; Secure")], refused: [],
            store: [stored("sid", "shop.test"), stored("consent", "shop.test")], readAt: 1_000_000),
    ]

    @Test func theReportSaysWhoSetEachCookieWhereItFirstAppearedAndWhatWasThereBeforeConsent() {
        let scan = SiteScan.build(
            engine: "chromium", start: "https://shop.test/", seed: 1,
            states: [
                ConsentOutcome(state: .none, applied: true, detail: "no interaction"),
                ConsentOutcome(state: .accept, applied: true, detail: "clicked"),
            ], visits: Self.visits)
        let by = Dictionary(uniqueKeysWithValues: scan.cookies.map { ($0.name, $0) })
        #expect(scan.cookies.map(\.name) == ["sid", "IDE", "_ga", "consent"])
        #expect(by["sid"]?.setBy == "http" && by["sid"]?.party == "first" && by["sid"]?.states == [.none, .accept])
        #expect(by["IDE"]?.party == "third" && by["IDE"]?.setOn == "https://ads.test/frame")
        #expect(by["IDE"]?.lifetime == 3600 && by["IDE"]?.hostOnly == false && by["IDE"]?.domain == "ads.test")
        #expect(by["IDE"]?.findings.contains("set-before-consent") == true)
        // _ga: in the store with no line behind it (a script), analytics, before consent.
        #expect(by["_ga"]?.setBy == "script" && by["_ga"]?.setOn == "https://shop.test/")
        #expect(by["_ga"]?.category == .analytics && by["_ga"]?.findings == ["set-before-consent"])
        #expect(by["consent"]?.firstState == .accept && by["consent"]?.findings == [])
        #expect(by["sid"]?.lifetime == nil && by["sid"]?.category == .unknown && by["sid"]?.categorySource == "none")
        // The same refusal on two pages of one state is one entry, counted.
        #expect(scan.refused.count == 1 && scan.refused.first?.times == 2)
        #expect(scan.text.contains("_ga  .shop.test/  first-party, set by script"))
        #expect(scan.json.serialized.contains(#""firstSeen":{"page":"https://shop.test/","consent":"none"}"#))
    }
}
