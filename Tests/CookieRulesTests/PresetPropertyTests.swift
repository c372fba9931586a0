import CookieKit
import CookieRules
import Foundation
import Testing

/// The shipped presets never break a cookie: for every Set-Cookie line of both conformance corpora that a browser
/// keeps at its URL, the result of the whole rules/ folder (as scripts/run.sh loads it) is kept too.
@Suite struct PresetPropertyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func engine() throws -> RuleEngine {
        let folder = root.appendingPathComponent("rules").path
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".rules") }
            .sorted()
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
