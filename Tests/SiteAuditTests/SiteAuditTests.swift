import CookieKit
@testable import SiteAudit
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

/// Rows given with their places in the database's CSV (as the compiled-in copy keeps them, a file per category)
/// are read in the CSV's order whatever order their lines come in: the first row for a name is the one reported, and
/// of two equally long prefixes the first.
@Suite struct CookieDatabasePlaceTests {
    /// Place, ID, platform, category, name, domain, retention, wildcard.
    static let rows = [
        "2\tid-b\tB\tMarketing\tdc\t\t1 year\t0",
        "1\tid-a\tA\tFunctional\tdc\t\tsession\t0",
        "4\tid-d\tD\tAnalytics\tp_\t\t1 day\t1",
        "3\tid-c\tC\tMarketing\tp_\t\t1 year\t1",
    ]

    @Test(arguments: [
        ("as the lines were given", [0, 1, 2, 3]), ("in the CSV's order", [1, 0, 3, 2]),
        ("reversed", [3, 2, 1, 0]),
    ])
    func theCSVsFirstRowForANameIsReportedWhateverTheLinesOrder(_ order: String, _ lines: [Int]) {
        let db = CookieDatabase(tabSeparated: lines.map { Self.rows[$0] }.joined(separator: "\n"))
        #expect(db.count == 4, "\(order)")
        #expect(db.row(for: "dc")?.id == "id-a", "\(order)")
        #expect(db.row(for: "dc")?.category == .functional, "\(order)")
        #expect(db.row(for: "p_x")?.id == "id-c", "\(order)")
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
        -> BrowserCookie
    {
        BrowserCookie(
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
        #expect(scan.text.text.contains("_ga  .shop.test/  first-party, set by script"))
        #expect(scan.json.serialized.contains(#""firstSeen":{"page":"https://shop.test/","consent":"none"}"#))
    }
}

extension SiteScanTests {
    /// `report.txt` and `audit --browser`'s stdout: a cookie a hostile site set (its name, its domain, the page
    /// it was set on, a refused line's name) is shown escaped, one line each.
    @Test func theTextReportShowsTheSitesControlsEscaped() {
        let visits = [
            PageVisit(
                url: "https://shop.test/\u{1B}[2J", state: .none, status: 200, problem: "title \u{1B}]0;owned\u{07}",
                lines: [("https://shop.test/", "ev\u{1B}[8mil=1; Path=/; Secure")],
                refused: [("https://shop.test/\u{9B}", "bad\u{202E}=1\nforged: line", ["InvalidDomain"])],
                store: [Self.stored("ev\u{1B}[8mil", "shop.test")], readAt: 1_000_000)
        ]
        let scan = SiteScan.build(
            engine: "chromium", start: "https://shop.test/\u{85}", seed: 1,
            states: [ConsentOutcome(state: .none, applied: true, detail: "no \u{7}interaction")], visits: visits)
        let text = scan.text.text
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) })
        #expect(!text.unicodeScalars.contains { $0.value == 0x202E })
        #expect(text.contains("ev\\x1b[8mil"), "\(text)")
        #expect(text.contains("https://shop.test/\\u{85}"), "\(text)")
        #expect(text.contains("title \\x1b]0;owned\\x07"), "\(text)")
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix("forged") }, "\(text)")
    }
}

extension SiteScanTests {
    /// A refused line is one cookie row as a kept one is: its domain, party, category and attributes; an analytics
    /// or marketing line sent before consent is `set-before-consent` though the browser refused it; a refusal by
    /// the browser's privacy settings alone is `blocked`, not a reject of the line.
    @Test func aRefusedLineIsClassifiedAndGatedByWhyItWasRefused() {
        let visits = [
            PageVisit(
                url: "https://shop.test/", state: .none, status: 200, problem: nil, lines: [],
                refused: [
                    (
                        "https://ads.test/frame", "IDE=1; Path=/; Max-Age=3600; SameSite=None; Secure",
                        ["UserPreferences"]
                    ),
                    ("https://shop.test/", "bad=1; Domain=x.test", ["InvalidDomain"]),
                ],
                store: [], readAt: 1_000_000)
        ]
        let scan = SiteScan.build(
            engine: "chromium", start: "https://shop.test/", seed: 1,
            states: [ConsentOutcome(state: .none, applied: true, detail: "")], visits: visits)
        let ide = scan.refused.first { $0.name == "IDE" }
        #expect(
            ide?.domain == "ads.test" && ide?.party == "third" && ide?.category == .marketing,
            "\(String(describing: ide))")
        #expect(ide?.lifetime == 3600 && ide?.secure == true && ide?.sameSite == "None" && ide?.blocked == true)
        #expect(ide?.findings.contains("set-before-consent") == true)
        let bad = scan.refused.first { $0.name == "bad" }
        #expect(bad?.blocked == false && bad?.party == "third" && bad?.domain == "x.test")
        #expect(scan.failures(of: ["rejects"]).count == 1 && scan.failures(of: ["rejects"])[0].hasPrefix("bad from"))
        #expect(scan.failures(of: ["blocked"]).count == 1 && scan.failures(of: ["blocked"])[0].hasPrefix("IDE from"))
        #expect(
            scan.failures(of: ["set-before-consent"]).contains { $0.hasPrefix("IDE (ads.test): set-before-consent") })
        #expect(scan.json.serialized.contains(#""category":"marketing""#))
    }
}

