@testable import CookieKit
@testable import CookieRules
import JSONStream
import ProxyApp
import ExchangeFacts
import Foundation
import HTTPGrammar
import Testing
import TestSupport

/// The log's record writer (``TransformationRecord/writeJSON(to:redaction:changes:)``), the one way a record becomes
/// text: every change kind, finding and option against golden bytes, and every corpus line read back.
@Suite struct RecordWriterTests {
    static let rules = """
        rule "dot" {
            host example.com *.example.com
            cookie sid
            domain .example.com
            secure
            httponly
            samesite lax
        }
        rule "strip for localhost" {
            cookie dev*
            domain remove
            secure off
            cap-lifetime 1h
        }
        rule "rename" {
            cookie old
            rename new
        }
        rule "drop" {
            cookie gone
            drop
        }
        rule "value" {
            cookie v
            value "replaced"
        }
        rule "expire" {
            cookie tmp
            max-age 0
        }
        rule "log only" {
            cookie audit
            log
        }
        """

    static let cookies = [
        "sid=abc123; Domain=example.com; Path=/; Max-Age=604800; HttpOnly",
        "dev-token=x; Domain=prod.example.com; Secure; SameSite=None",
        "old=1; Path=/a", "gone=2", "v=secret", "tmp=3; Expires=Wed, 21 Oct 2037 07:28:00 GMT", "audit=4",
        "sid=\"quoted \\ value\"; Domain=example.com", "sid=; Domain=example.com", "=nameless; Domain=example.com",
        "sid=caf\u{E9}; Domain=example.com", "sid=a\u{1}b; Domain=example.com", "sid=x; SameSite=Strict; SameSite=Lax",
        "__Host-sid=1; Domain=example.com", "sid=1; Domain=evil.org", "sid=1; Expires=garbage; Max-Age=x",
    ]

    /// The records of the table under each option, as the log writes them: compared with golden bytes
    /// (Tests/CookieRulesTests/golden/, `UPDATE_GOLDEN=1` writes them again), and each a JSON object a reader takes
    /// back.
    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func recordsAreWrittenAsTheGoldenBytes(_ showValues: Bool, _ dryRun: Bool) throws {
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(Self.rules, file: "t.rules"), files: []))
        let context = MessageContext(
            scheme: "https", host: "app.example.com", port: 443, path: "/login", method: "POST", status: 200)
        let redaction = Redaction(showValues: showValues, key: Array(0..<16))
        var written: [String] = []
        for text in Self.cookies {
            let outcome = engine.apply(to: [SetCookie(text)], context: context, now: 1_700_000_000)[0]
            var record = TransformationRecord(
                time: 1_700_000_000_123,
                exchange: ExchangeContext(
                    requestID: 42, clientAddress: "127.0.0.1", method: "POST", scheme: "https",
                    host: "app.example.com", port: 443, target: "/login?\"q\"", status: 200),
                outcome: outcome, findings: [], dryRun: dryRun)
            record.findings = CookieLint.findings(
                for: outcome.result ?? outcome.received, from: context.requestURL, now: 1_700_000_000)
            var writer = JSONWriter()
            record.writeJSON(to: &writer, redaction: redaction, changes: outcome.changes)
            let line = writer.withBytes { String(decoding: $0, as: UTF8.self) }
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] != nil, "\(text)")
            written.append(line)
        }
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("golden/records-values-\(showValues)-dry-run-\(dryRun).jsonl").path
        let text = written.joined(separator: "\n") + "\n"
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] != nil {
            try text.write(toFile: golden, atomically: true, encoding: .utf8)
        }
        #expect(text == (try String(contentsOfFile: golden, encoding: .utf8)))
    }

    /// Every Set-Cookie line of both corpora, as a record with values shown: JSON a reader takes back, whose
    /// `before` is the line (as UTF-8 text, malformed bytes replaced) and whose `cookie` is its name.
    @Test func everyCorpusLineIsWrittenAsARecordThatReadsBack() throws {
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(Self.rules, file: "t.rules"), files: []))
        let context = MessageContext(
            scheme: "https", host: "app.example.com", port: 443, path: "/", method: "GET", status: 200)
        let redaction = Redaction(showValues: true, key: [])
        let lines = try Corpora.setCookieLines()
        #expect(lines.count > 1000)
        for bytes in lines {
            let cookie = SetCookie(bytes[...])
            let outcome = engine.apply(to: [cookie], context: context, now: 1_700_000_000)[0]
            let record = TransformationRecord(
                time: 0,
                exchange: ExchangeContext(
                    requestID: 1, clientAddress: "::1", method: "GET", scheme: "https", host: "app.example.com",
                    port: 443, target: "/", status: 200),
                outcome: outcome, findings: [], dryRun: false)
            var writer = JSONWriter()
            record.writeJSON(to: &writer, redaction: redaction, changes: outcome.changes)
            let data = writer.withBytes { Data($0) }
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(object["before"] as? String == String(decoding: bytes, as: UTF8.self))
            #expect(object["cookie"] as? String == cookie.name)
        }
    }
}
