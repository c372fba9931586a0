import CookieConformance
import CookieKit
import Foundation
import Testing

@testable import CookieRules

/// `request-cookie` actions: each edits one cookie of a request's Cookie header and leaves every other byte as the
/// client sent it.
@Suite struct RequestCookieTests {
    static func engine(_ text: String) throws -> RuleEngine {
        RuleEngine(RuleSet(rules: try RulesParser.parse(text, file: "t.rules"), files: ["t.rules"]))
    }
    static let context = MessageContext(
        scheme: "https", host: "app.test", port: 443, path: "/", method: "GET", status: nil)

    /// (rules, Cookie header sent, header forwarded (nil: the field removed), changes as op:name)
    static let rows: [(String, String?, String?, [String])] = [
        ("request-cookie remove _ga", "a=1; _ga=GA1.2; b=2", "a=1; b=2", ["remove:_ga"]),
        ("request-cookie remove _ga", "_ga=GA1.2; b=2", "b=2", ["remove:_ga"]),
        ("request-cookie remove _ga", "a=1;_ga=x", "a=1", ["remove:_ga"]),
        ("request-cookie remove _ga", "_ga=1", nil, ["remove:_ga"]),
        (
            "request-cookie remove _g* /^utm/", "_ga=1; keep=2; utm_x=3; _gid=4", "keep=2",
            ["remove:_ga", "remove:utm_x", "remove:_gid"]
        ),
        ("request-cookie remove none", "a=1;  b=2", "a=1;  b=2", []),
        ("request-cookie set theme light", "a=1; theme=dark; b=2", "a=1; theme=light; b=2", ["set:theme"]),
        ("request-cookie set theme light", "a=1; theme=light", "a=1; theme=light", []),
        ("request-cookie set theme light", "a=1", "a=1; theme=light", ["add:theme"]),
        ("request-cookie set theme light", nil, "theme=light", ["add:theme"]),
        ("request-cookie set theme light", "theme=", "theme=light", ["set:theme"]),
        ("request-cookie rename sid session_id", "a=1; sid=xyz; b=2", "a=1; session_id=xyz; b=2", ["rename:sid"]),
        ("request-cookie rename sid session_id", "a=1", "a=1", []),
        ("host other.test\n    request-cookie remove a", "a=1", "a=1", []),
        ("not host other.test\n    request-cookie remove a", "a=1; b=2", "b=2", ["remove:a"]),
        ("method POST\n    request-cookie remove a", "a=1", "a=1", []),
        ("scheme https\n    request-cookie remove a", "a=1", nil, ["remove:a"]),
        ("path /api/\n    request-cookie remove a", "a=1", "a=1", []),
        ("request-cookie remove a\n    request-cookie set a 2", "a=1", "a=2", ["remove:a", "add:a"]),
    ]

    @Test(arguments: rows.indices)
    func eachActionEditsOneCookieAndLeavesTheRest(_ i: Int) throws {
        let (body, sent, forwarded, changes) = Self.rows[i]
        let engine = try Self.engine("rule r {\n    \(body)\n}\n")
        var headers = sent.map { [CookieHeader(Array($0.utf8))] } ?? []
        let made = engine.editRequestCookies(&headers, context: Self.context)
        #expect(made.map { "\($0.op.rawValue):\($0.name)" } == changes)
        let result = headers.first.flatMap { $0.bytes.isEmpty ? nil : String(decoding: $0.bytes, as: UTF8.self) }
        #expect(result == forwarded)
        #expect(made.allSatisfy { $0.rule == "r" })
    }