@Suite struct CookiePolicyTests {
    static let policy = """
        # the shop's cookies
        cookie sid {
            category necessary
            lifetime session
        }
        cookie "_ga*" {   # Google Analytics
            category  analytics
            domain    shop.test
            lifetime  2y
            consent   accept
        }
        cookie _ga_special {
            category functional
        }
        """

    /// The error for each invalid policy, at its line and column.
    @Test(arguments: [
        ("cookie sid {\n  categry necessary\n}\n", "p:2:3: error: unknown key 'categry'"),
        ("cookie sid {\n  category tasty\n}\n", "p:2:12: error: category is one of"),
        ("cookie sid {\n  lifetime forever\n}\n", "p:2:12: error: lifetime is 'session' or a number"),
        ("cookie sid {\n  consent none maybe\n}\n", "p:2:16: error: consent states are none, reject and accept"),
        ("cookie sid {\n  category necessary\n", "p:1:8: error: the cookie block of sid is not closed"),
        ("  category necessary\n", "p:1:3: error: expected 'cookie NAME {'"),
        ("cookie a*b {\n}\n", "p:1:8: error: '*' only ends a name"),
        ("cookie sid {\n}\ncookie sid {\n}\n", "p:3:8: error: sid is declared twice"),
        ("}\n", "p:1:1: error: '}' closes no cookie block"),
        ("cookie sid\n", "p:1:1: error: expected: cookie NAME {"),
    ])
    func anInvalidPolicyIsRefusedAtItsLineAndColumn(text: String, expected: String) {
        do {
            _ = try CookiePolicy(text: text, file: "p")
            Issue.record("accepted: \(text.debugDescription)")
        } catch {
            #expect(error.description.hasPrefix(expected), "\(error)")
        }
    }

    static func cookie(_ name: String, domain: String = "shop.test", lifetime: Int64?, states: [ConsentState])
        -> SiteCookie
    {
        SiteCookie(
            name: name, domain: domain, path: "/", hostOnly: false, partitionKey: nil, party: "first", setBy: "http",
            setOn: "https://shop.test/", firstPage: "https://shop.test/", firstState: states[0], states: states,
            lifetime: lifetime, secure: true, httpOnly: false, sameSite: "Lax", category: .unknown,
            categorySource: "none", row: nil, declared: nil, findings: [], engines: nil, line: nil)
    }

    /// A cookie against the policy: undeclared, or each way it breaks its entry.
    @Test(arguments: [
        (cookie("sid", lifetime: nil, states: [.none]), [String]()),
        (cookie("sid", lifetime: 60, states: [.none]), ["policy-lifetime"]),
        (cookie("_ga_X1", lifetime: 63_072_000, states: [.accept]), []),
        (cookie("_ga", lifetime: 63_072_001, states: [.accept]), ["policy-lifetime"]),
        (
            cookie("_ga", domain: "cdn.test", lifetime: 10, states: [.none, .accept]),
            ["policy-domain", "policy-consent"]
        ),
        (cookie("_ga", domain: "www.shop.test", lifetime: 10, states: [.accept]), []),
        (cookie("_ga_special", lifetime: 10, states: [.none]), []),
        (cookie("lang", lifetime: 10, states: [.none]), ["undeclared"]),
    ])
    func aCookieIsJudgedByTheEntryThatDeclaresIt(cookie: SiteCookie, findings: [String]) throws {
        let policy = try CookiePolicy(text: Self.policy, file: "shop.policy")
        #expect(policy.findings(for: cookie) == findings, "\(cookie.name)")
    }

