import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `audit URL --browser chromium` on a local shop (Fixtures/shop_site.py: shop.test with a consent banner, cdn.test's
/// analytics script, ads.test's iframe, over https with a CA of the test's own), in a real headless Chromium through
/// the proxy the audit starts.
@Suite(.serialized) struct SiteAuditEndToEndTests {
    /// The shop, served for a test.
    final class Shop: Sendable {
        let process: TestProcess
        let port: Int
        let ca: TestCA
        init() throws {
            ca = try TestCA(names: ["shop.test", "cdn.test", "ads.test"])
            process = try TestProcess(
                Paths.which("python3"), ["-u", Paths.fixtures + "/shop_site.py", ca.cert, ca.key])
            port = Int(try process.waitForLine(startingWith: "PORT ").dropFirst(5))!
        }
        var resolve: [String] {
            ["shop.test", "cdn.test", "ads.test"].flatMap { ["--resolve", "\($0):127.0.0.1"] }
        }
        /// `trust`: the shop's CA given with --upstream-ca.
        func audit(
            _ extra: [String], path: String = "/", host: String = "shop.test", trust: Bool = true,
            engine: String = "chromium"
        ) throws -> CommandResult {
            try run(
                Paths.binary,
                ["audit", "--browser", engine] + (extra.contains("--wait") ? [] : ["--wait", "8"])
                    + (trust ? ["--upstream-ca", ca.caCert] : [])
                    + resolve + extra + ["https://\(host):\(port)\(path)"])
        }
    }

    static func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The shop's own table of its cookies, as Chromium must report them: party, who set it, the consent state it
    /// first appeared in, the states it is in, its category (the Open Cookie Database's rows for _fbp, _ga and lang;
    /// sid, consent and __Host-ad are in no row: unknown), and the audit's findings.
    struct Expected: Sendable, CustomStringConvertible {
        var name: String
        var party: String
        var setBy: String
        var setOnSuffix: String
        var first: String
        var states: [String]
        var category: String
        var beforeConsent: Bool
        var partitioned: Bool
        var description: String { name }
    }

    static let table: [Expected] = [
        Expected(
            name: "sid", party: "first", setBy: "http", setOnSuffix: "/", first: "none",
            states: ["none", "reject", "accept"], category: "unknown", beforeConsent: false, partitioned: false),
        Expected(
            name: "_fbp", party: "first", setBy: "http", setOnSuffix: "/", first: "none",
            states: ["none", "reject", "accept"], category: "marketing", beforeConsent: true, partitioned: false),
        Expected(
            name: "lang", party: "first", setBy: "http", setOnSuffix: "/page/2", first: "none",
            states: ["none", "reject", "accept"], category: "functional", beforeConsent: false, partitioned: false),
        Expected(
            name: "consent", party: "first", setBy: "script", setOnSuffix: "/", first: "reject",
            states: ["reject", "accept"], category: "unknown", beforeConsent: false, partitioned: false),
        Expected(
            name: "_ga", party: "first", setBy: "script", setOnSuffix: "/", first: "accept", states: ["accept"],
            category: "analytics", beforeConsent: false, partitioned: false),
        Expected(
            name: "__Host-ad", party: "third", setBy: "http", setOnSuffix: "/frame", first: "none",
            states: ["none", "reject", "accept"], category: "unknown", beforeConsent: false, partitioned: true),
    ]

    @Test func everyCookieOfTheShopHasTheSitesOwnPartySourceConsentStateAndCategory() throws {
        let shop = try Shop()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("cp-site-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try shop.audit(["--pages", "4", "--format", "json", "--out", out])
        // _fbp is a marketing cookie set before any consent: a finding, so status 1.
        #expect(result.status == 1, "\(result.stderr)")
        let report = try Self.object(result.stdout)
        let consent = try #require(report["consent"] as? [String: [String: Any]])
        for state in ["none", "reject", "accept"] {
            #expect(consent[state]?["applied"] as? Bool == true, "\(state): \(consent[state] ?? [:])")
        }
        let detail = consent["accept"]?["detail"] as? String
        #expect(detail?.contains("accept all") == true, "\(detail ?? "none")")
        let pages = try #require(report["pages"] as? [[String: Any]])
        #expect(pages.count == 12, "4 pages in each of 3 states: \(pages.map { $0["url"] ?? "" })")
        #expect(pages.allSatisfy { $0["status"] as? Int == 200 })
        let cookies = try #require(report["cookies"] as? [[String: Any]])
        let byName = Dictionary(cookies.map { ($0["name"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        for e in Self.table {
            let c = try #require(byName[e.name], "\(e.name) missing from \(byName.keys.sorted())")
            #expect(c["party"] as? String == e.party, "\(e.name)")
            #expect(c["setBy"] as? String == e.setBy, "\(e.name)")
            #expect((c["setOn"] as? String ?? "").hasSuffix(":\(shop.port)\(e.setOnSuffix)"), "\(e.name): \(c)")
            let first = c["firstSeen"] as? [String: Any]
            #expect(first?["consent"] as? String == e.first, "\(e.name)")
            #expect(c["states"] as? [String] == e.states, "\(e.name)")
            #expect(c["category"] as? String == e.category, "\(e.name)")
            let findings = c["findings"] as? [String] ?? []
            #expect(findings.contains("set-before-consent") == e.beforeConsent, "\(e.name): \(findings)")
            let partition = c["partitionKey"] as? String
            #expect((partition?.contains("shop.test") ?? false) == e.partitioned, "\(e.name): \(partition ?? "none")")
        }
        // The category says which row matched.
        let ga = try #require(byName["_ga"]?["categorySource"] as? [String: Any])
        #expect(ga["source"] as? String == "open-cookie-database")
        #expect(ga["platform"] as? String == "Google Analytics")
        // The line with another site's Domain is refused, in Chromium's words, once per state.
        let refused = try #require(report["refused"] as? [[String: Any]])
        let bad = refused.filter { $0["name"] as? String == "bad" }
        #expect(bad.count == 3, "\(refused)")
        #expect(bad.allSatisfy { ($0["reasons"] as? [String] ?? []).contains("InvalidDomain") }, "\(bad)")
        // IDE, the ad frame's unpartitioned third-party cookie: kept as third party, or refused with a reason
        // (this Chromium's default refuses third-party cookies).
        if let ide = byName["IDE"] {
            #expect(ide["party"] as? String == "third")
        } else {
            let lines = refused.filter { $0["name"] as? String == "IDE" }
            #expect(!lines.isEmpty && lines.allSatisfy { !($0["reasons"] as? [String] ?? []).isEmpty }, "\(refused)")
        }
        // The evidence: every file the manifest lists has the SHA-256 it says, and every file is listed.
        let manifest = try Self.object(Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
        let files = try #require(manifest["files"] as? [String: [String: Any]])
        let present = try FileManager.default.contentsOfDirectory(atPath: out).filter { $0 != "manifest.json" }
        #expect(Set(files.keys) == Set(present))
        for file in ["report.json", "report.html", "none-1.png", "accept-4.png", "scan-reject.har", "proxy-log.jsonl"] {
            #expect(present.contains(file), "\(file) missing from \(present.sorted())")
        }
        // The proxy's own records: a transformation-log line per Set-Cookie line relayed (the first pass is a dry
        // run: every line), an access-log line per request.
        let log = try String(contentsOfFile: out + "/proxy-log.jsonl", encoding: .utf8)
        #expect(log.contains(#""cookie":"_fbp""#) && log.contains(#""dryRun":true"#))
        let access = try String(contentsOfFile: out + "/access.jsonl", encoding: .utf8)
        #expect(access.contains(#""uri":"/page/1""#), "\(access.prefix(300))")
        for (name, entry) in files {
            let sum = try run(Paths.which("sha256sum"), [out + "/" + name])
            #expect(sum.text.hasPrefix((entry["sha256"] as? String ?? "-") + " "), "\(name)")
        }
        // report.html in Chromium at 1024 and 1920 px: no horizontal scrolling, a row per cookie, every page's
        // screenshot shown; the window's screenshots are kept beside it.
        let layout = try run(
            Paths.root + "/.build/test-python/bin/python",
            [Paths.fixtures + "/report_layout.py", out + "/report.html", "1024", "1920"])
        #expect(layout.status == 0, "\(layout.stderr)")
        let widths = try #require(try JSONSerialization.jsonObject(with: layout.stdout) as? [String: [String: Any]])
        for width in ["1024", "1920"] {
            let facts = try #require(widths[width], "\(layout.text)")
            let scroll = facts["scrollWidth"] as? Int ?? .max
            #expect(scroll <= facts["innerWidth"] as? Int ?? 0, "\(width) px: \(facts)")
            #expect(facts["cookieRows"] as? Int == cookies.count, "\(width) px: \(facts)")
            #expect(facts["images"] as? Int == 12 && facts["loaded"] as? Int == 12, "\(width) px: \(facts)")
            let shot = try FileManager.default.attributesOfItem(atPath: facts["screenshot"] as? String ?? "")
            #expect((shot[.size] as? Int ?? 0) > 10_000)
        }
    }

    /// The policy as a CI gate: each --fail-on against a policy the shop keeps or breaks, and an invalid policy.
    @Test(arguments: [
        // Every cookie declared as it is: nothing undeclared, nothing broken (the refused line and _fbp before
        // consent are other kinds).
        (Self.fullPolicy, "undeclared,violations", Int32(0), ""),
        (Self.fullPolicy, "rejects", 1, "bad from https://shop.test"),
        // lang left out: undeclared.
        (
            Self.fullPolicy.replacingOccurrences(of: "cookie lang {\n}\n", with: ""), "undeclared", 1,
            "lang (shop.test): undeclared"
        ),
        (Self.fullPolicy.replacingOccurrences(of: "cookie lang {\n}\n", with: ""), "violations", 0, ""),
        // _ga may live a day, and only with consent: both broken by a 2-year cookie... which only appears after
        // consent (the lifetime alone breaks).
        (
            Self.fullPolicy.replacingOccurrences(of: "lifetime 2y", with: "lifetime 1d"), "violations", 1,
            "_ga (shop.test): policy-lifetime"
        ),
        // _fbp allowed in accept only: it is there before consent.
        (
            Self.fullPolicy.replacingOccurrences(
                of: "cookie _fbp {\n    consent none reject accept", with: "cookie _fbp {\n    consent accept"),
            "violations", 1, "_fbp (shop.test): policy-consent"
        ),
        // Without --policy's own --fail-on, the policy's kinds join the defaults.
        (Self.fullPolicy.replacingOccurrences(of: "cookie sid {\n}\n", with: ""), "", 1, "sid (shop.test): undeclared"),
        ("cookie sid {\n  lifetime forever\n}\n", "", 2, "shop.policy:2:12: error: lifetime is"),
    ])
    func thePolicyGatesTheExitStatusOnWhatFailOnNames(policy: String, failOn: String, status: Int32, says: String)
        throws
    {
        let shop = try Shop()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-policy-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try policy.write(toFile: dir + "/shop.policy", atomically: true, encoding: .utf8)
        let result = try run(
            Paths.binary,
            ["audit", "--browser", "chromium", "--upstream-ca", shop.ca.caCert, "--wait", "8", "--pages", "3"]
                + shop.resolve + ["--policy", dir + "/shop.policy"] + (failOn.isEmpty ? [] : ["--fail-on", failOn])
                + ["https://shop.test:\(shop.port)/"])
        #expect(result.status == status, "\(result.stderr)\n\(result.text)")
        #expect(says.isEmpty || (result.stderr + result.text).contains(says), "\(result.stderr)\n\(result.text)")
    }

    /// The shop's cookies as its policy declares them, on three pages (lang is set on /page/2).
    static let fullPolicy = """
        cookie sid {
        }
        cookie _fbp {
            consent none reject accept
        }
        cookie lang {
        }
        cookie consent {
            category necessary
        }
        cookie "_ga*" {
            category analytics
            domain   shop.test
            lifetime 2y
            consent  accept
        }
        cookie __Host-ad {
        }
        cookie IDE {
        }

        """

    /// Third-party cookies as the run asks: the ad frame's IDE kept (third party) when allowed, refused in the
    /// browser's words when blocked.
    /// A dev server on loopback (`localhost`, `127.0.0.1`, `app.localhost`) is audited through the audit's proxy in
    /// every engine, as any other site: its HttpOnly cookie from a header is set by `http`, not by a script, and the
    /// proxy saw the page (Chromium and WebKit send loopback hosts direct unless told otherwise).
    @Test(arguments: ["chromium", "firefox", "webkit"], ["localhost", "127.0.0.1", "app.localhost"])
    func aLoopbackDevSiteGoesThroughTheProxyInEveryEngine(engine: String, host: String) throws {
        let upstream = try Upstream()
        defer { upstream.process.signal(SIGTERM) }
        let line = "dev=1; Path=/; HttpOnly".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let result = try run(
            Paths.binary,
            [
                "audit", "--browser", engine, "--pages", "1", "--consent", "none", "--wait", "8", "--format", "json",
                "--resolve", "app.localhost:127.0.0.1", "http://\(host):\(upstream.port)/setcookie?c=\(line)",
            ])
        let report = try Self.object(result.stdout)
        let cookies = report["cookies"] as? [[String: Any]] ?? []
        let dev = try #require(cookies.first { $0["name"] as? String == "dev" }, "\(engine) \(host): \(result.stderr)")
        #expect(dev["setBy"] as? String == "http", "\(engine) \(host): \(dev)")
        #expect(dev["httpOnly"] as? Bool == true, "\(dev)")
        let pages = report["pages"] as? [[String: Any]] ?? []
        #expect(pages.first?["status"] as? Int == 200, "\(engine) \(host): \(pages)")
    }

    @Test func theThirdPartySettingDecidesWhetherTheAdFramesCookieIsKept() throws {
        let shop = try Shop()
        let allowed = try shop.audit([
            "--pages", "1", "--consent", "none", "--third-party", "allow", "--format", "json",
        ])
        let a = try Self.object(allowed.stdout)
        #expect(a["thirdParty"] as? String == "allow")
        let kept = (a["cookies"] as? [[String: Any]] ?? []).first { $0["name"] as? String == "IDE" }
        #expect(kept?["party"] as? String == "third", "\(a["cookies"] ?? [])")
        let blocked = try shop.audit([
            "--pages", "1", "--consent", "none", "--third-party", "block", "--format", "json",
        ])
        let b = try Self.object(blocked.stdout)
        #expect(!(b["cookies"] as? [[String: Any]] ?? []).contains { $0["name"] as? String == "IDE" })
        let refused = (b["refused"] as? [[String: Any]] ?? []).filter { $0["name"] as? String == "IDE" }
        #expect(refused.count == 1 && !(refused.first?["reasons"] as? [String] ?? []).isEmpty, "\(b["refused"] ?? [])")
        // The proxy's site lint explains the refusal: the ad frame's line is a third party's, unpartitioned.
        let findings = refused.first?["findings"] as? [String] ?? []
        #expect(findings.contains("third-party-unpartitioned"), "\(b["refused"] ?? [])")
        #expect(refused.first?["party"] as? String == "third" && refused.first?["blocked"] as? Bool == true)
    }

    /// The exit statuses: 2 when nothing could be scanned or the format is not one the browser audit writes; a
    /// consent state whose button is not on the page is reported not applied, with what was looked for.
    @Test func aStateWithoutItsButtonIsReportedNotAppliedAndNothingScannedIsStatus2() throws {
        let shop = try Shop()
        let frame = try shop.audit(
            ["--pages", "1", "--consent", "accept", "--format", "json"], path: "/frame", host: "ads.test")
        #expect(frame.status != 2, "\(frame.stderr)")
        let report = try Self.object(frame.stdout)
        let accept = try #require((report["consent"] as? [String: [String: Any]])?["accept"])
        #expect(accept["applied"] as? Bool == false)
        #expect((accept["detail"] as? String ?? "").contains("no accept button found"), "\(accept)")

        let notHTTP = try run(Paths.binary, ["audit", "--browser", "chromium", "ftp://shop.test/"])
        #expect(notHTTP.status == 2)
        #expect(notHTTP.stderr.contains("is not an http:// or https:// URL"), "\(notHTTP.stderr)")
    }

    /// The same audit as CI reads it: JUnit XML through junitparser, SARIF through sarif-tools.
    @Test func theAuditIsReadByCIToolsAsJUnitAndSARIF() throws {
        let shop = try Shop()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-ci-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let python = Paths.root + "/.build/test-python/bin/python"
        let junit = try shop.audit(["--pages", "1", "--format", "junit"])
        #expect(junit.status == 1, "\(junit.stderr)")
        try junit.stdout.write(to: URL(fileURLWithPath: dir + "/audit.xml"))
        let cases = try junitCases(dir + "/audit.xml")
        let failed = cases.filter { !(($0[2] as? [Any])?.isEmpty ?? true) }.map { "\($0[0]) / \($0[1])" }
        #expect(
            Set(cases.map { "\($0[0])" }).isSuperset(of: ["consent", "shop.test", "ads.test", "refused by chromium"]))
        #expect(failed.contains { $0.hasPrefix("shop.test / _fbp ") }, "\(failed)")
        #expect(failed.contains { $0.hasPrefix("refused by chromium / bad from https://shop.test") }, "\(failed)")
        #expect(!failed.contains { $0.hasPrefix("shop.test / sid ") || $0.hasPrefix("consent /") }, "\(failed)")

        let sarif = try shop.audit(["--pages", "1", "--format", "sarif"])
        #expect(sarif.status == 1, "\(sarif.stderr)")
        try sarif.stdout.write(to: URL(fileURLWithPath: dir + "/audit.sarif"))
        let records = try run(
            python,
            [
                "-c",
                """
                import json, sys
                from sarif import loader
                print(json.dumps(sorted(r["Code"] for r in loader.load_sarif_file(sys.argv[1]).get_records())))
                """, dir + "/audit.sarif",
            ])
        let codes = try #require(
            try JSONSerialization.jsonObject(with: records.stdout) as? [String], "\(records.stderr)")
        #expect(codes.contains("set-before-consent") && codes.contains("browser-refused"), "\(codes)")
    }

    /// The bad days, each a clear message in the report and the rest of the run completed: a page that never goes
    /// idle is read as it is; one whose server never answers is stopped; a site whose certificate the proxy cannot
    /// verify gets the proxy's reason; a selector that matches nothing leaves its state not applied. Exit 2 only when
    /// no page was reached.
    @Test(arguments: [
        ("/busy", ["--wait", "2"], true, Int32(0), "the page's network was not idle after 2 s"),
        ("/hang", ["--wait", "3"], true, 2, "no response within 3 s"),
        ("/", [], false, 2, "certificate verification failed"),
        ("/", ["--consent", "accept", "--accept", "#nope"], true, 1, "--accept '#nope' matched no visible element"),
    ])
    func eachBadDayIsReportedWithWhatToDoAndStatus2OnlyWhenNothingWasReached(
        path: String, extra: [String], trust: Bool, status: Int32, says: String
    ) throws {
        let shop = try Shop()
        let result = try shop.audit(
            ["--pages", "1", "--format", "json"] + (extra.contains("--consent") ? [] : ["--consent", "none"]) + extra,
            path: path, trust: trust)
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.text.contains(says), "\(result.text)")
        let report = try Self.object(result.stdout)
        let pages = report["pages"] as? [[String: Any]] ?? []
        #expect(pages.count == 1 && pages[0]["reached"] as? Bool == (status != 2), "\(pages)")
        if status == 2 { #expect(result.stderr.contains("no page could be scanned")) }
    }

    /// A workaround proven in the browser: the rules that remove the refused line's foreign Domain and drop the
    /// marketing cookie, the same pages visited again through them; and each pass's HAR per state, values redacted
    /// alike in both.
    @Test func theRulesAreProvenInTheBrowserBeforeAndAfter() throws {
        let shop = try Shop()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-rules-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try """
        rule "keep bad on the shop" {
            cookie bad
            domain remove
        }
        rule "no facebook pixel" {
            cookie _fbp
            drop
        }
        """.write(toFile: dir + "/fix.rules", atomically: true, encoding: .utf8)
        let result = try shop.audit([
            "--pages", "2", "--consent", "none", "--rules", dir + "/fix.rules", "--out", dir + "/out", "--format",
            "json",
        ])
        let report = try Self.object(result.stdout)
        let rules = try #require(report["rules"] as? [String: Any], "\(result.stderr)")
        let rows = Dictionary(
            ((rules["cookies"] as? [[String: Any]]) ?? []).map { ($0["name"] as? String ?? "", $0) },
            uniquingKeysWith: { a, _ in a })
        func side(_ name: String, _ which: String) -> [String: Any] {
            rows[name]?[which] as? [String: Any] ?? [:]
        }
        #expect(side("bad", "before")["refused"] as? [String] == ["InvalidDomain"], "\(rows["bad"] ?? [:])")
        #expect(side("bad", "after")["kept"] as? [String] == ["shop.test/"], "\(rows["bad"] ?? [:])")
        #expect(side("_fbp", "before")["kept"] as? [String] == ["shop.test/"])
        #expect(side("_fbp", "after")["kept"] as? [String] == [], "\(rows["_fbp"] ?? [:])")
        #expect(rows["sid"]?["changed"] as? Bool == false && side("sid", "before")["sent"] as? Bool == true)
        // Each pass's HAR: the pages' exchanges, sid's value redacted with one key in both.
        var redacted: [String] = []
        for file in ["scan-none.har", "rules-scan-none.har"] {
            let har = try Self.object(Data(contentsOf: URL(fileURLWithPath: dir + "/out/" + file)))
            let entries = (har["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
            let urls = Set(entries.compactMap { ($0["request"] as? [String: Any])?["url"] as? String })
            #expect(
                urls.contains("https://shop.test:\(shop.port)/") && urls.contains("https://ads.test:\(shop.port)/frame")
            )
            let text = try String(contentsOfFile: dir + "/out/" + file, encoding: .utf8)
            #expect(!text.contains("sid=s1"))
            if let range = text.range(of: #"sid=\[h:[0-9a-f]+\]"#, options: .regularExpression) {
                redacted.append(String(text[range]))
            }
        }
        #expect(redacted.count == 2 && redacted[0] == redacted[1], "\(redacted)")
    }

    /// `--browser all`: Chromium, Firefox and WebKit on the same pages, each first-party cookie of the shop's table
    /// as all three report it, and side by side where they differ (the ad frame's IDE: Chromium's default refuses
    /// third-party cookies, Firefox's keeps them in the top-level site's partition, WebKit's WebDriver cannot show
    /// them).
    @Test func chromiumFirefoxAndWebKitAuditTheSameShopSideBySide() throws {
        let shop = try Shop()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("cp-all-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try shop.audit(["--pages", "3", "--format", "json", "--out", out], engine: "all")
        #expect(result.status == 1, "\(result.stderr)")
        let report = try Self.object(result.stdout)
        let engines = try #require(report["engines"] as? [String: [String: Any]], "\(result.stderr)")
        // --out keeps the side by side at its top (as stdout has it), each engine's evidence in its folder, and a
        // manifest over every file.
        let top = try Self.object(Data(contentsOf: URL(fileURLWithPath: out + "/report.json")))
        #expect(top["sideBySide"] is [[String: Any]] && top["engines"] is [String: Any])
        let text = try String(contentsOfFile: out + "/report.txt", encoding: .utf8)
        #expect(text.contains("Side by side:") && text.contains("IDE"), "\(text)")
        let html = try String(contentsOfFile: out + "/report.html", encoding: .utf8)
        #expect(html.contains("<a href=\"chromium/report.html\">") && html.contains("class=\"differs\""))
        let manifest = try Self.object(Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
        let files = manifest["files"] as? [String: Any] ?? [:]
        for name in [
            "report.json", "report.txt", "report.html", "chromium/report.json", "firefox/manifest.json",
            "webkit/report.html",
        ] {
            #expect(files[name] != nil, "\(name) not in \(files.keys.sorted())")
        }
        #expect(Set(engines.keys) == ["chromium", "firefox", "webkit"])
        for (engine, scan) in engines {
            let consent = scan["consent"] as? [String: [String: Any]] ?? [:]
            #expect(["none", "reject", "accept"].allSatisfy { consent[$0]?["applied"] as? Bool == true }, "\(engine)")
            let byName = Dictionary(
                (scan["cookies"] as? [[String: Any]] ?? []).map { ($0["name"] as? String ?? "", $0) },
                uniquingKeysWith: { a, _ in a })
            // The first-party part of the shop's table holds in both engines.
            for e in Self.table where e.party == "first" {
                let c = try #require(byName[e.name], "\(engine): \(e.name) missing")
                #expect(c["setBy"] as? String == e.setBy, "\(engine) \(e.name)")
                #expect((c["firstSeen"] as? [String: Any])?["consent"] as? String == e.first, "\(engine) \(e.name)")
                #expect(c["states"] as? [String] == e.states, "\(engine) \(e.name)")
                #expect(c["category"] as? String == e.category, "\(engine) \(e.name)")
                // lang is set by /page/2, the last page visited: whether a later request (a favicon) carried it is
                // the engine's own.
                if e.name != "lang" { #expect(c["sent"] as? Bool == true, "\(engine) \(e.name): sent back") }
            }
            // The line with another site's Domain is refused by both (Firefox's, found missing from its store).
            let refused = scan["refused"] as? [[String: Any]] ?? []
            #expect(refused.contains { $0["name"] as? String == "bad" }, "\(engine): \(refused)")
        }
        let rows = Dictionary(
            (report["sideBySide"] as? [[String: Any]] ?? []).map { ($0["name"] as? String ?? "", $0) },
            uniquingKeysWith: { a, _ in a })
        let ide = try #require(rows["IDE"])
        #expect(ide["differs"] as? Bool == true, "\(ide)")
        #expect(((ide["chromium"] as? [String: Any])?["refused"] as? [String])?.isEmpty == false, "\(ide)")
        #expect(((ide["firefox"] as? [String: Any])?["kept"] as? [String]) == ["ads.test/"], "\(ide)")
        #expect(((ide["webkit"] as? [String: Any])?["kept"] as? [String]) == [], "\(ide)")
        #expect(rows["sid"]?["differs"] as? Bool == false)
        // What WebKit's report cannot show is said in it.
        let notes = engines["webkit"]?["notes"] as? [String] ?? []
        #expect(notes.contains { $0.contains("only the current page's cookies") }, "\(notes)")
        // How each trusted the proxy: Firefox by the run's CA in its new profile (certutil is installed here).
        let firefox = engines["firefox"]?["notes"] as? [String] ?? []
        #expect(firefox.contains("Firefox trusted the run's CA in its new profile's certificate database only"))
    }

    /// Ctrl-C (SIGINT) stops the audit after the page in hand: the pages visited are reported, the status is 130,
    /// and no browser the audit started is left running.
    @Test(arguments: ["chromium", "firefox"])
    func anInterruptedAuditReportsWhatItVisitedAndLeavesNoBrowserBehind(engine: String) throws {
        let shop = try Shop()
        let audit = try TestProcess(
            Paths.binary,
            // One state at a time: the interrupt comes while the first state is at its second page.
            ["audit", "--browser", engine, "--upstream-ca", shop.ca.caCert, "--pages", "3", "--format", "json"]
                + ["--parallel", "1"]
                + shop.resolve + ["https://shop.test:\(shop.port)/"])
        _ = try audit.waitForLine(startingWith: "[none] page 2/3", onStderr: true, timeout: 60)
        audit.signal(SIGINT)
        let status = audit.waitForExit(timeout: 60)
        #expect(status == 130, "\(audit.stderr)")
        #expect(audit.stderr.contains("interrupted: stopping after the page in hand"))
        let report = try Self.object(Data(audit.stdout.utf8))
        let pages = report["pages"] as? [[String: Any]] ?? []
        #expect((1...3).contains(pages.count) && pages.allSatisfy { $0["consent"] as? String == "none" }, "\(pages)")
        let states = report["consent"] as? [String: [String: Any]] ?? [:]
        #expect(states["accept"]?["applied"] as? Bool != true, "\(states)")
        // Each browser's profile folder names the audit's process: none of its processes is left.
        let left = try run(Paths.which("pgrep"), ["-f", "cookie-proxy-\(engine)-\(audit.pid)-"])
        #expect(left.text.isEmpty, "left running: \(left.text)")
    }

    /// A browser that dies mid-audit: its page says so, the state's other pages are skipped with a line saying why,
    /// and the next consent state runs in a fresh browser; the run is reported (not status 2).
    @Test func aBrowserThatDiesMidAuditIsReportedAndTheNextStateStillRuns() throws {
        let shop = try Shop()
        let audit = try TestProcess(
            Paths.binary,
            // One state at a time: the one browser killed is the first state's.
            ["audit", "--browser", "chromium", "--upstream-ca", shop.ca.caCert, "--pages", "3", "--consent", "all"]
                + ["--format", "json", "--parallel", "1"] + shop.resolve + ["https://shop.test:\(shop.port)/"])
        _ = try audit.waitForLine(startingWith: "[none] page 2/3", onStderr: true, timeout: 60)
        // The state's Chromium: its profile folder names the audit's process.
        _ = try run(Paths.which("pkill"), ["-KILL", "-f", "cookie-proxy-chromium-\(audit.pid)-"])
        let status = audit.waitForExit(timeout: 120)
        #expect(status == 1, "\(audit.stderr)")
        #expect(audit.stderr.contains("Chromium ended; the state's other pages are not visited"), "\(audit.stderr)")
        let report = try Self.object(Data(audit.stdout.utf8))
        let pages = report["pages"] as? [[String: Any]] ?? []
        let none = pages.filter { $0["consent"] as? String == "none" }
        // The page in flight when it died says so (the state's later pages, if any, are not visited).
        #expect(none.contains { ($0["problem"] as? String)?.contains("Chromium closed") == true }, "\(none)")
        for state in ["reject", "accept"] {
            #expect(pages.filter { $0["consent"] as? String == state && $0["reached"] as? Bool == true }.count == 3)
        }
    }

    /// The consent states at once (`--parallel 3`: a browser and a proxy each) give the report one state at a time
    /// gives: the same pages in each state, the same cookies with the same facts, the same refused lines; and the
    /// evidence's joined log holds every state's lines.
    @Test func theStatesAtOnceReportWhatOneStateAtATimeReports() throws {
        let shop = try Shop()
        func facts(_ parallel: String) throws -> (pages: [String], cookies: [String], refused: [String], log: String) {
            let out = shop.ca.dir + "/parallel-\(parallel)"
            let result = try shop.audit(["--pages", "3", "--parallel", parallel, "--format", "json", "--out", out])
            #expect(result.status == 1, "\(result.stderr)")
            let report = try Self.object(result.stdout)
            let pages = (report["pages"] as? [[String: Any]] ?? []).map {
                "\($0["consent"] ?? "") \($0["url"] ?? "") \($0["reached"] ?? "")"
            }
            let cookies = (report["cookies"] as? [[String: Any]] ?? []).map { c in
                ["name", "domain", "path", "party", "setBy", "states", "category", "secure", "httpOnly", "sameSite"]
                    .map { "\(c[$0] ?? "")" }.joined(separator: " ")
            }
            let refused = (report["refused"] as? [[String: Any]] ?? []).map {
                "\($0["consent"] ?? "") \($0["name"] ?? "") \($0["reasons"] ?? "")"
            }
            let log = try String(contentsOfFile: out + "/proxy-log.jsonl", encoding: .utf8)
            return (pages, cookies.sorted(), refused.sorted(), log)
        }
        let serial = try facts("1")
        let atOnce = try facts("3")
        #expect(atOnce.pages == serial.pages)
        #expect(atOnce.cookies == serial.cookies)
        #expect(atOnce.refused == serial.refused)
        #expect(serial.cookies.count == Self.table.count)
        // The joined log: a record per line in every state, as one proxy writes it (one JSON object a line).
        let records = atOnce.log.split(separator: "\n")
        #expect(records.count == serial.log.split(separator: "\n").count, "\(records.count)")
        #expect(records.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
    }
}
