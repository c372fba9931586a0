import CookieKit
@testable import CookieRules
import ExchangeFacts
import HTTPGrammar
import Testing

@Suite struct RuleEngineTests {
    static let now: Int64 = 1_700_000_000
    static let context = MessageContext(
        scheme: "https", host: "app.example.com", port: 443, path: "/login", method: "GET", status: 200)

    static func run(_ rules: String, _ header: String, context: MessageContext = context) throws -> Transformation {
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(rules, file: "t.rules"), files: ["t.rules"]))
        return engine.apply(to: [SetCookie(header)], context: context, now: now)[0]
    }

    static func rule(_ body: String) -> String { "rule \"r\" {\n\(body)\n}\n" }

    /// Rule sets that cannot read the message (every rule for every message, compiled conditions and actions):
    /// the proxy then plans with an empty context; the rest read it.
    @Test(arguments: [
        ("secure", false), ("cookie-domain example.com\n    domain .example.com", false),
        ("samesite lax\n    httponly\n    secure off", false), ("domain add-dot\n    cookie-path /app", false),
        ("log", false), ("drop", false), ("host example.com\n    secure", true), ("path /app\n    secure", true),
        ("method POST\n    secure", true), ("scheme https\n    secure", true), ("status 200\n    secure", true),
        ("cookie sid\n    secure", true), ("where rejected\n    log", true), ("domain ensure", true),
        ("max-age 1h", true), ("response-header set X-A 1", true),
    ])
    func readsTheMessageOnlyWhenARuleCan(_ body: String, _ reads: Bool) throws {
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(Self.rule("    " + body), file: "t"), files: []))
        #expect(engine.readsMessageContext == reads)
    }

    /// Where the rules cannot read the message, planning with the empty context changes no outcome: the same
    /// lines, matches and notes as with the real one, for cookies of every shape the rules look at.
    @Test(arguments: [
        "secure", "cookie-domain example.com\n    domain .example.com", "cookie-domain *.example.com\n    drop",
        "samesite lax\n    httponly\n    secure off", "domain add-dot\n    cookie-path /app", "log",
    ])
    func planningWithoutTheMessageChangesNothingWhenNoRuleReadsIt(_ body: String) throws {
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(Self.rule("    " + body), file: "t"), files: []))
        try #require(!engine.readsMessageContext)
        let cookies = [
            "a=1", "a=1; Domain=example.com; Secure", "a=1; Domain=app.example.com; SameSite=None; Path=/",
            "a=1; Domain=.other.org; HttpOnly", "=v; Domain=example.com", "a=1; SameSite=lax; Secure; Secure",
        ].map { SetCookie($0) }
        let real = engine.cookiePlan(Self.context)
        let empty = engine.cookiePlan(.unread)
        for cookie in cookies {
            let a = engine.apply(real, to: cookie, now: Self.now)
            let b = engine.apply(empty, to: cookie, now: Self.now)
            #expect(a.result?.bytes == b.result?.bytes, "\(cookie)")
            #expect(a.rules == b.rules && a.notes == b.notes && a.logRequested == b.logRequested, "\(cookie)")
        }
    }

    /// A cookie matched by every rule of a file of N rules (the first 64 are kept in a word, the rest apart): all
    /// N names in file order, and every rule's action done (rule i sets Max-Age=i+1: the last one wins).
    @Test(arguments: [1, 63, 64, 65, 66, 130])
    func everyMatchingRuleIsListedAndAppliedPastTheFirst64(_ count: Int) throws {
        var text = ""
        for i in 0..<count { text += "rule \"r\(i)\" {\n    cookie a\n    max-age \(i + 1)s\n}\n" }
        let outcome = try Self.run(text, "a=1")
        #expect(outcome.rules == (0..<count).map { "r\($0)" })
        #expect(outcome.result?.description == "a=1; Max-Age=\(count)")
    }

    /// Golden cases: rules + Set-Cookie → exact output bytes, one per action.
    @Test(arguments: [
        ("domain .example.com", "a=1; Domain=app.example.com; Path=/", "a=1; Domain=.example.com; Path=/"),
        ("domain add-dot", "a=1; Domain=example.com", "a=1; Domain=.example.com"),
        ("domain add-dot", "a=1", "a=1"),
        ("domain strip-dot", "a=1; Domain=.example.com", "a=1; Domain=example.com"),
        ("domain remove", "a=1; Domain=example.com; Path=/", "a=1; Path=/"),
        ("domain ensure", "a=1; Path=/", "a=1; Path=/; Domain=example.com"),
        ("domain ensure", "a=1; Domain=app.example.com", "a=1; Domain=app.example.com"),
        ("domain ensure .example.com", "a=1", "a=1; Domain=.example.com"),
        ("cookie-path /app", "a=1; Path=/", "a=1; Path=/app"),
        ("cookie-path remove", "a=1; Path=/; Secure", "a=1; Secure"),
        ("secure", "a=1", "a=1; Secure"),
        ("secure", "a=1; secure", "a=1; secure"),
        ("secure off", "a=1; Secure; HttpOnly", "a=1; HttpOnly"),
        ("httponly", "a=1;", "a=1; HttpOnly"),
        ("partitioned\n    secure", "a=1", "a=1; Partitioned; Secure"),
        ("samesite lax", "a=1; SameSite=None", "a=1; SameSite=Lax"),
        ("samesite lax", "a=1; samesite=lax", "a=1; samesite=lax"),
        ("samesite remove", "a=1; SameSite=Strict; Path=/", "a=1; Path=/"),
        ("max-age 1h", "a=1", "a=1; Max-Age=3600"),
        ("max-age remove", "a=1; Max-Age=5", "a=1"),
        ("expires \"Sun, 09 Jun 2024 10:18:14 GMT\"", "a=1", "a=1; Expires=Sun, 09 Jun 2024 10:18:14 GMT"),
        ("expires remove", "a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT", "a=1"),
        ("session", "a=1; Max-Age=5; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Path=/", "a=1; Path=/"),
        ("cap-lifetime 1d", "a=1; Max-Age=999999", "a=1; Max-Age=86400"),
        ("cap-lifetime 1d", "a=1; Max-Age=60", "a=1; Max-Age=60"),
        ("cookie a\n    rename b", "a=1; Path=/", "b=1; Path=/"),
        ("rename add-prefix __Host-", "sid=1; Path=/; Secure", "__Host-sid=1; Path=/; Secure"),
        ("rename strip-prefix __Host-", "__Host-sid=1", "sid=1"),
        ("value \"redacted value\"", "a=secret; Path=/", "a=redacted value; Path=/"),
    ])
    func everyActionWritesExactlyTheseBytes(_ body: String, _ input: String, _ expected: String) throws {
        let outcome = try Self.run(Self.rule("    " + body), input)
        #expect(outcome.result?.description == expected)
        // Idempotent: applying the rule to its own output changes nothing.
        let again = try Self.run(Self.rule("    " + body), expected)
        #expect(again.result?.description == expected)
    }

    @Test func dropRemovesTheCookie() throws {
        let outcome = try Self.run(Self.rule("    cookie tracking*\n    drop"), "tracking_id=1")
        #expect(outcome.result == nil)
        #expect(outcome.changes.map(\.op) == [.drop])
        let untouched = try Self.run(Self.rule("    cookie tracking*\n    drop"), "sid=1")
        #expect(untouched.result?.description == "sid=1")
        #expect(untouched.rules.isEmpty)
    }

    @Test(arguments: [
        ("host example.com", false), ("host *.example.com", true), ("host app.example.com other.org", true),
        ("not host *.example.com", false), ("path /log", true), ("path /a /b", false), ("path /log*", true),
        ("method POST", false), ("method GET", true), ("status 2xx", true), ("status 302", false),
        ("cookie sid", true), ("cookie SID", false), ("cookie s*", true), ("cookie /^s.d$/", true),
        ("where host-only", true), ("where has-domain", false), ("where secure", false), ("not where secure", true),
        ("where session", true), ("where samesite-default", true), ("where rejected", false),
    ])
    func conditionsMatchTheOriginalMessageAndCookie(_ condition: String, _ matches: Bool) throws {
        let outcome = try Self.run(Self.rule("    \(condition)\n    httponly"), "sid=1")
        #expect((outcome.result?.description == "sid=1; HttpOnly") == matches)
    }

    @Test func rulesAreMatchedAgainstTheOriginalBeforeAnyIsApplied() throws {
        // The second rule tests "not secure" on the original, so the first rule's Secure does not hide it.
        let rules = """
            rule "one" {
                secure
            }
            rule "two" {
                not where secure
                httponly
            }
            """
        let outcome = try Self.run(rules, "a=1")
        #expect(outcome.result?.description == "a=1; Secure; HttpOnly")
        #expect(outcome.rules == ["one", "two"])
    }

    @Test func stopEndsTheRuleListForThatCookie() throws {
        let rules = """
            rule "first" {
                cookie a
                secure
                stop
            }
            rule "second" {
                httponly
            }
            """
        #expect(try Self.run(rules, "a=1").result?.description == "a=1; Secure")
        #expect(try Self.run(rules, "b=1").result?.description == "b=1; HttpOnly")
    }

    @Test func diffListsAttributeLevelChanges() throws {
        let outcome = try Self.run(
            Self.rule("    domain add-dot\n    secure\n    samesite remove\n    cookie sid\n    rename session"),
            "sid=1; Domain=example.com; SameSite=None")
        #expect(
            outcome.changes == [
                AttributeChange(op: .rename, attribute: "name", from: "sid", to: "session"),
                AttributeChange(op: .set, attribute: "Domain", from: "example.com", to: ".example.com"),
                AttributeChange(op: .add, attribute: "Secure", from: nil, to: ""),
                AttributeChange(op: .remove, attribute: "SameSite", from: "None", to: nil),
            ])
    }

    @Test(
        arguments: [
            ("cookie sid\n    rename app_sid", "app_sid=1; other=2", "sid=1; other=2"),
            ("rename add-prefix __Host-", "__Host-sid=1;x=2", "sid=1;x=2"),
            ("cookie __Secure-sid\n    rename strip-prefix __Secure-", "a=1; sid=2", "a=1; __Secure-sid=2"),
            ("cookie sid\n    rename app_sid", "other=1", nil),
        ] as [(String, String, String?)])
    func renamedCookiesGetTheirNamesBackInRequests(_ body: String, _ header: String, _ expected: String?) throws {
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(Self.rule("    " + body), file: "t"), files: []))
        let back = engine.renameBack(cookieHeader: Array(header.utf8), context: Self.context)
        #expect(back.map { String(decoding: $0, as: UTF8.self) } == expected)
    }

    @Test func headerActionsFollowTheMessageConditions() throws {
        let rules = """
            rule "h" {
                host app.example.com
                response-header set X-Frame-Options DENY
                response-header remove Server
            }
            """
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(rules, file: "t"), files: []))
        #expect(
            engine.responseHeaderActions(Self.context) == [
                .set(name: "X-Frame-Options", value: "DENY"), .remove(name: "Server"),
            ])
        let other = MessageContext(scheme: "https", host: "x.org", port: 443, path: "/", method: "GET", status: 200)
        #expect(engine.responseHeaderActions(other).isEmpty)
    }

    /// `upstream`: behind `--route`, the host of the route's upstream, so a rule can target one backend; a
    /// request of a forward proxy (no route) never matches it, and `not upstream` then holds.
    @Test(
        arguments: [
            ("api.staging.example", "upstream api.staging.example", true),
            ("api.staging.example", "upstream *.example", true),
            ("localhost", "upstream api.staging.example", false), (nil, "upstream *", false),
            (nil, "not upstream api.staging.example", true),
            ("api.staging.example", "not upstream api.staging.example", false),
        ] as [(String?, String, Bool)])
    func anUpstreamConditionTargetsOneBackend(_ upstream: String?, _ condition: String, _ applies: Bool) throws {
        var context = Self.context
        context.exchange.route = upstream.map { RouteFacts(name: "/api/ → https://\($0)/", upstreamHost: $0) }
        let t = try Self.run(
            Self.rule("    \(condition)\n    domain remove"), "sid=1; Domain=example.com", context: context)
        #expect((t.result?.description == "sid=1") == applies, "\(String(describing: t.result))")
    }

    @Test func redactionKeepsValuesOutOfTheLogButRecognisable() {
        let redaction = Redaction(showValues: false, key: Array(0..<16))
        let a = redaction.text(SetCookie("sid=s3cr3t; Path=/"))
        let b = redaction.text(SetCookie("sid=s3cr3t; Secure"))
        #expect(!a.contains("s3cr3t"))
        #expect(a.hasPrefix("sid=[h:") && a.hasSuffix("]; Path=/"))
        #expect(a.split(separator: ";")[0] == b.split(separator: ";")[0])
        #expect(Redaction(showValues: true, key: []).text(SetCookie("sid=s3cr3t")) == "sid=s3cr3t")
    }

    /// The same value hashes the same under one key and differently under another: without the installation's
    /// key, a guessed value cannot be confirmed from a shared log.
    @Test func redactionHashesAreKeyedPerInstallation() {
        let one = Redaction(showValues: false, key: Array(repeating: 1, count: 16))
        let other = Redaction(showValues: false, key: Array(repeating: 2, count: 16))
        let values = ["alice@example.com", "1", "2", "user-42", ""]
        for value in values {
            #expect(one.hash(Array(value.utf8)) == one.hash(Array(value.utf8)))
            #expect(one.hash(Array(value.utf8)) != other.hash(Array(value.utf8)), "\(value)")
        }
        #expect(Set(values.map { one.hash(Array($0.utf8)) }).count == values.count)
        #expect(one.hash(Array("1".utf8)).utf8.count == 10)
    }
}

