@testable import ProxyCore
import ExchangeFacts
import HTTPGrammar
import HTTPHeads
import Testing

/// RFC 9112 §11.2: what the proxy forwards has one reading. Every table runs twice, fed all at once and one byte
/// at a time, and checks both the answer to the client and the exact bytes the upstream got.
@Suite struct FramingTests {
    static let origin = Origin(host: "example.com", port: 80)
    static let okResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    // MARK: Requests refused

    @Test(
        arguments: [
            ("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\rb\r\n\r\n", 400, "CR not followed by LF"),
            ("GET http://example.com/ HTTP/1.1\r\nHost: example.com\rX: 1\r\n\r\n", 400, "CR not followed by LF"),
            ("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\u{0}b\r\n\r\n", 400, "NUL"),
            ("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\u{1}b\r\n\r\n", 400, "control character"),
            ("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\u{7F}\r\n\r\n", 400, "control character"),
            ("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\u{1B}\r\n\r\n", 400, "control character"),
            (
                "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\r\n b\r\n\r\n", 400,
                "obsolete line folding"
            ),
            ("GET http://example.com/ HTTP/1.1\r\n Host: example.com\r\n\r\n", 400, "obsolete line folding"),
            (
                "GET http://example.com/ HTTP/1.1\r\nHost : example.com\r\n\r\n", 400,
                "invalid character in header field name"
            ),
            (
                "GET http://example.com/ HTTP/1.1\r\nHo\u{1}st: example.com\r\n\r\n", 400,
                "invalid character in header field name"
            ),
            ("GET  http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, "request line"),
            ("GET http://example.com/ HTTP/1.1 \r\nHost: example.com\r\n\r\n", 400, "request line"),
            ("GET\thttp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, "request line"),
            ("GET http://example.com/ http/1.1\r\nHost: example.com\r\n\r\n", 400, "unsupported HTTP version"),
            ("GET http://example.com/\u{1}x HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, "invalid request target"),
            // Framing fields (RFC 9112 §6.1, §6.3; RFC 9110 §8.6).
            (
                post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), 400,
                "both Transfer-Encoding and Content-Length"
            ),
            (
                post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"), 400,
                "both Transfer-Encoding and Content-Length"
            ),
            (post("Content-Length: 5\r\nTransfer-Encoding:\r\n"), 400, "both Transfer-Encoding and Content-Length"),
            (post("Content-Length: 5\r\nTransfer-Encoding: ,\r\n"), 400, "both Transfer-Encoding and Content-Length"),
            (post("Transfer-Encoding: ,\r\n"), 400, "names no coding"),
            (post("Transfer-Encoding:\r\n"), 400, "names no coding"),
            (post("Transfer-Encoding: xchunked\r\n"), 400, "does not end in chunked"),
            (post("Transfer-Encoding: chunked, gzip\r\n"), 400, "does not end in chunked"),
            (post("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n"), 400, "does not end in chunked"),
            (post("Transfer-Encoding: chunked, chunked\r\n"), 400, "more than once"),
            (post("Transfer-Encoding: chunked;x=1\r\n"), 400, "invalid Transfer-Encoding"),
            (post("Transfer-Encoding: \"chunked\"\r\n"), 400, "invalid Transfer-Encoding"),
            (post("Transfer-Encoding: chunked\u{B}\r\n"), 400, "control character"),
            (post("Transfer-Encoding: foo, chunked\r\n"), 501, "unsupported transfer coding"),
            (post("Transfer-Encoding: chunked\r\n", version: "1.0"), 400, "HTTP/1.0"),
            (post("Content-Length: +5\r\n"), 400, "invalid Content-Length"),
            (post("Content-Length: -1\r\n"), 400, "invalid Content-Length"),
            (post("Content-Length: 0x5\r\n"), 400, "invalid Content-Length"),
            (post("Content-Length: 5 5\r\n"), 400, "invalid Content-Length"),
            (post("Content-Length:\r\n"), 400, "invalid Content-Length"),
            (post("Content-Length: 5,\r\n"), 400, "invalid Content-Length"),
            (post("Content-Length: 99999999999999999999\r\n"), 400, "invalid Content-Length"),
            (post("Content-Length: 5, 6\r\n"), 400, "conflicting Content-Length"),
            (post("Content-Length: 5\r\nContent-Length: 6\r\n"), 400, "conflicting Content-Length"),
            // Host (RFC 9112 §3.2).
            ("GET http://example.com/ HTTP/1.1\r\n\r\n", 400, "without a Host"),
            (
                "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nHost: example.com\r\n\r\n", 400,
                "more than one Host"
            ),
            ("GET http://example.com/ HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "invalid Host"),
            ("GET http://example.com/ HTTP/1.1\r\nHost: a,b\r\n\r\n", 400, "invalid Host"),
            ("GET http://example.com/ HTTP/1.1\r\nHost: a:99999\r\n\r\n", 400, "invalid Host"),
            // Targets and host names (RFC 3986 §3.2.2; RFC 9110 §4.2.4).
            ("GET http://user@example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, "userinfo"),
            ("GET http://a@b@example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, "userinfo"),
            ("GET http://0x7f.1/ HTTP/1.1\r\nHost: 0x7f.1\r\n\r\n", 400, "invalid host"),
            ("GET http://2130706433/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET http://127.1/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET http://010.0.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET http://a%2eb/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET http://a_b.-c/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET http://[::1%25eth0]/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET http://[1:2]/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET http:///p HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET http://example.com:0/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid host"),
            ("GET ftp://example.com/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "absolute http:// URL"),
            ("GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400, "only OPTIONS"),
            ("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 400, "forward proxy"),
            ("CONNECT a,DNS:evil.example:443 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "host:port"),
            ("CONNECT evil.example HTTP/1.1\r\nHost: x\r\n\r\n", 400, "host:port"),
            ("CONNECT [::1] HTTP/1.1\r\nHost: x\r\n\r\n", 400, "host:port"),
        ] as [(String, Int, String)], [false, true])
    func ambiguousOrInvalidRequestsAreRefusedAndNothingReachesTheUpstream(
        _ row: (String, Int, String), _ oneByteAtATime: Bool
    ) {
        let (request, status, reason) = row
        var w = Wire(oneByteAtATime: oneByteAtATime)
        w.client(bytes(request) + bytes("GET http://example.com/after HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        #expect(w.clientText.hasPrefix("HTTP/1.1 \(status) "), "\(w.clientText)")
        #expect(w.clientText.contains(reason), "\(w.clientText)")
        #expect(w.clientText.contains("Connection: close"))
        #expect(w.connects.isEmpty)
        #expect(w.toUpstream.isEmpty)
        #expect(w.commands.last == .closeClient)
        #expect(w.machine.phase == .closed)
    }

    static func post(_ fields: String, version: String = "1.1") -> String {
        "POST http://example.com/ HTTP/\(version)\r\nHost: example.com\r\n\(fields)\r\nhello"
    }

    // MARK: Requests accepted, forwarded with one reading

    @Test(
        arguments: [
            // A bare LF ends a line (RFC 9112 §2.2): the head goes on with CRLF.
            (
                "GET http://example.com/ HTTP/1.1\nHost: example.com\nX-A: 1\nContent-Length: 5\n\nhello",
                "GET / HTTP/1.1\r\nHost: example.com\r\nX-A: 1\r\nContent-Length: 5\r\n\r\nhello"
            ),
            (
                "GET http://example.com/ HTTP/1.1\r\nHost: example.com\nX-A: 1\r\n\n",
                "GET / HTTP/1.1\r\nHost: example.com\r\nX-A: 1\r\n\r\n"
            ),
            // Framing fields with one reading: one Content-Length of plain digits, one Transfer-Encoding list.
            (
                post("Content-Length: 5, 5\r\n"),
                "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\nhello"
            ),
            (
                post("Content-Length: 5\r\nX: y\r\nContent-Length: 5\r\n"),
                "POST / HTTP/1.1\r\nHost: example.com\r\nX: y\r\nContent-Length: 5\r\n\r\nhello"
            ),
            (
                post("Content-Length: 005\r\n"),
                "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 005\r\n\r\nhello"
            ),
            (post("Content-Length: 5\r\n"), "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\nhello"),
            (
                "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                "POST / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            ),
            (
                "POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\nHost: example.com\r\nTransfer-Encoding:  chunked \r\n\r\n0\r\n\r\n",
                "POST / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
            ),
            // Connection cannot make the proxy drop the field it framed or routed the message by.
            (
                post("Connection: content-length, host, transfer-encoding, x-a\r\nX-A: 1\r\nContent-Length: 5\r\n"),
                "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\nhello"
            ),
            // Targets (RFC 9112 §3.2).
            (
                "OPTIONS http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n",
                "OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n"
            ),
            (
                "OPTIONS http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
                "OPTIONS / HTTP/1.1\r\nHost: example.com\r\n\r\n"
            ),
            (
                "GET http://example.com?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                "GET /?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"
            ),
            (
                "GET http://EXAMPLE.com./p#frag HTTP/1.1\r\nHost: example.com\r\n\r\n",
                "GET /p HTTP/1.1\r\nHost: example.com\r\n\r\n"
            ),
            ("GET http://example.com/ HTTP/1.0\r\n\r\n", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
            ("GET http://example.com/ HTTP/1.1\r\nHost:\r\n\r\n", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
            // port = *DIGIT: an empty port is the default one (RFC 3986 §3.2.3).
            (
                "GET http://example.com:/ HTTP/1.1\r\nHost: example.com:\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"
            ),
            // Field values: HTAB, SP and obs-text are field-vchar or whitespace (RFC 9110 §5.5).
            (
                "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\tb \u{80}\u{FF}\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: example.com\r\nX: a\tb \u{80}\u{FF}\r\n\r\n"
            ),
        ] as [(String, String)], [false, true])
    func acceptedRequestsReachTheUpstreamWithOneReading(_ row: (String, String), _ oneByteAtATime: Bool) {
        let (request, forwarded) = row
        var w = Wire(oneByteAtATime: oneByteAtATime)
        w.client(bytes(request))
        #expect(w.connects == [Self.origin])
        w.connected()
        #expect(w.toUpstream == bytes(forwarded), "\(w.upstreamText.debugDescription)")
        #expect(readingsDiffer(w.toUpstream) == nil)
        w.upstream(Self.okResponse)
        #expect(w.clientText.hasPrefix("HTTP/1.1 200 OK"))
        #expect(readingsDiffer(w.toClient, responsesTo: [String(request.prefix { $0 != " " })]) == nil)
    }

    // MARK: Chunked request bodies (RFC 9112 §7.1)

    @Test(
        arguments: [
            "5\r\nhello\r\n0\r\n\r\n", "5;name\r\nhello\r\n0\r\n\r\n", "5 ; a = b\r\nhello\r\n0\r\n\r\n",
            "5;a=\"q \\\" x\";b=c\r\nhello\r\n0\r\n\r\n", "5\t;a\r\nhello\r\n0\r\n\r\n",
            "000005\r\nhello\r\n0000\r\n\r\n",
            "A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n", "5\r\nhello\r\n0\r\nX-T: 1\r\nY:\r\n\r\n",
            "5\r\nhello\r\n0;last\r\nX-T: a\tb\r\n\r\n",
        ], [false, true])
    func validChunkedBodiesAreForwardedAsReceived(_ body: String, _ oneByteAtATime: Bool) {
        let head = "POST / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
        var w = Wire(oneByteAtATime: oneByteAtATime)
        w.client("POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
        w.connected()
        #expect(w.upstreamText == head + body)
        #expect(readingsDiffer(w.toUpstream) == nil)
        w.upstream(Self.okResponse)
        #expect(w.commands.last == .releaseUpstream(reusable: true))
    }

    @Test(
        arguments: [
            ("0x5\r\nhello\r\n0\r\n\r\n", "invalid character in chunk line"),
            ("5 xyz\r\nhello\r\n0\r\n\r\n", "invalid chunk extension"),
            ("5;\r\nhello\r\n0\r\n\r\n", "invalid chunk extension name"),
            ("5 \r\nhello\r\n0\r\n\r\n", "invalid chunk extension"),
            ("5;a=\"unterminated\r\nhello\r\n0\r\n\r\n", "quoted chunk extension value"),
            ("5;a=b c\r\nhello\r\n0\r\n\r\n", "invalid chunk extension"),
            ("5;a=\r\nhello\r\n0\r\n\r\n", "invalid chunk extension value"),
            ("5\nhello\r\n0\r\n\r\n", "bare LF"),
            ("5\rhello\r\n0\r\n\r\n", "not ended by CRLF"),
            ("5;a\nhello\r\n0\r\n\r\n", "bare LF"),
            ("-5\r\nhello\r\n0\r\n\r\n", "missing chunk size"),
            ("\r\nhello\r\n0\r\n\r\n", "missing chunk size"),
            ("1000000000000000\r\nhello\r\n0\r\n\r\n", "chunk size too large"),
            ("5\r\nhello0\r\n\r\n", "not followed by CRLF"),
            ("5\r\nhello\n0\r\n\r\n", "not followed by CRLF"),
            ("5\r\nhello\r0\r\n\r\n", "not followed by CRLF"),
            ("0\r\nX: 1\r\n y\r\n\r\n", "invalid trailer field line"),
            ("0\r\nX: 1\n\r\n", "invalid character in trailer field value"),
            ("0\r\nX: 1\r\r\n", "trailer line not ended by CRLF"),
            ("0\r\n\n", "invalid trailer field line"),
            ("0\r\n\r\r\n", "chunked body not ended by CRLF"),
            ("0\r\nX Y: 1\r\n\r\n", "invalid character in trailer field name"),
            ("0\r\nX: a\u{0}b\r\n\r\n", "invalid character in trailer field value"),
            ("0\r\nNoColon\r\n\r\n", "invalid character in trailer field name"),
        ] as [(String, String)], [false, true])
    func invalidChunkLinesAreRefusedAndNothingAfterThemReachesTheUpstream(
        _ row: (String, String), _ oneByteAtATime: Bool
    ) {
        let (body, reason) = row
        let request = "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
        let forwardedHead = bytes("POST / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n")
        var w = Wire(oneByteAtATime: oneByteAtATime)
        w.client(request)
        w.connected()
        w.client(bytes(body) + bytes("GET http://example.com/smuggled HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        #expect(w.clientText.hasPrefix("HTTP/1.1 400 Bad Request"), "\(w.clientText)")
        #expect(w.clientText.contains(reason), "\(w.clientText)")
        #expect(w.commands.suffix(2) == [.resetUpstream, .closeClient])
        // The upstream got the head and at most the bytes before the one that broke the grammar.
        let sent = w.toUpstream
        #expect(sent.starts(with: forwardedHead))
        #expect(bytes(body).starts(with: sent.dropFirst(forwardedHead.count)))
        #expect(sent.count < forwardedHead.count + bytes(body).count)
        #expect(!w.upstreamText.contains("smuggled"))
    }

    // MARK: Responses

    @Test(
        arguments: [
            ("HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 2\r\n\r\nok", "CR not followed by LF"),
            ("HTTP/1.1 200 OK\r\nX: a\u{0}b\r\nContent-Length: 2\r\n\r\nok", "NUL"),
            ("HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 2\r\n\r\nok", "obsolete line folding"),
            ("HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok", "invalid character in header field name"),
            ("HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\nok", "invalid status line"),
            ("HTTP/1.1 200 O\u{1}K\r\nContent-Length: 2\r\n\r\nok", "control character in the status line"),
            ("HTTP/1.1 200 OK\rContent-Length: 2\r\n\r\nok", "CR not followed by LF"),
            ("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok", "invalid Content-Length"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", "conflicting Content-Length"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", "more than once"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;x=1\r\n\r\n0\r\n\r\n", "invalid Transfer-Encoding"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\n\r\n0\r\n\r\n", "names no coding"),
            ("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "HTTP/1.0 response"),
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
                "without being asked"
            ),
            ("HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "invalid status line"),
        ] as [(String, String)], [false, true])
    func invalidResponsesAreA502NamingTheUpstreamAndCloseBothSides(
        _ row: (String, String), _ oneByteAtATime: Bool
    ) {
        let (response, reason) = row
        var w = Wire(oneByteAtATime: oneByteAtATime)
        w.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        w.connected()
        w.upstream(bytes(response))
        #expect(w.clientText.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"), "\(w.clientText)")
        #expect(w.clientText.contains("example.com:80"))
        #expect(w.clientText.contains(reason), "\(w.clientText)")
        #expect(!w.clientText.contains("ok"))
        #expect(w.commands.suffix(2) == [.releaseUpstream(reusable: false), .closeClient])
    }

    @Test(
        arguments: [
            ("GET", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true),
            // Transfer-Encoding wins and Content-Length is not forwarded (RFC 9112 §6.3 rule 3).
            (
                "GET",
                "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false
            ),
            (
                "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok",
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true
            ),
            // A final coding other than chunked: until close, no Content-Length, the client connection closes.
            (
                "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nok",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\nok", false
            ),
            // Control characters other than NUL and CR in a response field are relayed (the lint flags them).
            (
                "GET", "HTTP/1.1 200 OK\r\nSet-Cookie: a=\u{1}b\r\nContent-Length: 2\r\n\r\nok",
                "HTTP/1.1 200 OK\r\nSet-Cookie: a=\u{1}b\r\nContent-Length: 2\r\n\r\nok", true
            ),
            // Interim responses are relayed, normalised; the final one follows.
            (
                "GET", "HTTP/1.1 103 Early Hints\nLink: </a>\n\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true
            ),
            (
                "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n", true
            ),
        ] as [(String, String, String, Bool)], [false, true])
    func acceptedResponsesReachTheClientWithOneReading(
        _ row: (String, String, String, Bool), _ oneByteAtATime: Bool
    ) {
        let (method, response, forwarded, keepsUpstream) = row
        var w = Wire(oneByteAtATime: oneByteAtATime)
        w.client("\(method) http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        w.connected()
        w.upstream(bytes(response))
        if w.machine.phase != .idle && w.machine.phase != .closed { w.upstreamClosed() }
        #expect(w.toClient == bytes(forwarded), "\(w.clientText.debugDescription)")
        #expect(readingsDiffer(w.toClient, responsesTo: [method]) == nil)
        #expect(w.commands.contains(.releaseUpstream(reusable: keepsUpstream)))
    }

    // MARK: Reverse mode relays only to its upstream

    static let upstream = Origin(host: "127.0.0.1", port: 3000)

    @Test(
        arguments: [
            (
                "GET http://evil.example/x?y HTTP/1.1\r\nHost: evil.example\r\n\r\n",
                "GET /x?y HTTP/1.1\r\nHost: evil.example\r\n\r\n"
            ),
            (
                "GET https://evil.example:8443/x HTTP/1.1\r\nHost: other.example\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: evil.example:8443\r\n\r\n"
            ),
            ("OPTIONS * HTTP/1.1\r\nHost: app.local\r\n\r\n", "OPTIONS * HTTP/1.1\r\nHost: app.local\r\n\r\n"),
            ("GET /p HTTP/1.1\r\nHost: app.local:8080\r\n\r\n", "GET /p HTTP/1.1\r\nHost: app.local:8080\r\n\r\n"),
            (
                "GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: x\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
            ),
        ] as [(String, String)])
    func reverseModeSendsEveryRequestToItsUpstream(_ request: String, _ forwarded: String) {
        var w = Wire {
            $0.reverseUpstream = Self.upstream
            $0.addForwarded = false
        }
        w.client(request)
        #expect(w.connects == [Self.upstream])
        w.connected()
        #expect(w.upstreamText == forwarded)
    }

    /// Host cannot change where a tunnel goes: a CONNECT without one is served (two Host fields are still refused).
    @Test func aConnectWithoutHostIsTunnelled() {
        var w = Wire()
        w.client("CONNECT example.com:443 HTTP/1.1\r\n\r\n")
        #expect(w.connects == [Origin(host: "example.com", port: 443)])
        var twice = Wire()
        twice.client("CONNECT example.com:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
        #expect(twice.clientText.hasPrefix("HTTP/1.1 400 "))
        #expect(twice.connects.isEmpty)
    }

    @Test func reverseModeRefusesConnectWith405() {
        var w = Wire {
            $0.reverseUpstream = Self.upstream
            $0.addForwarded = false
        }
        w.client("CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n")
        #expect(w.clientText.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
        #expect(w.clientText.contains("\r\nAllow: GET, HEAD, POST"))
        #expect(w.connects.isEmpty)
        #expect(w.commands.last == .closeClient)
    }

    /// Generated requests and responses, every line ending, framing field and chunk line shape combined: what the
    /// machine forwards reads the same to the strict and the lenient reader, and both kinds occur (some are
    /// refused, some forwarded), so the check is not vacuous.
    @Test(arguments: [1, 2, 3, 4])
    func generatedMessagesHaveOneReadingWhereverTheyAreForwarded(_ seed: UInt64) {
        var generator = MessageGenerator(seed: seed)
        var forwarded = 0
        var refused = 0
        for _ in 0..<300 {
            let (stream, count) = generator.requests()
            var w = Wire(oneByteAtATime: generator.coin())
            w.client(stream)
            w.serve("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", limit: count)
            if w.toUpstream.isEmpty {
                refused += 1
                continue
            }
            if w.commands.contains(.resetUpstream) && StrictReader.read(w.toUpstream) == nil {
                refused += 1  // refused part-way through a body: the upstream got a truncated message and a reset
                continue
            }
            forwarded += 1
            #expect(readingsDiffer(w.toUpstream) == nil, "\(String(decoding: stream, as: UTF8.self).debugDescription)")
        }
        for _ in 0..<300 {
            let response = generator.response()
            var w = Wire(oneByteAtATime: generator.coin())
            w.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
            w.connected()
            w.upstream(response)
            if w.machine.phase != .idle && w.machine.phase != .closed { w.upstreamClosed() }
            if w.clientText.hasPrefix("HTTP/1.1 502 Bad Gateway")
                || StrictReader.read(w.toClient, responsesTo: ["GET"]) == nil
            {
                refused += 1
                #expect(w.commands.contains(.closeClient))
                continue
            }
            forwarded += 1
            #expect(
                readingsDiffer(w.toClient, responsesTo: ["GET"]) == nil,
                "\(String(decoding: response, as: UTF8.self).debugDescription)")
        }
        #expect(forwarded > 100)
        #expect(refused > 100)
    }
}

/// Messages made of the shapes that differ between readers (a deterministic generator: failures reproduce).
struct MessageGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 }

    mutating func next(_ n: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(n))
    }
    mutating func coin() -> Bool { next(2) == 0 }
    mutating func pick<T>(_ options: [T]) -> T { options[next(options.count)] }

    static let lineEnds = ["\r\n", "\r\n", "\r\n", "\n"]
    static let extraFields = [
        "X-A: 1", "X-B:\tv\t", "X-C: a\u{1}b", "X-D: a\rb", "X-E: ", "X-F:\u{80}", " folded", "Bad Name: x",
        "X-G: a\u{0}b",
        "Connection: content-length", "Connection: transfer-encoding", "Connection: x-a", "Host: other.example",
        "Cookie: a=b", "Expect: 100-continue",
    ]
    static let chunkLines = [
        "5", "5", "05", "5;a", "5;a=b", "5 ;a", "5;a=\"x\"", "0x5", "5 xyz", "5;", "5\u{0}", "5 ", "5;a=\"x",
    ]

    /// One to three pipelined requests in one stream, and how many there are.
    mutating func requests() -> ([UInt8], Int) {
        var out: [UInt8] = []
        let count = 1 + next(3)
        for _ in 0..<count { out += request() }
        return (out, count)
    }

    mutating func request() -> [UInt8] {
        var lines = ["POST http://example.com/p HTTP/1.\(pick(["1", "1", "0"]))", "Host: example.com"]
        for _ in 0..<next(3) { lines.append(pick(Self.extraFields)) }
        var body = ""
        switch next(6) {
        case 0: break
        case 1:
            lines.append(
                pick([
                    "Content-Length: 5", "Content-Length: 5, 5", "Content-Length: 05", "Content-Length: 5,6",
                    "Content-Length: +5",
                ]))
            if coin() { lines.append(pick(["Content-Length: 5", "Content-Length: 6"])) }
            body = "hello"
        case 2, 3:
            lines.append(
                pick([
                    "Transfer-Encoding: chunked", "Transfer-Encoding: Chunked", "Transfer-Encoding: gzip, chunked",
                    "Transfer-Encoding: chunked ", "Transfer-Encoding: xchunked",
                    "Transfer-Encoding: chunked, identity",
                    "Transfer-Encoding: ,chunked", "Transfer-Encoding: chunked\u{B}",
                ]))
            if coin() { lines.append(pick(["Content-Length: 5", "Transfer-Encoding: chunked", "X-Z: 1"])) }
            body = chunkedBody()
        case 4:
            lines.append("Transfer-Encoding: chunked")
            lines.append("Content-Length: \(5 + next(3))")
            body = chunkedBody()
        default:
            lines.append("Content-Length: 0")
        }
        lines.shuffle(using: &self)
        // The request line stays first.
        if let i = lines.firstIndex(where: { $0.hasPrefix("POST ") }) { lines.swapAt(0, i) }
        var text = ""
        for line in lines { text += line + pick(Self.lineEnds) }
        text += pick(Self.lineEnds) + body
        return bytes(text)
    }

    mutating func chunkedBody() -> String {
        var body = ""
        for _ in 0..<next(3) { body += pick(Self.chunkLines) + pick(Self.lineEnds) + "hello" + pick(Self.lineEnds) }
        body += pick(["0", "0", "00", "0;x"]) + pick(Self.lineEnds)
        if coin() { body += pick(["X-T: 1", "X T: 1", " fold"]) + pick(Self.lineEnds) }
        return body + pick(Self.lineEnds)
    }

    mutating func response() -> [UInt8] {
        var lines = [
            pick([
                "HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.0 200 OK", "HTTP/1.1 200 O\u{1}K",
                "HTTP/1.1 204 No Content",
            ])
        ]
        for _ in 0..<next(3) {
            lines.append(pick(Self.extraFields + ["Set-Cookie: a=b; Path=/", "Set-Cookie: c=\u{7}"]))
        }
        var body = ""
        switch next(5) {
        case 0: body = "close-delimited"
        case 1:
            lines.append(
                pick(["Content-Length: 5", "Content-Length: 5, 5", "Content-Length: 5,6", "Content-Length: x"]))
            body = "hello"
        case 2, 3:
            lines.append(
                pick([
                    "Transfer-Encoding: chunked", "Transfer-Encoding: gzip, chunked",
                    "Transfer-Encoding: chunked, gzip", "Transfer-Encoding: chunked;q=1",
                ]))
            if coin() { lines.append("Content-Length: 3") }
            body = chunkedBody()
        default:
            lines.insert("HTTP/1.1 100 Continue" + pick(Self.lineEnds), at: 0)
            lines.append("Content-Length: 2")
            body = "ok"
        }
        var text = ""
        for line in lines { text += line + pick(Self.lineEnds) }
        return bytes(text + pick(Self.lineEnds) + body)
    }
}

extension MessageGenerator: RandomNumberGenerator {
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state
    }
}

@Suite struct ExchangeContextTests {
    /// The log's URL, written as bytes, is what string interpolation writes.
    @Test(arguments: [
        ("http", "example.com", 80, "/p?q=1"), ("https", "::1", 8443, "/"), ("http", "a", 1, ""),
        ("https", "café.example", 65535, "/é"), ("http", "10.0.0.1", 10000, "/x"), ("http", "h", 9999, "*"),
    ])
    func theURLIsSchemeHostPortAndTarget(_ scheme: String, _ host: String, _ port: Int, _ target: String) {
        let context = ExchangeContext(
            requestID: 1, clientAddress: "c", method: "GET", scheme: scheme, host: host, port: port, target: target,
            status: nil)
        #expect(context.url == "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)\(target)")
    }
}
