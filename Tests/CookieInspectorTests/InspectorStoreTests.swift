import CookieKit
import CookieRules
import ExchangeFacts
import Foundation
import HTTPGrammar
import HTTPHeads
import ProxyCore
import Testing

@testable import CookieInspector

/// The inspector's store and views on exchanges made from real heads (parsed as the proxy parses them).
@Suite struct InspectorStoreTests {
    static func context(_ id: UInt64, host: String, path: String = "/", status: Int = 200) -> ExchangeContext {
        ExchangeContext(
            requestID: id, clientAddress: "127.0.0.1", method: "GET", scheme: "http", host: host, port: 80,
            target: path, status: status)
    }

    /// Records one exchange: a request with `cookie` (if any) and a response with these Set-Cookie values.
    static func record(
        _ store: InspectorStore, id: UInt64, host: String, cookie: String? = nil, setCookies: [String],
        at seconds: Int64, engine: RuleEngine = RuleEngine(.empty)
    ) throws {
        var request = "GET / HTTP/1.1\r\nHost: \(host)\r\n"
        if let cookie { request += "Cookie: \(cookie)\r\n" }
        request += "\r\n"
        let parser = HTTPHeadParser()
        let recorder = InspectorStore.Recorder(store: store)
        recorder.requestForwarded(
            id: id, head: try parser.parseRequest(Array(request.utf8)).head, time: seconds * 1000)
        let response =
            "HTTP/1.1 200 OK\r\n" + setCookies.map { "Set-Cookie: \($0)\r\n" }.joined() + "Content-Length: 0\r\n\r\n"
        var head = OutgoingHead(try parser.parseResponse(Array(response.utf8)).head)
        // The rules as the proxy's cookie stage runs them: each line edited in the head, its outcome handed over.
        let plan = engine.cookiePlan(
            MessageContext(scheme: "http", host: host, port: 80, path: "/", method: "GET", status: 200))
        var edits = LineEdits()
        for index in 0..<head.count where head.name(at: index, is: .setCookie) {
            guard case .original(let field) = head.lines[index] else { continue }
            var cookie = SetCookie(head.valueBytes(at: index))
            let edit = engine.apply(plan, editing: &cookie, now: seconds)
            edits.append(field: field, edit: edit, wouldBe: nil)
            if !edit.dropped { head.replaceValue(at: index, with: cookie.bytes) }
        }
        var bytes: [UInt8] = []
        head.serialize(into: &bytes)
        recorder.responseForwarded(
            context: context(id, host: host), head: head, bytes: bytes[...], engine: engine, dryRun: false,
            time: seconds * 1000, edits: edits)
    }

    static let views = InspectorViews(redaction: Redaction(showValues: true, key: []))

    @Test func onlyExchangesThatCarriedCookiesAreHeldAndTheRingKeepsTheNewest() throws {
        let store = InspectorStore(capacity: 3)
        try Self.record(store, id: 1, host: "a.test", setCookies: [], at: 0)  // no cookie either way: not held
        for id in 2...6 { try Self.record(store, id: UInt64(id), host: "a.test", setCookies: ["n\(id)=1"], at: 0) }
        #expect(store.exchanges().map(\.context.requestID) == [4, 5, 6])
        #expect(store.exchanges(after: 4).map(\.sequence) == [5])
        #expect(store.exchange(sequence: 5)?.context.requestID == 6)
        #expect(store.exchange(sequence: 1) == nil)  // no longer held
        try Self.record(store, id: 7, host: "a.test", cookie: "sid=1", setCookies: [], at: 0)
        #expect(store.exchanges().last?.analysis.requestCookies == ["sid=1"])
    }

