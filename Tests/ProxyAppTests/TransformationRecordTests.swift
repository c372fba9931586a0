import CookieKit
import CookieRules
import ExchangeFacts
import HTTPGrammar
import JSONStream
import ProxyApp
import Testing

@Suite struct TransformationRecordTests {
    static let context = MessageContext(
        scheme: "https", host: "app.example.com", port: 443, path: "/login", method: "GET", status: 200)

    /// A kept timestamp rewrites only the milliseconds within a second, and everything across seconds, days and
    /// years (before 1970 too): each text is what the time written afresh gives.
    @Test(arguments: [
        [Int64(1_623_233_894_123), 1_623_233_894_999, 1_623_233_894_000, 1_623_233_895_000, 1_623_233_895_001],
        [951_782_399_999, 951_782_400_000, 951_782_400_005, 951_782_399_998],
        [-1, -999, -1000, -1001, 0, 1, 999, 1000],
        [1_798_761_599_999, 1_798_761_600_000, 1_798_761_600_999],
    ])
    func aKeptTimestampReadsAsTheTimeWrittenAfresh(_ times: [Int64]) {
        var stamp = TransformationRecord.Timestamp()
        for ms in times {
            stamp.set(ms)
            #expect(String(decoding: stamp.bytes, as: UTF8.self) == TransformationRecord.timestamp(ms), "\(ms)")
        }
    }

    @Test(arguments: [
        (Int64(1_623_233_894_123), "2021-06-09T10:18:14.123Z"), (0, "1970-01-01T00:00:00.000Z"),
        (951_782_400_005, "2000-02-29T00:00:00.005Z"),
    ])
    func recordsCarryRFC3339TimesWithMilliseconds(_ ms: Int64, _ expected: String) throws {
        let engine = RuleEngine(
            RuleSet(rules: try RulesParser.parse("rule \"r\" {\n    secure\n}\n", file: "t"), files: []))
        let outcome = engine.apply(to: [SetCookie("a=\"q\\\\v\"")], context: Self.context, now: 0)[0]
        let record = TransformationRecord(
            time: ms,
            exchange: ExchangeContext(
                requestID: 7, clientAddress: "127.0.0.1", method: "GET", scheme: "https", host: "x", port: 443,
                target: "/", status: 200),
            outcome: outcome, findings: [], dryRun: false)
        var writer = JSONWriter()
        record.writeJSON(to: &writer, redaction: Redaction(showValues: true, key: []), changes: outcome.changes)
        let json = writer.withBytes { String(decoding: $0, as: UTF8.self) }
        #expect(json.hasPrefix("{\"time\":\"\(expected)\",\"requestId\":7,"))
        #expect(json.contains("\"before\":\"a=\\\"q\\\\\\\\v\\\"\""))
    }
}