    @Test func whereReadsTheClientsJar() throws {
        let engine = try Self.engine("rule r {\n    not where partitioned\n    request-cookie remove *\n}\n")
        var headers = [CookieHeader(Array("p=1; u=2; unknown=3".utf8))]
        var store = CookieJar(clock: { 1_800_000_000 })
        let url = RequestURL("https://app.test/")!
        let held = [
            try store.receive(SetCookie("p=1; Secure; SameSite=None; Partitioned"), from: url).get(),
            try store.receive(SetCookie("u=2; Secure; SameSite=None"), from: url).get(),
        ]
        let jar: (ArraySlice<UInt8>) -> StoredCookie? = { name in held.first { $0.nameBytes.elementsEqual(name) } }
        let made = engine.editRequestCookies(&headers, context: Self.context, jar: jar)
        #expect(made.map(\.name) == ["u", "unknown"])
        #expect(String(decoding: headers[0].bytes, as: UTF8.self) == "p=1")
    }

    @Test func theSiteConditionReadsTheRequestsContext() throws {
        let engine = try Self.engine("rule r {\n    site cross-site\n    request-cookie remove *\n}\n")
        for (kind, removed) in [
            (RequestSite.Kind.sameSite, false), (.crossSiteNavigation, true), (.crossSiteSubresource, true),
            (.unknown, false),
        ] {
            var context = Self.context
            context.site = kind
            var headers = [CookieHeader(Array("a=1".utf8))]
            #expect(engine.editRequestCookies(&headers, context: context).isEmpty == !removed, "\(kind)")
        }
    }

    /// Every Cookie header the corpora expect a browser to send: removing, setting and renaming each cookie in turn
    /// changes that cookie's bytes and no other byte of the header.
    @Test func untouchedCookiesKeepTheirBytesOverTheCorpora() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("conformance").path
        var headers: Set<String> = []
        for corpus in ["http-state.json", "wpt.json"] {
            for c in try ConformanceSuite(contentsOf: "\(folder)/\(corpus)").cases {
                for case .get(_, _, let expect) in c.steps where !expect.isEmpty { headers.insert(expect) }
            }
        }
        #expect(headers.count > 100)
        var checked = 0
        for text in headers.sorted() {
            let original = CookieHeader(Array(text.utf8))
            for (k, pair) in original.pairs.enumerated() {
                let name = original.name(pair)
                // Only names a rule can write (a token): the others cannot be named in a rules file.
                guard !name.isEmpty,
                    name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !"()<>@,;:\\\"/[]?={}".utf8.contains($0) }),
                    original.pairs.filter({ original.name($0) == name }).count == 1
                else { continue }
                let b = original.bytes
                // remove: the pair and one separator go; the bytes before and after are the original's.
                var removed = [original]
                _ = try Self.engine("rule r {\n    request-cookie remove \"\(name)\"\n}\n").editRequestCookies(
                    &removed, context: Self.context)
                let cut =
                    k > 0
                    ? original.pairs[k - 1].range.upperBound..<pair.range.upperBound
                    : original.pairs.count > 1
                        ? pair.range.lowerBound..<original.pairs[1].range.lowerBound : 0..<b.count
                #expect(
                    removed[0].bytes == Array(b[..<cut.lowerBound] + b[cut.upperBound...]), "\(text) remove \(name)")
                // set: only the value's bytes change.
                var set = [original]
                _ = try Self.engine("rule r {\n    request-cookie set \"\(name)\" NEW\n}\n").editRequestCookies(
                    &set, context: Self.context)
                #expect(
                    set[0].bytes
                        == Array(b[..<pair.value.lowerBound] + Array("NEW".utf8) + b[pair.value.upperBound...]),
                    "\(text) set \(name)")
                // rename: only the name's bytes change.
                var renamed = [original]
                _ = try Self.engine("rule r {\n    request-cookie rename \"\(name)\" Z9\n}\n").editRequestCookies(
                    &renamed, context: Self.context)
                #expect(
                    renamed[0].bytes
                        == Array(b[..<pair.name.lowerBound] + Array("Z9".utf8) + b[pair.name.upperBound...]),
                    "\(text) rename \(name)")
                // a rule for a name the header does not carry: nothing changes.
                var untouched = [original]
                let none = try Self.engine("rule r {\n    request-cookie remove not-there-\(k)\n}\n")
                    .editRequestCookies(
                        &untouched, context: Self.context)
                #expect(none.isEmpty && untouched[0].bytes == b)
                checked += 1
            }
        }
        #expect(checked > 100)
    }

    /// Errors at file:line:column for what a request-cookie rule cannot do.
    static let errors: [(String, String)] = [
        ("request-cookie", "needs remove, set or rename"),
        ("request-cookie drop a", "not 'drop'"),
        ("request-cookie remove", "needs one or more cookie names"),
        ("request-cookie set a", "needs a name and one value"),
        ("request-cookie set a \"b c\"", "must not contain whitespace"),
        ("request-cookie set a b;c", "must not contain whitespace"),
        ("request-cookie rename a", "needs FROM and TO"),
        ("request-cookie rename a b c", "needs FROM and TO"),
        ("request-cookie remove a\n    secure", "put them in rules of their own"),
        ("status 200\n    request-cookie remove a", "cannot depend on 'status'"),
        ("cookie a\n    request-cookie remove a", "name the cookies on the 'request-cookie' line"),
        ("where rejected\n    request-cookie remove a", "'where rejected' describes a Set-Cookie line"),
        ("site cross-sit\n    request-cookie remove a", "did you mean 'cross-site'"),
    ]

    @Test(arguments: errors.indices)
    func invalidRequestCookieRulesAreRefusedWithTheirPlace(_ i: Int) {
        let (body, message) = Self.errors[i]
        do {
            _ = try RulesParser.parse("rule r {\n    \(body)\n}\n", file: "t.rules")
            Issue.record("accepted: \(body)")
        } catch {
            #expect(error.description.contains(message), "\(error.description)")
            #expect(error.description.hasPrefix("t.rules:"))
        }
    }
}