    /// The jar is replayed on each exchange's own clock: a Max-Age counts from when the cookie came.
    @Test(arguments: [
        ("sid=1; Domain=site.test; Max-Age=60", Int64(30), "sid=1"),
        ("sid=1; Domain=site.test; Max-Age=60", Int64(120), ""),
        ("sid=1; Domain=site.test", Int64(0), "sid=1"), ("sid=1", Int64(0), ""),
    ])
    func theJarGivesTheCookieHeaderABrowserWouldSendToASubdomain(_ setCookie: String, _ later: Int64, _ header: String)
        throws
    {
        let store = InspectorStore(capacity: 10)
        try Self.record(store, id: 1, host: "login.site.test", setCookies: [setCookie], at: 1_000_000)
        let json = Self.views.jar(
            store.exchanges(), client: "127.0.0.1", url: RequestURL("http://app.site.test/"),
            now: (1_000_000 + later) * 1000)
        guard case .object(let fields) = json else {
            Issue.record("not an object")
            return
        }
        #expect(fields.first { $0.0 == "cookieHeader" }?.1 == .string(header))
    }

    /// The rules an exchange's lines matched are listed once each in file order, as each line's and the log's are
    /// (not by name): "zeta" is written before "alpha".
    @Test func anExchangesRulesAreInFileOrder() throws {
        let text = "rule \"zeta\" {\n    cookie b\n    secure\n}\nrule \"alpha\" {\n    httponly\n}\n"
        let engine = RuleEngine(RuleSet(rules: try RulesParser.parse(text, file: "t.rules"), files: ["t.rules"]))
        let store = InspectorStore(capacity: 10)
        try Self.record(store, id: 1, host: "a.test", setCookies: ["a=1", "b=2"], at: 0, engine: engine)
        let exchange = try #require(store.exchanges().first)
        #expect(exchange.analysis.cookies.map(\.rules) == [["alpha"], ["zeta", "alpha"]])
        #expect(exchange.summary.rules == ["zeta", "alpha"])
    }

