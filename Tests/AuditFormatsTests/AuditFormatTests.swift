import CookieLifecycle
import JSONStream
import AuditFormats
import Testing

/// What `audit --har` prints, made without the executable: a small HAR replayed, each format read back.
@Suite struct AuditFormatTests {
    static func entries() throws -> ([HARAudit.EntryReport], HARAudit.Summary) {
        let doc = """
            {"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[
            {"startedDateTime":"2026-12-04T09:00:00Z","request":{"method":"GET","url":"http://app.test/login",
            "headers":[]},"response":{"status":200,"headers":[{"name":"Set-Cookie","value":"sid=1; SameSite=None"}]}},
            {"startedDateTime":"2026-12-04T09:00:01Z","request":{"method":"GET","url":"http://app.test/a",
            "headers":[{"name":"Cookie","value":"js=2"}]},"response":{"status":200,"headers":[]}}]}}
            """
        var reader = JSONReader(bytes: Array(doc.utf8))
        var entries: [HARAudit.EntryReport] = []
        let summary = try HARAudit().run(&reader) { entries.append($0) }
        return (entries, summary)
    }

    /// (format, what it holds)
    @Test(arguments: [
        ("text", "[0] GET http://app.test/login → 200"), ("text", "rejects: samesite-none-insecure"),
        ("json", #""setCookie":"sid=1; SameSite=None""#), ("json", #""verdict":"sent-not-set""#),
        ("junit", "<testsuites"), ("junit", "<failure"), ("sarif", #""version":"2.1.0""#),
        ("sarif", "samesite-none-insecure"), ("summary", "2 entries, 1 Set-Cookie lines"),
    ])
    func eachFormatSaysWhatTheReplayFound(_ format: String, _ holds: String) throws {
        let (entries, summary) = try Self.entries()
        #expect(entries.count == 2)
        let text: String
        switch format {
        case "text": text = entries.map(AuditFormat.text).joined().text
        case "json": text = entries.map { AuditFormat.json($0).serialized }.joined(separator: "\n")
        case "junit": text = AuditFormat.junit(entries)
        case "sarif": text = AuditFormat.sarif(entries)
        default: text = AuditFormat.text(summary).text
        }
        #expect(text.contains(holds), "\(text)")
    }
}
