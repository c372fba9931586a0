import CookieKit
import CookieRules
import Foundation
import Testing

/// The shipped presets never break a cookie: for every Set-Cookie line of both conformance corpora that a browser
/// keeps at its URL, the result of the whole rules/ folder (as scripts/run.sh loads it) is kept too.
@Suite struct PresetPropertyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static let folder = root.appendingPathComponent("rules").path
    static let presets = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
        .filter { $0.hasSuffix(".rules") }.sorted()

    /// The presets `files`, loaded in this order (the whole folder, in name order, by default).
    static func engine(_ files: [String] = presets) throws -> RuleEngine {
        var rules: [Rule] = []
        for file in files {
            rules += try RulesParser.parse(
                try String(contentsOfFile: folder + "/" + file, encoding: .utf8), file: file)
        }
        return RuleEngine(RuleSet(rules: rules, files: files))
    }

    @Test(arguments: ["http-state.json", "wpt.json"])
    func thePresetsNeverMakeAKeptCookieRejected(_ corpus: String) throws {
        let engine = try Self.engine()
        let path = Self.root.appendingPathComponent("conformance/\(corpus)").path
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        var kept = 0
        var changed = 0
        for case let c as [String: Any] in json["cases"] as! [Any] {
            let now = CookieDate.parseRFC3339(c["now"] as? String ?? "") ?? 1_700_000_000
            for case let step as [String: Any] in c["steps"] as! [Any] {
                guard let set = step["set"] as? String, step["via"] as? String == "http", let url = RequestURL(set)
                else { continue }
                for case let line as String in step["headers"] as? [Any] ?? [] {
                    let cookie = SetCookie(line)
                    guard case .success = CookieJar.evaluate(cookie, from: url, now: now, suffixes: .system) else {
                        continue
                    }
                    kept += 1
                    let context = MessageContext(
                        scheme: url.scheme, host: url.host, port: url.port ?? (url.scheme == "https" ? 443 : 80),
                        path: url.path, method: "GET", status: 200)
                    let outcome = engine.apply(to: [cookie], context: context, now: now)[0]
                    guard let result = outcome.result else {
                        Issue.record("\(c["id"]!): the presets dropped \(line)")
                        continue
                    }
                    if result.bytes != cookie.bytes { changed += 1 }
                    if case .failure(let why) = CookieJar.evaluate(result, from: url, now: now, suffixes: .system) {
                        Issue.record(
                            "\(c["id"]!): \(line) at \(set) is kept, but after the presets \(result) is not: \(why)")
                    }
                }
            }
        }
        // Not vacuous: many kept cookies, and the presets change many of them.
        #expect(kept > 100)
        #expect(changed > 50)
    }

    /// The presets combine by meaning, whatever order they load in: on every form of a local development host
    /// (`@local`), over http and https, `hardening.rules` changes nothing and `localhost-dev.rules` does what it
    /// says, for every pair of presets in both orders.
    @Test(arguments: ["localhost", "app.localhost", "127.0.0.1", "::1"])
    func everyPairOfPresetsAgreesOnEveryLocalHost(_ host: String) throws {
        #expect(Self.presets.count >= 4 && Self.presets.contains("hardening.rules"))
        let lines = [
            "csrf=1", "sid=1; Domain=staging.example; Secure; SameSite=None; HttpOnly",
            "Bin-Auth-Token=x; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly", "pref=dark; Path=/",
        ]
        var compared = 0
        for first in Self.presets {
            for second in Self.presets where second != first {
                let pair = try Self.engine([first, second])
                let withoutHardening = try Self.engine([first, second].filter { $0 != "hardening.rules" })
                let reversed = try Self.engine([second, first])
                for scheme in ["http", "https"] {
                    let context = MessageContext(
                        scheme: scheme, host: host, port: scheme == "https" ? 443 : 80, path: "/", method: "GET",
                        status: 200)
                    for line in lines {
                        func result(_ engine: RuleEngine) -> String {
                            engine.apply(to: [SetCookie(line)], context: context, now: 0)[0].result?.description
                                ?? "dropped"
                        }
                        let got = result(pair)
                        #expect(got == result(withoutHardening), "\(first) + \(second), \(scheme)://\(host): \(line)")
                        #expect(
                            got == result(reversed), "\(first) + \(second) in both orders, \(scheme)://\(host): \(line)"
                        )
                        if first == "localhost-dev.rules" || second == "localhost-dev.rules" {
                            #expect(!got.contains("Domain="), "\(scheme)://\(host): \(line) -> \(got)")
                            #expect(got.contains("Secure") == (scheme == "https" && line.contains("Secure")), "\(got)")
                        }
                        compared += 1
                    }
                }
            }
        }
        #expect(compared == Self.presets.count * (Self.presets.count - 1) * 2 * lines.count)
    }

    /// `@local` is one set of hosts: its members and only them, in `host` and `upstream`; it is refused where it has
    /// no meaning (`cookie-domain`).
    @Test(arguments: [
        ("localhost", true), ("app.localhost", true), ("a.b.localhost", true), ("127.0.0.1", true), ("::1", true),
        ("localhost.example", false), ("notlocalhost", false), ("127.0.0.2", false), ("example.com", false),
    ])
    func theLocalHostSetMatchesLocalDevelopmentHostsOnly(_ host: String, _ local: Bool) throws {
        let engine = RuleEngine(
            RuleSet(
                rules: try RulesParser.parse("rule \"r\" {\n    host @local\n    httponly\n}\n", file: "t"), files: []))
        let context = MessageContext(scheme: "http", host: host, port: 80, path: "/", method: "GET", status: 200)
        let result = engine.apply(to: [SetCookie("a=b")], context: context, now: 0)[0].result?.description
        #expect(result == (local ? "a=b; HttpOnly" : "a=b"))
        #expect(throws: RulesError.self) {
            try RulesParser.parse("rule \"r\" {\n    cookie-domain @local\n    httponly\n}\n", file: "t")
        }
    }
}

@Suite struct SchemeConditionTests {
    @Test(arguments: [
        ("https", "https", true), ("https", "http", false), ("http https", "http", true), ("HTTP", "http", true),
    ])
    func aSchemeConditionMatchesTheRequestScheme(_ schemes: String, _ scheme: String, _ matches: Bool) throws {
        let engine = RuleEngine(
            RuleSet(
                rules: try RulesParser.parse("rule \"r\" {\n    scheme \(schemes)\n    secure\n}\n", file: "t"),
                files: []))
        let context = MessageContext(
            scheme: scheme, host: "a.example", port: 443, path: "/", method: "GET", status: 200)
        let result = engine.apply(to: [SetCookie("a=b")], context: context, now: 0)[0].result?.description
        #expect(result == (matches ? "a=b; Secure" : "a=b"))
    }

    @Test func anUnknownSchemeIsAnErrorAtItsColumn() {
        #expect(throws: RulesError.self) {
            try RulesParser.parse("rule \"r\" {\n    scheme ftp\n    secure\n}\n", file: "t")
        }
        do {
            _ = try RulesParser.parse("rule \"r\" {\n    scheme ftp\n    secure\n}\n", file: "t")
        } catch {
            #expect(error.description.hasPrefix("t:2:12: error: scheme 'ftp' must be http or https"))
        }
    }
}