/// `try`'s output, made without the executable: a Set-Cookie value's trial and a Cookie header's.
@Suite struct RulesTrialTests {
    static let engine = RuleEngine(
        RuleSet(
            rules: try! RulesParser.parse(
                "rule \"harden\" {\n    httponly\n}\n\nrule \"no tracking\" {\n    request-cookie remove _ga\n}\n",
                file: "t.rules"),
            files: ["t.rules"]))

    @Test func aSetCookieValuesTrialSaysBeforeAfterRulesAndChanges() throws {
        let url = try #require(RequestURL("https://a.test/"))
        let context = MessageContext(scheme: "https", host: "a.test", port: 443, path: "/", method: "GET", status: 200)
        let outcome = Self.engine.apply(to: [SetCookie("sid=1; SameSite=None")], context: context, now: 0)[0]
        let trial = RulesTrial(outcome, url: url, site: nil, now: 0)
        #expect(
            trial.text.text.hasPrefix(
                "before:  sid=1; SameSite=None\nafter:   sid=1; SameSite=None; HttpOnly\nrules:   harden\n"
                    + "change:  add HttpOnly\n"), "\(trial.text)")
        #expect(trial.json.serialized.contains(#""after":"sid=1; SameSite=None; HttpOnly""#))
        #expect(trial.json.serialized.contains(#""findings":["samesite-none-insecure""#), "\(trial.json.serialized)")
    }

    @Test func aCookieHeadersTrialSaysWhatTheRequestCookieRulesDid() {
        let context = MessageContext(scheme: "https", host: "a.test", port: 443, path: "/", method: "GET", status: nil)
        let trial = RulesTrial.request("Cookie: _ga=1; sid=2", engine: Self.engine, context: context)
        #expect(trial.text.text.contains("after:   Cookie: sid=2\n"), "\(trial.text)")
        #expect(trial.text.text.contains("change:  remove _ga (rule \"no tracking\", t.rules:5)"), "\(trial.text)")
        #expect(trial.json.serialized.contains(#""after":"sid=2""#), "\(trial.json.serialized)")
    }
}
