import CNGHTTP2
import ProxyCore
import Testing

@testable import ProxyHTTP2

/// The upstream side without I/O: an HTTP/1.1 request in, HTTP/2 frames out (read back with nghttp2's HPACK
/// decoder); an upstream's frames in (written by hand), the typed response the connection machine takes out.
struct HTTP2ClientSessionTests {
    static let serverPreface = ClientFrames.settings

    /// RFC 9113 §8.3.1: pseudo-headers from the request line and Host, connection-specific fields dropped, the
    /// cookie never indexed, `te: trailers`, the body unframed into DATA ending the stream.
    @Test(arguments: [
        "POST /p?q=1 HTTP/1.1\r\nHost: a.example\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nTE: gzip\r\n"
            + "Cookie: a=1\r\nContent-Length: 5\r\n\r\nhello",
        "POST /p?q=1 HTTP/1.1\r\nHost: a.example\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nTE: gzip\r\n"
            + "Cookie: a=1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n",
        "POST /p?q=1 HTTP/1.1\r\nHost: a.example\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nTE: gzip\r\n"
            + "Cookie: a=1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3\r\nllo\r\n0\r\nx-sum: 9\r\n\r\n",
    ])
    func anHTTP1RequestBecomesHeadersAndData(_ request: String) {
        let session = HTTP2ClientSession(scheme: "https")
        let exchange = session.open()
        // In pieces, as the machine writes them.
        let bytes = Array(request.utf8)
        for start in stride(from: 0, to: bytes.count, by: 9) {
            session.request(exchange, bytes[start..<min(bytes.count, start + 9)])
        }
        var out: [UInt8] = []
        session.send(into: &out)
        #expect(out.starts(with: ClientFrames.preface))
        let frames = ServerFrames(Array(out.dropFirst(ClientFrames.preface.count)))
        let fields = frames.headers.first ?? []
        // A declared length goes with the request (nghttp2 checks the DATA against it); chunked framing does not.
        let length = request.contains("Content-Length") ? ["content-length: 5"] : []
        #expect(
            fields.map { "\($0.name): \($0.value)" } == [
                ":method: POST", ":scheme: https", ":authority: a.example", ":path: /p?q=1", "cookie: a=1",
            ] + length + ["te: trailers"])
        #expect(fields.first { $0.name == "cookie" }?.neverIndexed == true)
        #expect(String(decoding: frames.data, as: UTF8.self) == "hello")
        // A chunked body's trailer section: trailers after the DATA, ending the stream (RFC 9113 §8.1).
        if request.contains("x-sum") { #expect(frames.headers.last.map { $0.map(\.name) } == ["x-sum"]) }
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
        if let end = delivery.end { text += "end: " + String(decoding: end, as: UTF8.self) }
        return text
    }

    /// A response comes out typed: a head made field by field (a status line with a reason phrase for the HTTP/1.1
    /// clients it may reach; each set-cookie its own field), the framing the head gives it (until the stream ends
    /// without a declared length; the declared one), the payload, and the end with the trailers, whether or not a
    /// length was declared (RFC 9113 §8.1).
    @Test(arguments: [
        (
            [("content-type", "text/plain")],
            "HTTP/1.1 200 OK\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n"
                + "content-type: text/plain\r\n\r\nframing: untilClose\n"
        ),
        (
            [("content-length", "2")],
            "HTTP/1.1 200 OK\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n"
                + "content-length: 2\r\n\r\nframing: contentLength(2)\n"
        ),
    ])
    func aResponseComesOutTypedWithItsTrailers(_ fields: [(String, String)], _ head: String) {
        let session = HTTP2ClientSession(scheme: "http")
        let exchange = session.open()
        session.request(exchange, Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
        var out: [UInt8] = []
        session.send(into: &out)
        let server =
            Self.serverPreface
            + ClientFrames.headers(
                1, [(":status", "200"), ("set-cookie", "a=1"), ("set-cookie", "b=2")] + fields, endStream: false)
            + ClientFrames.data(1, "hi", endStream: false)
            + ClientFrames.headers(1, [("grpc-status", "0")], endStream: true)
        #expect(session.receive(server[...]))
        #expect(session.touched.contains { $0 === exchange })
        #expect(Self.delivered(exchange) == head + "payload: hi\nend: grpc-status: 0\r\n")
        #expect(exchange.responseDone)
    }

    /// A declared length is kept (no chunking); a stream the upstream resets fails its exchange only, and the
    /// connection takes the next.
    @Test func aDeclaredLengthIsKeptAndAResetFailsOneExchange() {
        let session = HTTP2ClientSession(scheme: "http")
        let first = session.open()
        session.request(first, Array("GET /a HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
        var out: [UInt8] = []
        session.send(into: &out)
        let ok =
            Self.serverPreface
            + ClientFrames.headers(1, [(":status", "404"), ("content-length", "2")], endStream: false)
            + ClientFrames.data(1, "no", endStream: true)
        #expect(session.receive(ok[...]))
        #expect(
            Self.delivered(first)
                == "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nframing: contentLength(2)\npayload: no\nend: ")
        session.close(first)
        // Two exchanges at once: streams 3 and 5 on the same connection; the upstream resets 3 only.
        let second = session.open()
        let third = session.open()
        session.request(second, Array("GET /b HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
        session.request(third, Array("GET /c HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
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
        session.request(exchange, Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
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
        session.request(exchange, Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
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
