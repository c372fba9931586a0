import HTTPHeads
import ProxyCore
import Testing

/// The machine with a client that hands it typed messages (an HTTP/2 stream's codec): a head made field by field,
/// payload, the end with trailers in; typed parts out. No sockets, no HTTP/2 library: the machine's side alone.
struct TypedExchangeTests {
    /// What the machine sent each way, the client's side as a list of parts.
    struct Run {
        var machine: ProxyConnectionMachine
        var io = ConnectionIO()
        var upstream = ""
        var parts: [String] = []
        var payload = ""
        var commands: [ConnectionIO.Command] = []

        init() {
            var configuration = ProxyConfiguration()
            configuration.reverseUpstream = Origin(host: "127.0.0.1", port: 3000)
            configuration.addForwarded = false
            machine = ProxyConnectionMachine(
                configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 }, client: .http2)
        }

        mutating func collect() {
            upstream += String(decoding: io.toUpstream, as: UTF8.self)
            payload += String(decoding: io.toClient, as: UTF8.self)
            for part in io.toClientParts {
                switch part {
                case .head(let status, let head):
                    var fields: [String] = []
                    head.forEachField { name, value, _ in
                        fields.append(
                            String(decoding: name, as: UTF8.self) + ": " + String(decoding: value, as: UTF8.self))
                    }
                    parts.append("head \(status) " + fields.joined(separator: ", "))
                case .own(let status, _, let body):
                    parts.append("own \(status) " + String(decoding: body, as: UTF8.self))
                case .end(let trailers):
                    parts.append("end " + trailers.text.debugDescription)
                }
            }
            commands += io.commands
            io = ConnectionIO()
        }

