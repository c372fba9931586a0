import CNGHTTP2
import ProxyCore
import Testing

@testable import ProxyHTTP2

/// The upstream side without I/O: an HTTP/1.1 request in, HTTP/2 frames out (read back with nghttp2's HPACK
/// decoder); an upstream's frames in (written by hand), the HTTP/1.1 response the connection machine reads out.
struct HTTP2ClientSessionTests {
    static let serverPreface = ClientFrames.settings

    /// RFC 9113 §8.3.1: pseudo-headers from the request line and Host, connection-specific fields dropped, the
    /// cookie never indexed, `te: trailers`, the body unframed into DATA ending the stream.
    @Test(arguments: [
        "POST /p?q=1 HTTP/1.1\r\nHost: a.example\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nTE: gzip\r\n"
            + "Cookie: a=1\r\nContent-Length: 5\r\n\r\nhello",
        "POST /p?q=1 HTTP/1.1\r\nHost: a.example\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nTE: gzip\r\n"
            + "Cookie: a=1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n",
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
        #expect(frames.endStream)
        #expect(session.failure == nil)
    }

    /// A response: its status line with a reason phrase, each field (set-cookie never folded), a body of unknown
    /// length chunked, trailers as the trailer section; the result has one reading for the proxy's parser.
    @Test func aResponseWithTrailersBecomesAChunkedHTTP1Response() throws {
        let session = HTTP2ClientSession(scheme: "http")
        let exchange = session.open()
        session.request(exchange, Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
        var out: [UInt8] = []
        session.send(into: &out)
        let server =
            Self.serverPreface
            + ClientFrames.headers(
                1, [(":status", "200"), ("set-cookie", "a=1"), ("set-cookie", "b=2")], endStream: false)
            + ClientFrames.data(1, "hi", endStream: false)
            + ClientFrames.headers(1, [("grpc-status", "0")], endStream: true)
        #expect(session.receive(server[...]))
        #expect(session.touched.contains { $0 === exchange })
        var response: [UInt8] = []
        exchange.takeResponse(into: &response)
        #expect(
            String(decoding: response, as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nset-cookie: a=1\r\nset-cookie: b=2\r\ntransfer-encoding: chunked\r\n\r\n"
                + "2\r\nhi\r\n0\r\ngrpc-status: 0\r\n\r\n")
        var parser = HTTPHeadParser()
        let length = try #require(try parser.headLength(response[...]))
        let head = try parser.parseResponse(Array(response[..<length]))
        var body = BodyReader(try BodyFraming.forResponse(head.head, status: head.status, requestMethod: "GET"))
        #expect(try body.consume(response[length...]) == response.count - length)
        #expect(body.isComplete)
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
        var response: [UInt8] = []
        first.takeResponse(into: &response)
        #expect(String(decoding: response, as: UTF8.self) == "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno")
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
    /// stream, with nothing of the block kept or made into HTTP/1.1, and the connection takes the next exchange.
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
        var response: [UInt8] = []
        exchange.takeResponse(into: &response)
        #expect(response.isEmpty)
        out.removeAll()
        session.send(into: &out)
        #expect(ServerFrames(out).resets == [8])  // CANCEL
        session.close(exchange)
        #expect(session.failure == nil && session.canOpen)
    }

    /// A `:status` that is not three digits from 100 to 599 makes the response malformed: the exchange fails (the
    /// machine answers 502) and no status line is made of it (found by Fuzz/HTTP2ClientSession.swift: `26`).
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
        var response: [UInt8] = []
        exchange.takeResponse(into: &response)
        #expect(response.isEmpty, "\(String(decoding: response, as: UTF8.self))")
        #expect(exchange.failure != nil)
    }
}