/// The presets in rules/ do what their comments say.
@Suite struct PresetTests {
    static let folder = String(#filePath.dropLast("Tests/CookieRulesTests/RuleEngineTests.swift".count)) + "rules"

    static func apply(_ file: String, url: String, _ header: String) throws -> String? {
        let text = try String(contentsOfFile: "\(folder)/\(file)", encoding: .utf8)
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(text, file: file), files: [file]))
        let u = RequestURL(url)!
        let context = MessageContext(
            scheme: u.scheme, host: u.host, port: u.port ?? 443, path: u.path, method: "GET", status: 200)
        return engine.apply(to: [SetCookie(header)], context: context, now: 1_700_000_000)[0].result?.description
    }

    @Test func subdomainLoginAddsTheDotAndHardens() throws {
        #expect(
            try Self.apply(
                "subdomain-login.rules", url: "https://bin.example.com/login",
                "Bin-Auth-Token=abc; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly")
                == "Bin-Auth-Token=abc; Path=/; Domain=.bin.example.com; Max-Age=604800; HttpOnly; Secure; SameSite=Lax"
        )
        #expect(
            try Self.apply("subdomain-login.rules", url: "https://other.example.com/", "Bin-Auth-Token=abc")
                == "Bin-Auth-Token=abc")
    }

    /// The preset covers every local development origin (localhost, *.localhost, 127.0.0.1, ::1): the production
    /// Domain goes; over http Secure goes and SameSite=None becomes Lax, over https both stay; other hosts are not
    /// touched.
    @Test(arguments: [
        ("http://localhost:3000/", "sid=1; SameSite=Lax"), ("http://app.localhost:5173/", "sid=1; SameSite=Lax"),
        ("http://127.0.0.1:8080/", "sid=1; SameSite=Lax"), ("http://[::1]:3000/", "sid=1; SameSite=Lax"),
        ("https://localhost:8443/", "sid=1; Secure; SameSite=None"),
        ("https://app.localhost:8443/", "sid=1; Secure; SameSite=None"),
        ("https://prod.example.com/", "sid=1; Domain=prod.example.com; Secure; SameSite=None"),
    ])
    func localhostDevMakesProductionCookiesStick(_ url: String, _ result: String) throws {
        #expect(
            try Self.apply("localhost-dev.rules", url: url, "sid=1; Domain=prod.example.com; Secure; SameSite=None")
                == result)
    }

    @Test func hardeningAddsWhatIsMissing() throws {
        #expect(
            try Self.apply("hardening.rules", url: "https://example.com/", "a=1")
                == "a=1; Secure; HttpOnly; SameSite=Lax")
        #expect(
            try Self.apply("hardening.rules", url: "https://example.com/", "a=1; SameSite=Strict")
                == "a=1; SameSite=Strict; Secure; HttpOnly")
    }

    @Test func auditChangesNothing() throws {
        #expect(
            try Self.apply("audit.rules", url: "https://example.com/", "a=1; SameSite=None") == "a=1; SameSite=None")
    }
}
