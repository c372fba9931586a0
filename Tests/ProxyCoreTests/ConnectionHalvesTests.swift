import HTTPHeads
import Testing

@testable import ProxyCore

/// The connection machine's two halves on their own: each reads its side's bytes and answers with a typed event,
/// deciding nothing (what the machine does with the events is the transcript suites').
@Suite struct ConnectionHalvesTests {
    /// What a client half's event says, as text a table can hold.
    static func describe(_ event: RequestReader.Event?) -> String {
        switch event {
        case nil: return "more"
        case .request(let head, let framing)?: return "request \(head.method) \(framing)"
        case .refused(let status, _, _)?: return "refused \(status)"
        case .http2Preface(let leftover)?: return "h2 \(leftover.count)"
        }
    }

    static let limits = HTTPParserLimits(maximumHeadBytes: 256, maximumFieldCount: 4)

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true, "request GET none"),
        ("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", true, "request GET none"),  // RFC 9112 §2.2: empty lines first
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", true, "request POST contentLength(3)"),
        ("GET / HTTP/1.1\r\nHost: a\r\n", true, "more"),
        ("GET /" + String(repeating: "a", count: 300) + " HTTP/1.1\r\n\r\n", true, "refused 414"),
        ("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "b", count: 300) + "\r\n\r\n", true, "refused 431"),
        ("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n", true, "refused 431"),
        // RFC 9112 §6.3 rule 4: chunked not last in a request; §6.1: a coding the proxy does not know.
        ("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", true, "refused 400"),
        ("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: bogus, chunked\r\n\r\n", true, "refused 501"),
        ("GET / HTTP/1.1\r\nHost a\r\n\r\n", true, "refused 400"),
        // The preface, whether or not the listener takes HTTP/2 (the machine decides what to answer).
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", true, "h2 24"),
        // The preface is looked for on a connection's first head only.
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false, "refused 400"),
    ])
    func theClientHalfReadsARequestOrSaysWhyNot(bytes: String, firstHead: Bool, expected: String) {
        var reader = RequestReader(limits: Self.limits)
        reader.append(ArraySlice(Array(bytes.utf8)))
        let event = reader.nextRequest(HeadStorage(), firstHead: firstHead)
        #expect(Self.describe(event) == expected)
    }

    @Test func theClientHalfReadsABodyInItsFramingAndLeavesTheNextRequest() {
        var reader = RequestReader(limits: Self.limits)
        reader.append(ArraySlice(Array("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab".utf8)))
        guard
            case .request(_, let framing)? = reader.nextRequest(HeadStorage(), firstHead: true)
        else {
            Issue.record("no request")
            return
        }
        reader.body = BodyReader(framing)
        var out: [UInt8] = []
        #expect(reader.bodyArrived == false)
        guard case .read = reader.readBody(into: &out) else { Issue.record("nothing read"); return }
        reader.append(ArraySlice(Array("c\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n".utf8)))
        #expect(reader.bodyArrived)
        guard case .read = reader.readBody(into: &out) else { Issue.record("nothing read"); return }
        #expect(String(decoding: out, as: UTF8.self) == "3\r\nabc\r\n0\r\n\r\n")
        #expect(reader.body.isComplete)
        guard case .nothing = reader.readBody(into: &out) else { Issue.record("read past the body"); return }
        let next = reader.nextRequest(HeadStorage(), firstHead: false)
        #expect(Self.describe(next) == "request GET none")
    }

    @Test func aBadChunkLineIsTheClientHalfsInvalidEvent() {
        var reader = RequestReader(limits: Self.limits)
        reader.body = BodyReader(.chunked)
        reader.append(ArraySlice(Array("zz\r\n".utf8)))
        var out: [UInt8] = []
        guard case .invalid(let reason) = reader.readBody(into: &out) else { Issue.record("accepted"); return }
        #expect(reason.hasPrefix("bad request body: "))
        #expect(out.isEmpty)
    }

    /// What an upstream half's event says.
    static func describe(_ event: ResponseReader.Event?) -> String {
        switch event {
        case nil: return "more"
        case .response(let head, let framing)?: return "response \(head.status) \(framing)"
        case .headTooLarge?: return "too large"
        case .invalid?: return "invalid"
        }
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET", "response 200 contentLength(2)"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", "HEAD", "response 200 none"),  // RFC 9112 §6.3 rule 1
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", "GET", "response 100 none"),
        ("HTTP/1.1 200 OK\r\n\r\n", "GET", "response 200 untilClose"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", "GET", "more"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n", "GET", "invalid"),
        ("HTTP/1.1 200 OK\r\nX: " + String(repeating: "b", count: 300) + "\r\n\r\n", "GET", "too large"),
    ])
    func theUpstreamHalfReadsAResponseHeadOrSaysWhyNot(bytes: String, method: String, expected: String) {
        var reader = ResponseReader(limits: Self.limits)
        reader.appendHeadBytes(ArraySlice(Array(bytes.utf8)))
        #expect(Self.describe(reader.nextResponse(HeadStorage(), requestMethod: method)) == expected)
    }

    @Test(arguments: [
        // framing, the bytes after the head, dechunk: the event and what the client gets
        (BodyFraming.contentLength(2), "ok", false, "complete", "ok"),
        (BodyFraming.contentLength(2), "okEXTRA", false, "complete, trailing", "ok"),
        (BodyFraming.contentLength(4), "ok", false, "partial", "ok"),
        (BodyFraming.chunked, "2\r\nok\r\n0\r\n\r\n", false, "complete", "2\r\nok\r\n0\r\n\r\n"),
        (BodyFraming.chunked, "2\r\nok\r\n0\r\n\r\n", true, "complete", "ok"),  // RFC 9112 §7.1.3, for HTTP/1.0
        (BodyFraming.chunked, "x\r\n", false, "invalid", ""),
    ])
    func theUpstreamHalfRelaysABodyInItsFraming(
        framing: BodyFraming, bytes: String, dechunk: Bool, expected: String, relayed: String
    ) {
        var reader = ResponseReader(limits: Self.limits)
        var spare: [UInt8] = []
        reader.startBody(framing, rest: &spare)
        var out: [UInt8] = []
        let event =
            switch reader.readBody(ArraySlice(Array(bytes.utf8)), dechunk: dechunk, into: &out) {
            case .partial: "partial"
            case .complete(let trailing): trailing ? "complete, trailing" : "complete"
            case .invalid: "invalid"
            }
        #expect(event == expected)
        #expect(String(decoding: out, as: UTF8.self) == relayed)
    }

    @Test func anUpstreamsCloseEndsOnlyABodyReadUntilTheClose() {
        for (framing, ends) in [(BodyFraming.untilClose, true), (.contentLength(3), false), (.chunked, false)] {
            var reader = ResponseReader(limits: Self.limits)
            var spare: [UInt8] = []
            reader.startBody(framing, rest: &spare)
            #expect(reader.endOfStream() == ends, "\(framing)")
        }
    }
}
