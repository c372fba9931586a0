import CNGHTTP2
import HTTPHeads
import ProxyCore
import Testing

@testable import ProxyHTTP2

/// The upstream side without I/O: an HTTP/1.1 request in, HTTP/2 frames out (read back with nghttp2's HPACK
/// decoder); an upstream's frames in (written by hand), the typed response the connection machine takes out.
struct HTTP2ClientSessionTests {
    static let serverPreface = ClientFrames.settings

    /// A typed request as the machine hands it over: its head (`fields`, Host first, as HeadRewrite left them), the
    /// payload in pieces, the end with `trailers`.
    static func request(
        _ session: HTTP2ClientSession, _ exchange: UpstreamExchange, _ method: String, _ target: String,
        _ fields: [(String, String)], body: [String] = [], trailers: [(String, String)] = []
    ) {
        var builder = HeadBuilder.request(method: method, target: Array(target.utf8), version: .http2, capacity: 256)
        for (name, value) in fields { builder.append(name: Array(name.utf8), value: Array(value.utf8)) }
        let head = OutgoingHead(builder.requestHead(method: method, version: .http2).head)
        let pieces = body.isEmpty ? [""] : body
        for (i, piece) in pieces.enumerated() {
            let parts: [RequestPart] =
                (i == 0 ? [.head(method: method, target: Array(target.utf8), head)] : [])
                + (i == pieces.count - 1 ? [.end(trailers: FieldSection(trailers))] : [])
            session.request(exchange, parts: parts, body: Array(piece.utf8)[...])
        }
    }

    static func get(_ session: HTTP2ClientSession, _ exchange: UpstreamExchange, _ target: String) {
        request(session, exchange, "GET", target, [("Host", "a")])
    }