    @Test func aRuleTheProxyAppliedIsShownWithItsChangeAndFindings() throws {
        let rules = try RulesParser.parse("rule \"secure\" {\n    secure\n}\n", file: "t.rules")
        let engine = RuleEngine(RuleSet(rules: rules, files: ["t.rules"]))
        let store = InspectorStore(capacity: 10)
        // As forwarded: the rule's result; which rules matched is the outcome the stage handed over.
        try Self.record(store, id: 1, host: "a.test", setCookies: ["x=1; SameSite=None"], at: 0, engine: engine)
        let line = try #require(store.exchanges().first?.analysis.cookies.first)
        #expect(line.rules == ["secure"])
        #expect(line.changes.map(\.op) == [.add] && line.forwarded?.attributes.secure == true)
        // The lint is of what the client got: Secure added, so SameSite=None is no longer refused.
        #expect(!line.findings.contains { $0.code == "samesite-none-insecure" })
        // The detail names the engines that reject the forwarded line or keep it otherwise, from its findings (a
        // Secure cookie from http: all three refuse it).
        let detail = Self.views.detail(try #require(store.exchanges().first), rules: engine.ruleSet).serialized
        #expect(EngineVerdict.summary(line.findings) == "rejects: Chromium, Firefox, WebKit")
        #expect(detail.contains("\"engines\":\"rejects: Chromium, Firefox, WebKit\""), "\(detail)")
        try Self.record(store, id: 2, host: "a.test", setCookies: ["__Secure-x=1"], at: 0)
        let second = Self.views.detail(try #require(store.exchanges().last), rules: engine.ruleSet).serialized
        #expect(second.contains("\"engines\":\"rejects: Chromium, Firefox; WebKit stores it\""), "\(second)")
    }

    @Test func theHARWrittenEntryByEntryIsTheHARTree() throws {
        let store = InspectorStore(capacity: 10)
        try Self.record(store, id: 1, host: "a.test", setCookies: ["a=1; Path=/"], at: 1_000)
        try Self.record(store, id: 2, host: "b.test", cookie: "a=1", setCookies: [], at: 2_000)
        let bytes = Self.views.harBytes(store.exchanges(), version: "1")
        #expect(String(decoding: bytes, as: UTF8.self) == Self.views.har(store.exchanges(), version: "1").serialized)
        #expect(try JSONSerialization.jsonObject(with: Data(bytes)) is [String: Any])
    }

    @Test func theOnboardingProfileIsAPlistHoldingTheCertificate() throws {
        let der: [UInt8] = Array(0..<200).map { UInt8($0) }
        let text = Onboarding.mobileconfig(der: der, name: "cookie-proxy local CA (a&b)")
        let plist = try #require(
            try PropertyListSerialization.propertyList(from: Data(text.utf8), format: nil) as? [String: Any])
        let payload = try #require((plist["PayloadContent"] as? [[String: Any]])?.first)
        #expect(payload["PayloadType"] as? String == "com.apple.security.root")
        #expect(payload["PayloadContent"] as? Data == Data(der))
        #expect(payload["PayloadDisplayName"] as? String == "cookie-proxy local CA (a&b)")
        // Stable per certificate, and a UUID in form.
        let uuid = try #require(payload["PayloadUUID"] as? String)
        #expect(UUID(uuidString: uuid) != nil)
        #expect(text == Onboarding.mobileconfig(der: der, name: "cookie-proxy local CA (a&b)"))
    }

    @Test(arguments: [[UInt8](), [0x66], [0x66, 0x6F], [0x66, 0x6F, 0x6F], Array("hello, world".utf8)])
    func base64IsFoundationsBase64(_ bytes: [UInt8]) {
        #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString())
    }

    /// A loop's requests wait for their responses by id: whatever order the responses come in (a connection's
    /// pipelined ones, HTTP/2 streams ending out of order, ids that share a slot of the recorder's table), each
    /// finds its request, and nothing is left waiting.
    @Test(arguments: [
        ("in order", Array(UInt64(1)...40)),
        ("reversed", Array((UInt64(1)...40).reversed())),
        ("ids a table's size apart", [1, 17, 33, 49, 65, 2, 18, 34].map(UInt64.init)),
        ("interleaved", [5, 1, 9, 3, 7, 2, 8, 4, 6, 10].map(UInt64.init)),
    ])
    func everyResponseFindsItsWaitingRequestInAnyOrder(_ name: String, _ ids: [UInt64]) throws {
        let store = InspectorStore(capacity: 100)
        let recorder = InspectorStore.Recorder(store: store)
        let parser = HTTPHeadParser()
        let request = try parser.parseRequest(Array("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n".utf8)).head
        for id in ids.sorted() { recorder.requestForwarded(id: id, head: request, time: 0) }
        #expect(recorder.pendingCount == ids.count, "\(name)")
        let response = OutgoingHead(
            try parser.parseResponse(Array("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nContent-Length: 0\r\n\r\n".utf8)).head
        )
        for (k, id) in ids.enumerated() {
            recorder.responseForwarded(
                context: Self.context(id, host: "a.test"), head: response, bytes: [], engine: RuleEngine(.empty),
                dryRun: false, time: 0)
            #expect(recorder.pendingCount == ids.count - k - 1, "\(name)")
        }
        #expect(store.exchanges().map(\.context.requestID) == ids, "\(name)")
    }

    /// Requests whose responses never come are let go once 4,096 newer ones have been forwarded: the oldest go,
    /// the newest still find their requests.
    @Test func requestsThatNeverGetAResponseAreLetGoPastTheLimit() throws {
        let store = InspectorStore(capacity: 10)
        let recorder = InspectorStore.Recorder(store: store)
        let parser = HTTPHeadParser()
        let request = try parser.parseRequest(Array("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n".utf8)).head
        let last = UInt64(InspectorStore.Recorder.pendingLimit + 50)
        for id in 1...last { recorder.requestForwarded(id: id, head: request, time: 0) }
        #expect(recorder.pendingCount <= InspectorStore.Recorder.pendingLimit)
        let response = OutgoingHead(
            try parser.parseResponse(Array("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nContent-Length: 0\r\n\r\n".utf8)).head
        )
        for id in [UInt64(1), 2, last - 1, last] {
            recorder.responseForwarded(
                context: Self.context(id, host: "a.test"), head: response, bytes: [], engine: RuleEngine(.empty),
                dryRun: false, time: 0)
        }
        #expect(store.exchanges().map(\.context.requestID) == [last - 1, last])
    }
}
