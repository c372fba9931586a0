import CookieConformance
import CookieKit
import Testing

/// Which engines reject or alter a line, read from the lint's findings (parse, try, audit, the log and the
/// inspector show it).
@Suite struct EngineVerdictTests {
    static let now: Int64 = 1_700_000_000

    /// Each engine's replayed jar (its profile) keeps a line exactly when that engine's lint verdict says the engine
    /// keeps it: both read one table (``CookieJar/Profile/Acceptance``). (Set-Cookie, request URL)
    @Test(arguments: [
        ("t=1; SameSite=None", "http://a.example/"), ("t=1; SameSite=None", "https://a.example/"),
        ("t=1; SameSite=None; Secure", "https://a.example/"), ("__Host-t=1; Path=/", "https://a.example/"),
        ("__Host-t=1; Secure; Path=/x", "https://a.example/"), ("__Secure-t=1", "https://a.example/"),
        ("t=1; Secure", "http://localhost/"), ("t=1; Secure", "http://127.0.0.1/"),
        ("t=1; Secure", "http://a.example/"),
        ("t=1", "http://a.example/"),
    ])
    func eachEnginesProfileKeepsWhatItsLintSaysTheEngineKeeps(_ line: String, _ url: String) throws {
        let url = try #require(RequestURL(url))
        let cookie = SetCookie(line)
        let verdicts = EngineVerdict.of(CookieLint.findings(for: cookie, from: url, now: Self.now))
        for (engine, profile) in [
            (EngineVerdict.Engine.chromium, CookieJar.Profile.chromium), (.firefox, .firefox), (.webkit, .webkit),
        ] {
            let kept = CookieJar.evaluate(
                cookie, from: url, now: Self.now, suffixes: .system, laxByDefault: profile.laxByDefault,
                acceptance: profile.acceptance)
            let verdict = try #require(verdicts.first { $0.engine == engine })
            #expect(
                ((try? kept.get()) != nil) == verdict.stores, "\(engine): \(line) from \(url): \(kept) vs \(verdict)")
        }
    }

    /// (Set-Cookie, request URL, the summary; nil when every engine keeps the draft's cookie)
    @Test(
        arguments: [
            ("a=b; Path=/; Secure; HttpOnly", "https://example.com/", nil),
            // The draft keeps a domain cookie; all three measured engines keep it host-only.
            ("a=b; Domain=127.0.0.1", "http://127.0.0.1/", "Chromium, Firefox, WebKit store it host-only"),
            // The draft rejects it; WebKit keeps it.
            ("__Secure-a=b", "https://example.com/", "rejects: Chromium, Firefox; WebKit stores it"),
            ("a=b; SameSite=None", "http://a.example/", "rejects: Chromium, Firefox; WebKit stores it"),
            // The draft rejects it and so do all three.
            ("a=b; Secure", "http://example.com/", "rejects: Chromium, Firefox, WebKit"),
            ("a=b; Domain=127.1", "http://127.0.0.1/", "rejects: Chromium, Firefox, WebKit"),
            // The draft keeps a session cookie: two engines keep a persistent one.
            (
                "a=b; Max-Age=+10", "https://example.com/",
                "Firefox stores it as the draft; Chromium, WebKit store it persistent"
            ),
            ("=a=b", "http://a.example/", "rejects: Chromium, Firefox; WebKit stores it as the draft"),
            (
                "five", "http://a.example/",
                "Chromium, WebKit store it as the draft; Firefox stores it as a name with an empty value"
            ),
            (
                "a=b; Max-Age=10; Expires=Mon, 01 Jan 1600 00:00:00 GMT", "https://example.com/",
                "rejects: WebKit; Chromium, Firefox store it as the draft"
            ),
            // An expired cookie is kept by none, whatever else the findings say.
            ("a=b; SameSite=None; Max-Age=0", "http://a.example/", "rejects: Chromium, Firefox, WebKit"),
        ] as [(String, String, String?)])
    func theSummaryNamesTheEnginesThatRejectOrAlterTheLine(_ header: String, _ url: String, _ summary: String?) {
        let findings = CookieLint.findings(for: SetCookie(header), from: RequestURL(url)!, now: Self.now)
        #expect(EngineVerdict.summary(findings) == summary, "\(findings.map(\.code))")
    }

    /// Every engine finding the lint gives over both corpora says what its engine does (a finding the verdicts do not
    /// know would be shown as the draft's answer).
    @Test func everyEngineFindingOverTheCorporaChangesItsEnginesVerdict() throws {
        var seen = Set<String>()
        for file in ["http-state.json", "wpt.json"] {
            let suite = try ConformanceSuite(contentsOf: "\(ConformanceTests.folder)/\(file)")
            for c in suite.cases {
                for case .set(let url, _, let headers) in c.steps {
                    guard let u = RequestURL(url) else { continue }
                    for header in headers {
                        let findings = CookieLint.findings(for: SetCookie(bytes: header), from: u, now: c.now)
                        let base = findings.filter { !Self.isEngine($0.code) }
                        // Where the draft keeps the line and it has not expired, each engine finding changes its
                        // engine's verdict (on a line the draft rejects, a finding that the engine drops it says
                        // nothing new).
                        guard !base.contains(where: { $0.severity == .rejects || $0.code == "already-expired" }) else {
                            continue
                        }
                        for f in findings where Self.isEngine(f.code) {
                            seen.insert(f.code)
                            let engine = f.code.prefix { $0 != "-" }
                            let before = EngineVerdict.of(base).first { $0.engine.rawValue.lowercased() == engine }
                            let after = EngineVerdict.of(base + [f]).first { $0.engine.rawValue.lowercased() == engine }
                            #expect(before != after, "\(f.code) on \(String(decoding: header, as: UTF8.self))")
                        }
                    }
                }
            }
        }
        // The corpora exercise most of the codes on lines the draft keeps (the table above the rest).
        #expect(seen.count >= 8, "\(seen.sorted())")
    }

    static func isEngine(_ code: String) -> Bool {
        code.hasPrefix("chromium-") || code.hasPrefix("firefox-") || code.hasPrefix("webkit-")
    }
}
