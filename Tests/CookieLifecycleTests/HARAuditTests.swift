import CookieKit
import JSONStream
import Testing

@testable import CookieLifecycle

@Suite struct JSONReaderTests {
    /// Documents read whole into a tree (and written back), with blocks smaller than a token to cross every boundary.
    static let documents: [(String, String)] = [
        (
            #"{"a":[1,-2.5e3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"]}"#,
            #"{"a":[1,-2500.0,true,false,null,"x\"\\/\u0008\u000c\n\r\té😀"]}"#
        ),
        ("  [ ]  ", "[]"),
        ("{ }", "{}"),
        (#"{"k" : { "n" : 12345678901 } }"#, #"{"k":{"n":12345678901}}"#),
        (#""\ud800x""#, "\"\u{FFFD}x\""),
    ]

    @Test(arguments: documents.indices)
    func valuesAreReadAcrossBlockBoundaries(_ i: Int) throws {
        let (text, expected) = Self.documents[i]
        let bytes = Array(text.utf8)
        var offset = 0
        var reader = JSONReader(blockSize: 16) { out in
            // Three bytes at a time: every token straddles a refill.
            let n = min(3, out.count, bytes.count - offset)
            for k in 0..<n { out[k] = bytes[offset + k] }
            offset += n
            return n
        }
        let value = try reader.readValue("")
        try reader.finish()
        var out: [UInt8] = []
        value.write(to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    /// Malformed documents: the error names the path and what was wrong.
    static let malformed: [(String, String)] = [
        (#"{"log":{"entries":[{"request":{"url":"x"#, "log.entries[0].request.url"),
        (#"{"log":{"entries":[1,2"#, "log.entries"),
        (#"{"log":[}"#, "log"),
        (#"{"a":tru}"#, "'tru' is not a JSON value"),
        (#"{"a":"\q"}"#, "a bad escape"),
        ("{\"a\":\"\u{01}\"}", "a control character"),
        (#"{"a":1} x"#, "after the document"),
        (#"{"a" 1}"#, "expected ':'"),
        (#"{"a":01x}"#, "is not a JSON value"),
    ]

    @Test(arguments: malformed.indices)
    func malformedDocumentsSayWhere(_ i: Int) {
        let (text, expected) = Self.malformed[i]
        var reader = JSONReader(bytes: Array(text.utf8))
        do {
            _ = try reader.readValue("")
            try reader.finish()
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test func nestingIsBounded() {
        var reader = JSONReader(
            bytes: Array((String(repeating: "[", count: 100) + String(repeating: "]", count: 100)).utf8))
        #expect(throws: JSONReader.Failure.self) { try reader.skipValue("") }
    }
}

@Suite struct HARAuditTests {
    static func entry(
        _ url: String, at: String, request: [(String, String)], response: [(String, String)], status: Int = 200
    )
        -> String
    {
        func headers(_ h: [(String, String)]) -> String {
            "[" + h.map { #"{"name":"\#($0.0)","value":"\#($0.1)"}"# }.joined(separator: ",") + "]"
        }
        return
            #"{"startedDateTime":"\#(at)","request":{"method":"GET","url":"\#(url)","headers":\#(headers(request)),"cookies":[]},"response":{"status":\#(status),"headers":\#(headers(response)),"cookies":[]}}"#
    }

    static func har(_ entries: [String], creator: String = "test") -> [UInt8] {
        Array(
            #"{"log":{"version":"1.2","creator":{"name":"\#(creator)","version":"1"},"pages":[{"id":"p"}],"entries":[\#(entries.joined(separator: ","))]}}"#
                .utf8)
    }

    @Test func entriesAreJudgedInFileOrderAgainstTheJarOfTheEarlierOnes() throws {
        let doc = Self.har([
            Self.entry(
                "https://app.test/login", at: "2026-12-04T09:00:00.000Z", request: [(":authority", "app.test")],
                response: [("set-cookie", #"sid=1; Path=/\nbad=1; SameSite=None"#)]),
            Self.entry(
                "https://app.test/a", at: "2026-12-04T09:00:01.500+01:00", request: [("Cookie", "sid=1; js=2")],
                response: []),
            Self.entry("https://app.test/b", at: "2026-12-04T09:00:02Z", request: [], response: []),
        ])
        var reader = JSONReader(bytes: doc)
        var reports: [HARAudit.EntryReport] = []
        let summary = try HARAudit().run(&reader) { reports.append($0) }
        #expect(summary.entries == 3)
        #expect(summary.setCookieLines == 2)
        #expect(summary.findings[.rejects] == 1)
        #expect(reports.map(\.index) == [0, 1, 2])
        #expect(reports[0].setCookies.map { $0.event?.kind } == [.stored, .rejected])
        #expect(reports[1].verdicts.map(\.kind) == [.sentAsExpected, .sentNotSet])
        #expect(reports[2].verdicts.map(\.kind) == [.expectedNotSent])
        #expect(summary.hasFindings && !summary.looksSanitized)
    }

    /// The inspector's HAR holds every client's exchanges (`_cookieProxy.client`): each client is replayed in a jar
    /// of its own, so one client's cookie is not expected from another (one shared jar would call the second
    /// client's request `expected-not-sent`). (client of each entry, verdicts of the last entry)
    @Test(
        arguments: [
            (
                ["127.0.0.1 Chromium", "127.0.0.1 curl/8.1.2", "127.0.0.1 Chromium"],
                [[], [], [CookieVerdict.Kind.sentAsExpected]]
            ),
            ([nil, nil, nil], [[], [.expectedNotSent], [.sentAsExpected]]),
        ] as [([String?], [[CookieVerdict.Kind]])])
    func eachClientTheHARNamesIsReplayedInAJarOfItsOwn(_ clients: [String?], _ verdicts: [[CookieVerdict.Kind]]) throws
    {
        func tagged(_ entry: String, _ client: String?) -> String {
            guard let client else { return entry }
            return String(entry.dropLast()) + #","_cookieProxy":{"client":"\#(client)"}}"#
        }
        let doc = Self.har([
            tagged(
                Self.entry(
                    "https://app.test/login", at: "2026-12-04T09:00:00Z", request: [],
                    response: [("Set-Cookie", "sid=1")]),
                clients[0]),
            // Keeps cookies (Fetch Metadata) and sends none.
            tagged(
                Self.entry(
                    "https://app.test/a", at: "2026-12-04T09:00:01Z", request: [("Sec-Fetch-Site", "same-origin")],
                    response: []), clients[1]),
            tagged(
                Self.entry(
                    "https://app.test/b", at: "2026-12-04T09:00:02Z", request: [("Cookie", "sid=1")], response: []),
                clients[2]),
        ])
        var reader = JSONReader(bytes: doc)
        var reports: [HARAudit.EntryReport] = []
        let summary = try HARAudit().run(&reader) { reports.append($0) }
        #expect(reports.map { $0.verdicts.map(\.kind) } == verdicts)
        #expect(reports.map(\.client) == clients.map { $0 ?? "" })
        #expect(summary.clients == Set(clients.map { $0 ?? "" }).count)
    }

    @Test func rulesRunAsADryRun() throws {
        let doc = Self.har([
            Self.entry("https://app.test/", at: "2026-12-04T09:00:00Z", request: [], response: [("Set-Cookie", "a=1")])
        ])
        var reader = JSONReader(bytes: doc)
        var reports: [HARAudit.EntryReport] = []
        let audit = HARAudit(transform: { line, _, status in
            #expect(status == 200)
            return (SetCookie(String(decoding: line.bytes, as: UTF8.self) + "; Secure"), ["harden"])
        })
        let summary = try audit.run(&reader) { reports.append($0) }
        #expect(reports[0].setCookies[0].forwarded?.description == "a=1; Secure")
        #expect(reports[0].setCookies[0].rules == ["harden"])
        #expect(summary.rulesChanged == 1)
    }

    @Test func anExportWithoutCookieHeadersLooksSanitized() throws {
        let doc = Self.har(
            [Self.entry("https://app.test/", at: "2026-12-04T09:00:00Z", request: [("accept", "*/*")], response: [])],
            creator: "WebInspector")
        var reader = JSONReader(bytes: doc)
        #expect(try HARAudit().run(&reader) { _ in }.looksSanitized)
        var other = JSONReader(
            bytes: Self.har(
                [Self.entry("https://app.test/", at: "2026-12-04T09:00:00Z", request: [], response: [])],
                creator: "Charles"))
        #expect(try !HARAudit().run(&other) { _ in }.looksSanitized)
    }

    static let notHAR: [(String, String)] = [
        ("[1,2]", "not a HAR file: the document is not a JSON object"),
        (#"{"version":"1.2"}"#, "not a HAR file: no 'log' object"),
        (#"{"log":{"version":"1.2"}}"#, "no 'entries' array"),
        (#"{"log":{"entries":[{"response":{}}]}}"#, "log.entries[0].request"),
        (#"{"log":{"entries":[{"request":{"method":"GET"}}]}}"#, "log.entries[0].request.url"),
        (
            #"{"log":{"entries":[{"request":{"url":"https://a.test/","headers":[{"name":1}]}}]}}"#,
            "log.entries[0].request.headers[0]"
        ),
    ]

    @Test(arguments: notHAR.indices)
    func aFileThatIsNoHARSaysWhere(_ i: Int) {
        var reader = JSONReader(bytes: Array(Self.notHAR[i].0.utf8))
        do {
            _ = try HARAudit().run(&reader) { _ in }
            Issue.record("accepted")
        } catch {
            #expect(error.description.contains(Self.notHAR[i].1), "\(error.description)")
        }
    }

    @Test(arguments: [
        ("2026-12-04T09:46:39.563Z", Int64(1_796_377_599_563)), ("2026-12-04T10:46:39.563+01:00", 1_796_377_599_563),
        ("2026-12-04T09:46:39Z", 1_796_377_599_000), ("1970-01-01T00:00:00.000Z", 0),
        ("2000-02-29T12:00:00Z", 951_825_600_000),
    ])
    func startedDateTimeIsReadAsISO8601(_ text: String, _ ms: Int64) {
        #expect(HARAudit.milliseconds(text) == ms)
    }
}