    /// A breach says its numbers: what the cookie does and what the policy declared, and where.
    @Test(arguments: [
        (
            "_ga", Int64(69_120_000), ConsentState.accept, "policy-lifetime",
            "lifetime 800 days, declared at most 2 years"
        ),
        ("sid", Int64(3_600), ConsentState.none, "policy-lifetime", "lifetime 1 hour, declared a session cookie"),
        ("_ga", Int64(10), ConsentState.none, "policy-consent", "set in consent none, declared only in accept"),
    ])
    func aBreachSaysItsNumbers(name: String, lifetime: Int64, state: ConsentState, finding: String, says: String)
        throws
    {
        let policy = try CookiePolicy(text: Self.policy, file: "shop.policy")
        var c = Self.cookie(name, lifetime: lifetime, states: [state])
        c.declared = policy.entry(for: name)
        #expect(policy.findings(for: c).contains(finding))
        let breach = try #require(CookiePolicy.breach(finding, of: c))
        #expect(breach.hasPrefix(says) && breach.contains("(shop.policy:"), "\(breach)")
    }

    @Test func anExactNameBeatsAPrefixAndThePolicysCategoryBeatsTheDatabases() throws {
        let policy = try CookiePolicy(text: Self.policy, file: "shop.policy")
        #expect(policy.entry(for: "_ga_special")?.category == .functional)
        #expect(policy.entry(for: "_ga_other")?.pattern == "_ga*")
        #expect(policy.entry(for: "_ga_other")?.location.description == "shop.policy:6:8")
        let scan = SiteScan.build(
            engine: "chromium", start: "https://shop.test/", seed: 1,
            states: [ConsentOutcome(state: .none, applied: true, detail: "")], visits: [SiteScanTests.visits[0]],
            policy: policy)
        let ga = try #require(scan.cookies.first { $0.name == "_ga" })
        #expect(ga.categorySource == "policy" && ga.category == .analytics)
        // Declared only after consent, present without it: a breach and, being analytics, set before consent.
        #expect(ga.findings == ["policy-consent", "set-before-consent"])
        #expect(scan.cookies.first { $0.name == "IDE" }?.findings.contains("undeclared") == true)
        #expect(scan.failures(of: ["undeclared"]).contains("IDE (ads.test): undeclared"))
        #expect(
            scan.failures(of: ["violations"]) == [
                "_ga (shop.test): policy-consent: set in consent none, declared only in accept (shop.policy:6:8)"
            ])
        #expect(scan.failures(of: ["rejects"]).count == 1)
        #expect(scan.failures(of: []).isEmpty)
    }
}

@Suite struct FailKindsTests {
    /// `--fail-on`'s list as given → the kinds, and the first name that is not one.
    @Test(arguments: [
        ("rejects", Set(["rejects"]), String?.none),
        (" undeclared ,\tviolations ", Set(["undeclared", "violations"]), nil),
        ("rejects,set-before-consent,rejects", Set(["rejects", "set-before-consent"]), nil),
        ("rejects,reject", Set(["rejects", "reject"]), "reject"),
        ("", Set<String>(), nil),
    ])
    func theListNamesItsKindsAndTheFirstNameThatIsNone(_ list: String, _ kinds: Set<String>, _ unknown: String?) {
        let read = SiteScan.failKinds(list)
        #expect(read.kinds == kinds)
        #expect(read.unknown == unknown)
    }

    /// Without `--fail-on`, refusals and cookies set before consent fail a run; with a policy, every kind a run finds
    /// of itself does (what changed since a baseline only when named).
    @Test(arguments: [
        (false, Set(["rejects", "set-before-consent"])),
        (true, Set(["undeclared", "violations", "rejects", "blocked", "set-before-consent"])),
    ])
    func aPolicyMakesEveryKindFailARunByDefault(_ policy: Bool, _ kinds: Set<String>) {
        #expect(SiteScan.defaultFailKinds(policy: policy) == kinds)
        #expect(kinds.isSubset(of: Set(SiteScan.failKinds)))
    }
}