        /// A request as the HTTP/2 codec makes it: `fields` after Host.
        mutating func request(_ method: String, _ path: String, _ fields: [(String, String)], ended: Bool) {
            var builder = HeadBuilder.request(method: method, target: Array(path.utf8), version: .http2, capacity: 256)
            builder.append(name: Array("Host".utf8), value: Array("a.example".utf8))
            for (name, value) in fields { builder.append(name: Array(name.utf8), value: Array(value.utf8)) }
            let head = builder.requestHead(method: method, version: .http2)
            let framing = try! BodyFraming.forTypedRequest(head.head, ended: ended)
            machine.clientRequest(head, framing: framing, &io)
            collect()
        }
        mutating func body(_ text: String) {
            machine.clientBody(Array(text.utf8)[...], &io)
            collect()
        }
        mutating func end(_ trailers: [(String, String)] = []) {
            machine.clientEnded(trailers: FieldSection(trailers), &io)
            collect()
        }
        mutating func connected() {
            machine.upstreamConnected(reused: false, &io)
            collect()
        }
        mutating func response(_ text: String) {
            machine.upstreamData(Array(text.utf8)[...], &io)
            collect()
        }
    }

    /// A request body goes to an HTTP/1.1 upstream in the framing its head declares: as it is within a declared
    /// length (trailers beside a length have no place in HTTP/1.1), chunked without one (the upstream's codec adds
    /// the Transfer-Encoding that says so), the trailers in the last chunk's section (RFC 9112 §7.1.2), whether the
    /// body came before or after the upstream connection.
    @Test(arguments: [
        (
            [("content-length", "5")], true,
            "POST /up HTTP/1.1\r\nHost: a.example\r\ncontent-length: 5\r\nVia: 2 cookie-proxy\r\n\r\nhello"
        ),
        (
            [("content-length", "5")], false,
            "POST /up HTTP/1.1\r\nHost: a.example\r\ncontent-length: 5\r\nVia: 2 cookie-proxy\r\n\r\nhello"
        ),
        (
            [], true,
            "POST /up HTTP/1.1\r\nHost: a.example\r\nVia: 2 cookie-proxy\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3\r\nhel\r\n2\r\nlo\r\n0\r\nx-sum: 9\r\n\r\n"
        ),
        (
            [], false,
            "POST /up HTTP/1.1\r\nHost: a.example\r\nVia: 2 cookie-proxy\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nhello\r\n0\r\nx-sum: 9\r\n\r\n"
        ),
    ])
    func aRequestBodyTakesTheFramingItsHeadDeclares(
        _ fields: [(String, String)], _ connectedFirst: Bool, _ upstream: String
    ) {
        var run = Run()
        run.request("POST", "/up", fields, ended: false)
        if connectedFirst {
            run.connected()
            run.body("hel")
            run.body("lo")
        } else {
            run.body("hello")
        }
        run.end([("x-sum", "9")])
        if !connectedFirst { run.connected() }
        #expect(run.upstream == upstream)
        #expect(readingsDiffer(Array(run.upstream.utf8)) == nil)
    }

    /// RFC 9113 §8.1: a typed request's trailers may follow a body of declared length; towards a typed upstream the
    /// request's end (and its trailers) waits for the client's end, not the last byte of the length, whether the
    /// body came before or after the upstream connection.
    @Test(arguments: [true, false])
    func aTypedRequestsEndWaitsForItsTrailersAfterADeclaredLength(_ connectedFirst: Bool) {
        var run = Run()
        run.request("POST", "/up", [("content-length", "5")], ended: false)
        var upstreamParts: [RequestPart] = []
        var payload: [UInt8] = []
        func take(_ io: inout ConnectionIO) {
            upstreamParts += io.toUpstreamParts
            payload += io.toUpstream
            io = ConnectionIO()
        }
        if connectedFirst {
            run.machine.upstreamConnected(reused: false, speaking: .http2, &run.io)
            take(&run.io)
        }
        run.machine.clientBody(Array("hello".utf8)[...], &run.io)
        take(&run.io)
        run.machine.clientEnded(trailers: FieldSection([("x-sum", "9")]), &run.io)
        take(&run.io)
        if !connectedFirst {
            run.machine.upstreamConnected(reused: false, speaking: .http2, &run.io)
            take(&run.io)
        }
        #expect(String(decoding: payload, as: UTF8.self) == "hello")
        #expect(upstreamParts.count == 2)
        guard case .end(let trailers) = upstreamParts.last else {
            Issue.record("the request has no end: \(upstreamParts)")
            return
        }
        #expect(trailers.text == "x-sum: 9\r\n")
    }

    /// The response goes back typed: its head's fields as the hooks left them (no Connection of the proxy's own: the
    /// stream ends the exchange), the payload without framing, the end with the trailers of a chunked body; an
    /// interim head before the final one. A body that is whole with its head ends with it.
    @Test(arguments: [
        (
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nhello\r\n0\r\ngrpc-status: 5\r\ngrpc-message: gone\r\n\r\n",
            [
                "head 200 Content-Type: text/plain, Via: 1.1 cookie-proxy",
                "end \"grpc-status: 5\\r\\ngrpc-message: gone\\r\\n\"",
            ], "hello"
        ),
        (
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
            ["head 100 ", "head 200 Content-Length: 2, Via: 1.1 cookie-proxy", "end \"\""], "hi"
        ),
        (
            "HTTP/1.1 204 No Content\r\ngrpc-status: 0\r\n\r\n",
            ["head 204 grpc-status: 0, Via: 1.1 cookie-proxy", "end \"\""], ""
        ),
    ])
    func theResponseGoesBackTyped(_ response: String, _ parts: [String], _ payload: String) {
        var run = Run()
        run.request("GET", "/", [], ended: true)
        run.connected()
        run.response(response)
        #expect(run.parts == parts)
        #expect(run.payload == payload)
        #expect(run.commands.contains(.releaseUpstream(reusable: true)))
    }

    /// An answer of the proxy's own is one typed part (its status, fields and body whole), and the stream's exchange
    /// ends with it: body that still arrives is dropped, nothing is read as another request.
    @Test func anAnswerIsOnePartAndEndsTheExchange() {
        var run = Run()
        run.request("POST", "/", [], ended: false)
        run.machine.upstreamFailed(.failed(Origin(host: "127.0.0.1", port: 3000), reason: "refused"), &run.io)
        run.collect()
        run.body("GET / HTTP/1.1\r\nHost: b\r\n\r\n")
        run.end()
        #expect(run.parts.count == 1)
        #expect(run.parts.first?.hasPrefix("own 502 ") == true)
        #expect(run.commands.filter { $0 == .closeClient }.count == 1)
        #expect(run.upstream.isEmpty)
    }

    /// A typed upstream's response (an HTTP/2 origin's, made by its codec) to an HTTP/1.1 client: its heads, the
    /// interim one too, with the HTTP/1.1 status lines the client's codec writes (RFC 9112 §4); a body that ends
    /// with its stream goes chunked (keep-alive holds), its trailers in the last chunk; a declared length stays
    /// as it is, unless the client accepts trailers (`TE: trailers`), which then come in a chunked body.
    @Test(arguments: [
        (
            "", [(String, String)](),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nx-t: 1\r\n\r\n"
        ),
        ("", [("content-length", "2")], "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi"),
        (
            "TE: trailers\r\n", [("content-length", "2")],
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nx-t: 1\r\n\r\n"
        ),
    ])
    func aTypedUpstreamsResponseReachesAnHTTP1Client(
        _ te: String, _ fields: [(String, String)], _ expected: String
    ) throws {
        var configuration = ProxyConfiguration()
        configuration.reverseUpstream = Origin(host: "127.0.0.1", port: 3000)
        configuration.addVia = false
        var machine = ProxyConnectionMachine(
            configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 })
        var io = ConnectionIO()
        machine.clientData(Array("GET / HTTP/1.1\r\nHost: a\r\n\(te)\r\n".utf8)[...], &io)
        machine.upstreamConnected(reused: false, &io)
        io = ConnectionIO()
        var hints = HeadBuilder.response(status: 103, version: .http2, capacity: 64)
        hints.append(name: Array("link".utf8), value: Array("</a.css>; rel=preload".utf8))
        machine.upstreamResponse(ResponseHead(status: 103, head: hints.head(), version: .http2), framing: .none, &io)
        var builder = HeadBuilder.response(status: 200, version: .http2, capacity: 64)
        for (name, value) in fields { builder.append(name: Array(name.utf8), value: Array(value.utf8)) }
        let head = ResponseHead(status: 200, head: builder.head(), version: .http2)
        let framing = try BodyFraming.forResponse(head.head, status: 200, requestMethod: "GET")
        machine.upstreamResponse(head, framing: framing, &io)
        machine.upstreamBody(Array("hi".utf8)[...], &io)
        machine.upstreamEnded(trailers: FieldSection([("x-t", "1")]), &io)
        let hintsText = "HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n"
        #expect(String(decoding: io.toClient, as: UTF8.self) == hintsText + expected)
        #expect(machine.phase == .idle)
        #expect(readingsDiffer(io.toClient.dropFirst(hintsText.utf8.count).map { $0 }) == nil)
    }
}

extension FieldSection {
    /// The fields as HTTP/1.1's field lines, for comparing.
    var text: String {
        var out: [UInt8] = []
        writeLines(into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
