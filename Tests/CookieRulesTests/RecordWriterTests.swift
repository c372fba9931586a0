@testable import CookieKit
@testable import CookieRules
import Foundation
import Testing

/// The log's direct writer (``TransformationRecord/writeJSON(to:redaction:changes:)``) writes exactly what the
/// record's ``JSONValue`` form serialises to, for every change kind, finding and option.
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

    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func theDirectWriterWritesWhatTheTreeSerialises(_ showValues: Bool, _ dryRun: Bool) throws {
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(Self.rules, file: "t.rules"), files: []))
        let context = MessageContext(
            scheme: "https", host: "app.example.com", port: 443, path: "/login", method: "POST", status: 200)
        let redaction = Redaction(showValues: showValues, key: Array(0..<16))
        var compared = 0
        for text in Self.cookies {
            let outcome = engine.apply(to: [SetCookie(text)], context: context, now: 1_700_000_000)[0]
            var record = TransformationRecord(
                time: 1_700_000_000_123, requestID: 42, client: "127.0.0.1", method: "POST",
                url: "https://app.example.com:443/login?\"q\"", status: 200, outcome: outcome, findings: [],
                dryRun: dryRun)
            record.findings = CookieLint.findings(
                for: outcome.result ?? outcome.original, from: context.requestURL, now: 1_700_000_000)
            var writer = JSONWriter()
            record.writeJSON(to: &writer, redaction: redaction, changes: outcome.changes)
            let direct = writer.withBytes { String(decoding: $0, as: UTF8.self) }
            #expect(direct == record.json(redaction: redaction).serialized, "\(text)")
            // And it is JSON that a reader takes back.
            #expect((try? JSONSerialization.jsonObject(with: Data(direct.utf8))) != nil, "\(text)")
            compared += 1
        }
        #expect(compared == Self.cookies.count)
    }
}

@Suite struct SipHashTests {
    /// The reference vectors of the SipHash paper (Appendix A; key 00…0f, messages 00…(n-1)).
    @Test(arguments: [(0, 0x726f_db47_dd0e_0e31 as UInt64), (1, 0x74f8_39c5_93dc_67fd), (15, 0xa129_ca61_49be_45e5)])
    func sipHash24MatchesTheReferenceVectors(_ length: Int, _ expected: UInt64) {
        let k0: UInt64 = 0x0706_0504_0302_0100
        let k1: UInt64 = 0x0f0e_0d0c_0b0a_0908
        #expect(SipHash24.hash((0..<length).map { UInt8($0) }, k0, k1) == expected)
    }
}