@Suite struct SiteReportHTMLTests {
    @Test func theHTMLReportEscapesWhatTheSiteSentAndNamesEveryCookie() {
        var visit = SiteScanTests.visits[0]
        visit.url = "https://shop.test/?q=<script>alert(1)</script>"
        visit.screenshot = "none-1.png"
        let scan = SiteScan.build(
            engine: "chromium", start: "https://shop.test/\"><b>", seed: 1,
            states: [ConsentOutcome(state: .none, applied: true, detail: "no interaction")], visits: [visit])
        let html = scan.html
        #expect(!html.contains("<script>") && !html.contains("\"><b>"))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(html.contains("<img src=\"none-1.png\""))
        for c in scan.cookies { #expect(html.contains("<code>\(c.name)</code>")) }
        #expect(!html.contains("http://") && !html.contains("<link") && !html.contains("<script"))
    }
}

@Suite struct RulesComparisonTests {
    @Test func eachCookieNameSaysWhatTheBrowserDidBeforeAndAfterTheRules() {
        var before = SiteScanTests.visits[0]
        before.sent = [("shop.test", "sid")]
        var after = SiteScanTests.visits[0]
        // The rules dropped IDE's line and fixed bad's Domain: bad is kept, IDE absent.
        after.store = [SiteScanTests.stored("sid", "shop.test"), SiteScanTests.stored("bad", "shop.test")]
        after.refused = []
        after.sent = before.sent
        after.lines = [("https://shop.test/", "sid=1; Path=/; Secure"), ("https://shop.test/", "bad=1")]
        let states = [ConsentOutcome(state: .none, applied: true, detail: "")]
        let a = SiteScan.build(
            engine: "chromium", start: "https://shop.test/", seed: 1, states: states, visits: [before])
        let b = SiteScan.build(
            engine: "chromium", start: "https://shop.test/", seed: 1, states: states, visits: [after])
        let c = RulesComparison(path: "fix.rules", before: a, after: b)
        let rows = Dictionary(uniqueKeysWithValues: c.rows.map { ($0.name, $0) })
        #expect(c.rows.map(\.name) == ["sid", "IDE", "_ga", "bad"])
        #expect(rows["sid"]?.changed == false && rows["sid"]?.before.summary == "kept shop.test/, sent back")
        #expect(rows["IDE"]?.after.summary == "absent" && rows["IDE"]?.changed == true)
        #expect(rows["bad"]?.before.summary == "refused: InvalidDomain")
        #expect(rows["bad"]?.after.summary == "kept shop.test/, never sent back")
    }
}

@Suite struct AbsentLinesTests {
    static let lines: [(url: String, line: String)] = [
        ("https://shop.test/", "sid=1; Path=/"),
        ("https://shop.test/", "bad=1; Domain=elsewhere.test"),
        ("https://shop.test/", "gone=; Max-Age=0"),
        ("https://shop.test/", "app=1; Path=/app"),
        ("https://ads.test/frame", "IDE=1; SameSite=None; Secure"),
    ]

    /// (the store's cookie names, the page when the store shows only its cookies, the lines found refused)
    @Test(arguments: [
        (["sid"], String?.none, ["bad", "app", "IDE"]),
        (["sid", "app", "IDE"], nil, ["bad"]),
        // Only the page's cookies shown: the other host's and the other path's lines are not judged.
        (["sid"], "https://shop.test/", ["bad"]),
        ([], "https://shop.test/app/x", ["sid", "bad", "app"]),
    ])
    func aLineIsRefusedWhenItsCookieIsMissingFromWhatTheStoreShows(
        stored: [String], page: String?, refused: [String]
    ) {
        let store = stored.map { SiteScanTests.stored($0, $0 == "IDE" ? "ads.test" : "shop.test") }
        let found = SiteScan.absentLines(Self.lines, store: store, now: 1_000_000, engine: .firefox, onlyFor: page)
        #expect(found.map { SetCookie($0.line).name } == refused)
        #expect(found.allSatisfy { $0.reasons.first == "not-in-store" })
        // The lint predicts Firefox's refusal of the foreign Domain.
        #expect(found.first { SetCookie($0.line).name == "bad" }?.reasons.contains("domain-mismatch") == true)
    }
}

@Suite struct LifetimeWordsTests {
    @Test(
        arguments: [
            (nil, "session"), (0, "expired"), (30, "30 seconds"), (60, "1 minute"), (3_600, "1 hour"),
            (90_000, "25 hours"), (86_400, "1 day"), (34_560_000, "400 days"), (31_536_000, "1 year"),
            (63_072_000, "2 years"), (34_559_987, "about 400 days"), (5_401, "about 90 minutes"),
            (7_261, "about 2 hours"),
            (119, "119 seconds"),
        ] as [(Int64?, String)])
    func lifetimesAreSaidInWords(_ seconds: Int64?, _ words: String) {
        #expect(Lifetime.words(seconds) == words)
    }
}

@Suite struct BrowserTrafficTests {
    /// The browsers' own services are not the site's, unless the audited site is one of them.
    @Test(arguments: [
        ("accounts.google.com", "shop.test", true), ("update.googleapis.com", "shop.test", true),
        ("optimizationguide-pa.googleapis.com", "shop.test", true),
        ("firefox.settings.services.mozilla.com", "shop.test", true),
        ("detectportal.firefox.com", "shop.test", true), ("shop.test", "shop.test", false),
        ("cdn.test", "shop.test", false),
        ("www.google.com", "shop.test", false), ("fonts.googleapis.com", "googleapis.com", false),
        ("ACCOUNTS.GOOGLE.COM", "shop.test", true), ("evilgoogleapis.com", "shop.test", false),
    ])
    func theBrowsersOwnServicesAreNotTheSites(host: String, site: String, own: Bool) {
        #expect(BrowserTraffic.isBrowsersOwn(host, site: site) == own)
    }
}