    /// RFC 9113 §8.3.1: pseudo-headers from the method, target and Host, connection-specific fields (and those the
    /// Connection field names, and TE) dropped, the cookie never indexed, `te: trailers`, the payload into DATA
    /// ending the stream, or followed by the trailers (§8.1); a request that ends with its head is one HEADERS frame.
    @Test(arguments: [
        ([("Content-Length", "5")], ["hello"], []),
        ([], ["he", "llo"], []),
        ([], ["he", "llo"], [("x-sum", "9")]),
        ([], [], []),
    ])
    func aTypedRequestBecomesHeadersAndData(
        _ extra: [(String, String)], _ body: [String], _ trailers: [(String, String)]
    ) {
        let session = HTTP2ClientSession(scheme: "https")
        let exchange = session.open()
        let fields =
            [
                ("Host", "a.example"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"), ("TE", "gzip"),
                ("Cookie", "a=1"),
            ]
            + extra
        Self.request(session, exchange, "POST", "/p?q=1", fields, body: body, trailers: trailers)
        var out: [UInt8] = []
        session.send(into: &out)
        #expect(out.starts(with: ClientFrames.preface))
        let frames = ServerFrames(Array(out.dropFirst(ClientFrames.preface.count)))
        let sent = frames.headers.first ?? []
        #expect(
            sent.map { "\($0.name): \($0.value)" } == [
                ":method: POST", ":scheme: https", ":authority: a.example", ":path: /p?q=1", "cookie: a=1",
            ] + (extra.isEmpty ? [] : ["content-length: 5"]) + ["te: trailers"])
        #expect(sent.first { $0.name == "cookie" }?.neverIndexed == true)
        #expect(String(decoding: frames.data, as: UTF8.self) == body.joined())
        if body.isEmpty { #expect(frames.dataFrames == 0) }
        #expect(frames.headers.count == (trailers.isEmpty ? 1 : 2))
        if !trailers.isEmpty { #expect(frames.headers.last.map { $0.map(\.name) } == ["x-sum"]) }
        #expect(frames.endStream)
        #expect(session.failure == nil)
    }

    /// What an exchange takes, as text: each head's start line and fields with its framing, the payload, the end.
    static func delivered(_ exchange: UpstreamExchange) -> String {
        let delivery = exchange.takeResponse()
        var text = ""
        for (head, framing) in delivery.heads {
            text += String(decoding: head.head.bytes, as: UTF8.self) + "framing: \(framing)\n"
        }
        text += "payload: " + String(decoding: delivery.payload, as: UTF8.self) + "\n"
        if let end = delivery.end { text += "end: " + end.text }
        return text
    }

    /// A response comes out typed: a head made field by field (its start line names the protocol it came in, for a
    /// person; an HTTP/1.1 client's codec writes its own status line; each set-cookie its own field), the framing the head gives it (until the stream ends
    /// without a declared length; the declared one), the payload, and the end with the trailers, whether or not a
    /// length was declared (RFC 9113 §8.1).
    @Test(arguments: [
        (
            [("content-type", "text/plain")],
            "HTTP/2 200\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n"
                + "content-type: text/plain\r\n\r\nframing: untilClose\n"
        ),
        (
            [("content-length", "2")],
            "HTTP/2 200\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n"
                + "content-length: 2\r\n\r\nframing: contentLength(2)\n"
        ),
    ])
    func aResponseComesOutTypedWithItsTrailers(_ fields: [(String, String)], _ head: String) {
        let session = HTTP2ClientSession(scheme: "http")
        let exchange = session.open()
        Self.get(session, exchange, "/")
        var out: [UInt8] = []
        session.send(into: &out)
        let server =
            Self.serverPreface
            + ClientFrames.headers(
                1, [(":status", "200"), ("set-cookie", "a=1"), ("set-cookie", "b=2")] + fields, endStream: false)
            + ClientFrames.data(1, "hi", endStream: false)
            + ClientFrames.headers(1, [("grpc-status", "0"), ("host", "b.example")], endStream: true)
        #expect(session.receive(server[...]))
        #expect(session.touched.contains { $0 === exchange })
        // (`host` is no trailer, RFC 9110 §6.5.1: not passed on.)
        #expect(Self.delivered(exchange) == head + "payload: hi\nend: grpc-status: 0\r\n")
        #expect(exchange.responseDone)
    }

    /// A declared length is kept (no chunking); a stream the upstream resets fails its exchange only, and the
    /// connection takes the next.
    @Test func aDeclaredLengthIsKeptAndAResetFailsOneExchange() {
        let session = HTTP2ClientSession(scheme: "http")
        let first = session.open()
        Self.get(session, first, "/a")
        var out: [UInt8] = []
        session.send(into: &out)
        let ok =
            Self.serverPreface
            + ClientFrames.headers(1, [(":status", "404"), ("content-length", "2")], endStream: false)
            + ClientFrames.data(1, "no", endStream: true)
        #expect(session.receive(ok[...]))
        #expect(
            Self.delivered(first)
                == "HTTP/2 404\r\ncontent-length: 2\r\n\r\nframing: contentLength(2)\npayload: no\nend: ")
        session.close(first)
        // Two exchanges at once: streams 3 and 5 on the same connection; the upstream resets 3 only.
        let second = session.open()
        let third = session.open()
        Self.get(session, second, "/b")
        Self.get(session, third, "/c")
        session.send(into: &out)
        #expect((second.stream, third.stream) == (3, 5))
        let frames =
            ClientFrames.frame(type: 3, flags: 0, stream: 3, [0, 0, 0, 2])
            + ClientFrames.headers(5, [(":status", "204")], endStream: true)
        #expect(session.receive(frames[...]))
        #expect(second.failure?.contains("reset") == true)
        #expect(third.failure == nil && third.responseDone)
        #expect(session.failure == nil && session.canOpen)
    }

    /// RFC 9113 §6.5.2 and §10.5.1: an upstream's response header block is held to the head limits as it is
    /// decoded: the HPACK bomb fails its exchange (the machine answers `502` with the reason) and cancels its
    /// stream, with nothing of the block kept or made into a head, and the connection takes the next exchange.
    @Test func anHPACKBombFromTheUpstreamFailsItsExchangeOnly() {
        let session = HTTP2ClientSession(scheme: "http")
        let exchange = session.open()
        Self.get(session, exchange, "/")
        var out: [UInt8] = []
        session.send(into: &out)
        let frames = Self.serverPreface + ClientFrames.bomb(1, [(":status", "200")], frames: 5, endStream: true)
        #expect(session.receive(frames[...]))
        #expect(exchange.failure?.contains("over 65536 bytes (--max-head-bytes") == true, "\(exchange.failure ?? "")")
        #expect(exchange.responseFields.isEmpty)
        #expect(exchange.takeResponse().isEmpty)
        out.removeAll()
        session.send(into: &out)
        #expect(ServerFrames(out).resets == [8])  // CANCEL
        session.close(exchange)
        #expect(session.failure == nil && session.canOpen)
    }

    /// A `:status` that is not three digits from 100 to 599 makes the response malformed: the exchange fails (the
    /// machine answers 502) and no head is made of it (found by Fuzz/HTTP2ClientSession.swift: `26`).
    @Test(arguments: ["26", "2000", "abc", "099", "600", ""])
    func aStatusThatIsNoStatusFailsTheExchange(_ status: String) {
        let session = HTTP2ClientSession(scheme: "http")
        let exchange = session.open()
        Self.get(session, exchange, "/")
        var out: [UInt8] = []
        session.send(into: &out)
        let frames = Self.serverPreface + ClientFrames.headers(1, [(":status", status)], endStream: true)
        _ = session.receive(frames[...])
        // The stream ends with the RST_STREAM sent (by nghttp2's own check, or this session's).
        session.send(into: &out)
        #expect(exchange.takeResponse().heads.isEmpty)
        #expect(exchange.failure != nil)
    }
}
