import CookieConformance
import CookieKit
import Foundation
import Testing
import TestSupport

@testable import CookieRules

/// The proxy's path through the shape cache against the engine's full path (parse, match, rewrite) for every
/// Set-Cookie line of both conformance corpora and variants of each that keep its cookie-avs and change its pair:
/// the same outcome — rules matched, dropped, logged, rewritten, and the edited bytes — whether it was worked out
/// or taken from the cache, under rule sets whose plans allow the cache and under ones that must bypass it.
@Suite struct CookieShapeCacheTests {

    /// The line with other pairs before the same cookie-avs: another name and value, a value only, an empty
    /// pair (ignored by user agents), a pair with a tab and one with a control character, an over-long value.
    static func variants(_ line: [UInt8]) -> [[UInt8]] {
        let shape = line[(line.firstIndex(of: 0x3B) ?? line.count)...]
        let pairs = [
            "other=\(line.count)", "lonevalue", "", "=", "a=b\tc", "a=b\u{1}c",
            "big=" + String(repeating: "v", count: 4100),
        ]
        return [line] + pairs.map { Array($0.utf8) + shape }
    }

    struct Outcome: Equatable, CustomStringConvertible {
        var matched: UInt64
        var dropped: Bool
        var logRequested: Bool
        var rewritten: Bool
        var bytes: [UInt8]?
        var description: String {
            "matched \(String(matched, radix: 2)) dropped \(dropped) log \(logRequested) "
                + (bytes.map { "→ " + String(decoding: $0, as: UTF8.self) } ?? "unchanged")
        }
    }

    static func outcome(_ edit: RuleEngine.Edit, _ rewrite: inout SetCookieRewrite) -> Outcome {
        Outcome(
            matched: edit.matchedRulesLow, dropped: edit.dropped, logRequested: edit.logRequested,
            rewritten: edit.rewritten, bytes: edit.rewritten ? rewrite.withOutput { Array($0) } : nil)
    }

    /// (rules, whether their plans may use the cache).
    static let ruleSets: [(String, Bool)] = [
        (
            """
            rule "dot" {
                cookie-domain example.test
                domain .example.test
            }
            rule "flags" {
                secure
                httponly
                samesite lax
            }
            """, true
        ),
        (
            """
            rule "local" {
                secure off
                partitioned off
                domain localhost
            }
            rule "removals" {
                cookie-domain *.example.com
                domain remove
                cookie-path remove
                max-age remove
                expires remove
                samesite remove
            }
            rule "none to lax" {
                samesite lax
            }
            """, true
        ),
        (
            """
            rule "dot some" {
                cookie-domain *.example.com example.org
                domain add-dot
                cookie-path /
            }
            rule "drop others" {
                not cookie-domain *
                drop
            }
            rule "log the rest" {
                log
                stop
            }
            rule "never" {
                partitioned
            }
            """, true
        ),
        (
            // A host condition: the plan depends on the message, its rules still read only the cookie-avs.
            """
            rule "on a host" {
                host *.example.com
                samesite strict
                httponly off
            }
            """, true
        ),
        (
            // A condition on the name, an action that reads the time: never from the cache.
            """
            rule "name" {
                cookie sid
                secure
            }
            rule "lifetime" {
                max-age 1h
            }
            """, false
        ),
    ]

    @Test(arguments: ruleSets.indices)
    func theCachedOutcomeIsTheFullPathsOutcome(_ index: Int) throws {
        let (text, cacheable) = Self.ruleSets[index]
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(text + "\n", file: "t"), files: []))
        let context = MessageContext(
            scheme: "https", host: "www.example.com", port: 443, path: "/", method: "GET", status: 200)
        let plan = engine.cookiePlan(context)
        #expect((plan.shapeKey != nil) == cacheable)
        var parser = SetCookieParser()
        var rewrite = SetCookieRewrite()
        var shapes = CookieShapeCache()
        var fullParser = SetCookieParser()
        var fullRewrite = SetCookieRewrite()
        var lines = 0
        for line in try Corpora.setCookieLines().flatMap(Self.variants) {
            try line.withUnsafeBufferPointer { b in
                let expected = Self.outcome(
                    engine.apply(plan, to: fullParser.parse(b), now: 1_700_000_000, rewrite: &fullRewrite),
                    &fullRewrite)
                // Twice: worked out (and kept) the first time when the shape is new, taken from the cache after.
                for pass in 0..<2 {
                    let edit = engine.apply(
                        plan, line: b, now: 1_700_000_000, parser: &parser, rewrite: &rewrite, shapes: &shapes)
                    let got = Self.outcome(edit, &rewrite)
                    try #require(got == expected, "pass \(pass) of \(String(decoding: line, as: UTF8.self))")
                }
            }
            lines += 1
        }
        #expect(lines > 2000)
        // Not vacuous: the cache answered a good part of the lines (three of a line's eight variants have a sound
        // pair; some corpus lines are edited on a working copy or too long to keep), or none at all where the plan
        // does not allow it.
        if cacheable { #expect(shapes.hits > lines / 4) } else { #expect(shapes.hits == 0) }
    }

    /// The same cookie-avs under another plan (a host condition that holds on one message and not the other) or
    /// another engine (a reload) are worked out again, not taken from the cache.
    @Test func anotherPlanOrEngineIsNotAnsweredFromTheCache() throws {
        func engine(_ flag: String) throws -> RuleEngine {
            RuleEngine(
                RuleSet(
                    rules: try RulesParser.parse(
                        "rule \"r\" {\n    host a.example\n    \(flag)\n}\nrule \"all\" {\n    httponly\n}\n",
                        file: "t"), files: []))
        }
        let first = try engine("secure")
        let reloaded = try engine("partitioned")
        func context(_ host: String) -> MessageContext {
            MessageContext(scheme: "https", host: host, port: 443, path: "/", method: "GET", status: 200)
        }
        var parser = SetCookieParser()
        var rewrite = SetCookieRewrite()
        var shapes = CookieShapeCache()
        let cases: [(RuleEngine, String, String)] = [
            (first, "a.example", "sid=1; Path=/; Secure; HttpOnly"),
            (first, "b.example", "sid=1; Path=/; HttpOnly"),
            (first, "a.example", "sid=1; Path=/; Secure; HttpOnly"),
            (reloaded, "a.example", "sid=1; Path=/; Partitioned; HttpOnly"),
            (first, "a.example", "sid=1; Path=/; Secure; HttpOnly"),
        ]
        for (engine, host, expected) in cases {
            let plan = engine.cookiePlan(context(host))
            let line = Array("sid=1; Path=/".utf8)
            let result = line.withUnsafeBufferPointer { b in
                let edit = engine.apply(plan, line: b, now: 0, parser: &parser, rewrite: &rewrite, shapes: &shapes)
                return edit.rewritten ? rewrite.withOutput { String(decoding: $0, as: UTF8.self) } : "unchanged"
            }
            #expect(result == expected, "\(host)")
        }
        #expect(shapes.hits == 1)
    }
}
