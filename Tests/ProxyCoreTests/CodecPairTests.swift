import ExchangeFacts
import HTTPHeads
import ProxyCore
import Testing

/// The machine between every pair of codecs: a client that speaks HTTP/1.1 (bytes, read and written by the
/// machine's HTTP/1.1 codec) or hands it typed parts (an HTTP/2 stream's codec), and an upstream of either kind. The
/// same exchange (a request body with trailers, a response body with trailers) goes through each pair; what each
/// side receives, read back in its own protocol, is the same message, so what differs between protocols is the
/// codecs' alone.
struct CodecPairTests {
    /// What one side received, read back: the head's start and framing fields aside, the body's payload and the
    /// trailers.
    struct Received: Equatable, CustomStringConvertible {
        var payload = ""
        var trailers = ""
        var description: String { "payload \(payload.debugDescription), trailers \(trailers.debugDescription)" }
    }

    /// An HTTP/1.1 message's body read back from `bytes` after its head, in the framing the head declares.
    static func readBack(_ bytes: [UInt8]) throws -> (head: String, Received) {
        let marker: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: marker) }) else {
            return (String(decoding: bytes, as: UTF8.self), Received())
        }
        let head = String(decoding: bytes[..<(end + 4)], as: UTF8.self)
        let body = Array(bytes[(end + 4)...])
        let chunked = head.lowercased().contains("transfer-encoding: chunked")
        var reader = BodyReader(chunked ? .chunked : .contentLength(body.count))
        var payload: [UInt8] = []
        var trailers = FieldSection()
        _ = try withUnsafeMutablePointer(to: &payload) { p in
            try withUnsafeMutablePointer(to: &trailers) { try reader.consume(body[...], payload: p, trailers: $0) }
        }
        var lines: [UInt8] = []
        trailers.writeLines(into: &lines)
        return (
            head,
            Received(
                payload: String(decoding: payload, as: UTF8.self), trailers: String(decoding: lines, as: UTF8.self))
        )
    }

    @Test(arguments: [HTTPProtocol.http1, .http2], [HTTPProtocol.http1, .http2])
    func anExchangeWithBodiesAndTrailersCrossesEveryPairOfCodecs(_ client: HTTPProtocol, _ upstream: HTTPProtocol)
        throws
    {
        var configuration = ProxyConfiguration()
        // An HTTP/1.1 client's request goes to an HTTP/2 upstream only by an h2c route (its own bytes are kept for an
        // HTTP/1.1 one otherwise); a typed client's may go to either.
        let scheme = client == .http1 && upstream == .http2 ? "h2c" : "http"
        configuration.routes = RouteTable([try ReverseRoute.parse("/=\(scheme)://127.0.0.1:3000").get()])
        configuration.addVia = false
        configuration.addForwarded = false
        var machine = ProxyConnectionMachine(
            configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 }, client: client)
        var io = ConnectionIO()
        var toUpstream: [UInt8] = []
        var upstreamParts: [RequestPart] = []
        func collectUpstream() {
            toUpstream += io.toUpstream
            upstreamParts += io.toUpstreamParts
            io.toUpstream = []
            io.toUpstreamParts = []
        }

        // The request: POST with "hello" and the trailer x-sum: 9 (the client accepts trailers in its response).
        if client == .http1 {
            machine.clientData(
                Array(
                    ("POST /up HTTP/1.1\r\nHost: a.example\r\nTE: trailers\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "5\r\nhello\r\n0\r\nx-sum: 9\r\n\r\n").utf8)[...], &io)
        } else {
            var builder = HeadBuilder.request(method: "POST", target: Array("/up".utf8), version: .http2, capacity: 64)
            builder.append(name: Array("Host".utf8), value: Array("a.example".utf8))
            let head = builder.requestHead(method: "POST", version: .http2)
            machine.clientRequest(head, framing: try BodyFraming.forTypedRequest(head.head, ended: false), &io)
            machine.clientBody(Array("hello".utf8)[...], &io)
            machine.clientEnded(trailers: FieldSection([("x-sum", "9")]), &io)
        }
        #expect(io.commands.contains(.connect(Origin(host: "127.0.0.1", port: 3000), fresh: false)))
        io.commands = []
        machine.upstreamConnected(reused: false, speaking: upstream, &io)
        collectUpstream()

        // What the upstream received.
        let requestReceived: Received
        if upstream == .http1 {
            #expect(upstreamParts.isEmpty)
            let (head, received) = try Self.readBack(toUpstream)
            #expect(head.hasPrefix("POST /up HTTP/1.1\r\n"))
            requestReceived = received
            if client == .http1 {
                // The relay: the client's chunked body as it came.
                #expect(String(decoding: toUpstream, as: UTF8.self).hasSuffix("5\r\nhello\r\n0\r\nx-sum: 9\r\n\r\n"))
            }
        } else {
            var received = Received(payload: String(decoding: toUpstream, as: UTF8.self))
            #expect(upstreamParts.count == 2)
            if case .head(let method, let target, _) = upstreamParts.first {
                #expect(method == "POST" && String(decoding: target, as: UTF8.self) == "/up")
            } else {
                Issue.record("the first part is not the head: \(upstreamParts)")
            }
            if case .end(let trailers) = upstreamParts.last {
                var lines: [UInt8] = []
                trailers.writeLines(into: &lines)
                received.trailers = String(decoding: lines, as: UTF8.self)
            }
            requestReceived = received
        }
        #expect(requestReceived == Received(payload: "hello", trailers: "x-sum: 9\r\n"))

        // The response: 200 with "hi" and the trailer grpc-status: 0.
        if upstream == .http1 {
            machine.upstreamData(
                Array(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\ngrpc-status: 0\r\n\r\n".utf8)[
                        ...],
                &io)
        } else {
            let head = ResponseHead(
                status: 200, head: HeadBuilder.response(status: 200, version: .http2, capacity: 16).head(),
                version: .http2)
            machine.upstreamResponse(
                head, framing: try BodyFraming.forResponse(head.head, status: 200, requestMethod: "POST"), &io)
            machine.upstreamBody(Array("hi".utf8)[...], &io)
            machine.upstreamEnded(trailers: FieldSection([("grpc-status", "0")]), &io)
        }

        // What the client received.
        let responseReceived: Received
        if client == .http1 {
            #expect(io.toClientParts.isEmpty)
            let (head, received) = try Self.readBack(io.toClient)
            #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(readingsDiffer(io.toClient) == nil)
            responseReceived = received
        } else {
            var received = Received(payload: String(decoding: io.toClient, as: UTF8.self))
            #expect(io.toClientParts.count == 2)
            if case .head(let status, _) = io.toClientParts.first { #expect(status == 200) }
            if case .end(let trailers) = io.toClientParts.last {
                var lines: [UInt8] = []
                trailers.writeLines(into: &lines)
                received.trailers = String(decoding: lines, as: UTF8.self)
            }
            responseReceived = received
        }
        #expect(responseReceived == Received(payload: "hi", trailers: "grpc-status: 0\r\n"))
        #expect(machine.phase == (client == .http1 ? .idle : .closed))
    }
}
