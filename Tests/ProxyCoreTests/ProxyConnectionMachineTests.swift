import HTTPHeads
import ProxyCore
import Testing

/// Transcript tests: bytes and events in, bytes and commands out, no sockets.
@Suite struct ProxyConnectionMachineTests {
    struct Transcript {
        var machine: ProxyConnectionMachine
        var io = ConnectionIO()
        var toClient = ""
        var toUpstream = ""
        var commands: [ConnectionIO.Command] = []

        init(_ configure: (inout ProxyConfiguration) -> Void = { _ in }) {
            var configuration = ProxyConfiguration()
            configuration.ownPorts = [8080]
            configure(&configuration)
            machine = ProxyConnectionMachine(
                configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 })
        }

        mutating func collect() {
            toClient += String(decoding: io.toClient, as: UTF8.self)
            toUpstream += String(decoding: io.toUpstream, as: UTF8.self)
            commands += io.commands
            io = ConnectionIO()
        }
        mutating func client(_ s: String) {
            machine.clientData(Array(s.utf8)[...], &io)
            collect()
        }
        mutating func upstream(_ s: String) {
            machine.upstreamData(Array(s.utf8)[...], &io)
            collect()
        }
        mutating func connected(reused: Bool = false) {
            machine.upstreamConnected(reused: reused, &io)
            collect()
        }
        mutating func upstreamClosed() {
            machine.upstreamClosed(&io)
            collect()
        }
        mutating func clientClosed() {
            machine.clientClosed(&io)
            collect()
        }
        mutating func failed(_ f: UpstreamFailure) {
            machine.upstreamFailed(f, &io)
            collect()
        }
        mutating func timedOut() {
            machine.timedOut(&io)
            collect()
        }
        mutating func reset() {
            toClient = ""
            toUpstream = ""
            commands = []
        }
    }

    static let origin = Origin(host: "example.com", port: 80)
    static let response =
        "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT, b=2\r\nSet-Cookie: q=\"x y\"; weird\r\nContent-Length: 5\r\n\r\nhello"

    /// A closed connection's buffers pass to the next connection as capacity only: what the first client sent
    /// (a pipelined request still buffered at the close) and what its exchange wrote never reach the second.
    @Test func buffersTakenFromAClosedConnectionCarryNothingToTheNext() {
        var first = Transcript()
        first.client(
            "GET http://example.com/a HTTP/1.1\r\nHost: example.com\r\n\r\nGET http://example.com/secret HTTP/1.1\r\nHost: example.com\r\nAuthorization: Basic c2VjcmV0\r\n\r\n"
        )
        first.connected()
        first.upstream("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        first.clientClosed()
        var buffers = first.machine.takeBuffers()
        var second = Transcript()
        second.machine.adopt(&buffers)
        second.client("GET http://example.com/b HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(second.commands == [.connect(Self.origin, fresh: false)])
        second.connected()
        #expect(second.toUpstream == "GET /b HTTP/1.1\r\nHost: example.com\r\nVia: 1.1 cookie-proxy\r\n\r\n")
        second.upstream("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
        #expect(second.toClient == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nVia: 1.1 cookie-proxy\r\n\r\nhi")
        // A second exchange on the adopting connection reads only its own bytes too.
        second.reset()
        second.client("GET http://example.com/c HTTP/1.1\r\nHost: example.com\r\n\r\n")
        second.connected(reused: true)
        #expect(second.toUpstream == "GET /c HTTP/1.1\r\nHost: example.com\r\nVia: 1.1 cookie-proxy\r\n\r\n")
    }

    @Test func forwardsARequestInOriginFormAndTheResponseUnchangedButForVia() {
        var t = Transcript()
        t.client(
            "GET http://example.com/p?q=1 HTTP/1.1\r\nHost: example.com\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n"
        )
        #expect(t.commands == [.connect(Self.origin, fresh: false)])
        t.connected()
        #expect(
            t.toUpstream == "GET /p?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nVia: 1.1 cookie-proxy\r\n\r\n")
        t.upstream(Self.response)
        #expect(
            t.toClient
                == "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT, b=2\r\nSet-Cookie: q=\"x y\"; weird\r\nContent-Length: 5\r\nVia: 1.1 cookie-proxy\r\n\r\nhello"
        )
        #expect(t.commands.last == .releaseUpstream(reusable: true))
        #expect(t.machine.phase == .idle)
    }

    /// RFC 9112 §3.2.2: Host becomes the URL's authority, once, where the first Host was.
    @Test(arguments: [
        ("Host: example.com:8080\r\nA: 1\r\n", "Host: example.com:8080\r\nA: 1\r\n"),
        ("A: 1\r\nHost: example.com:8080\r\n", "A: 1\r\nHost: example.com:8080\r\n"),
        ("Host: example.com:08080\r\n", "Host: example.com:8080\r\n"),
        ("Host: EXAMPLE.COM:8080\r\n", "Host: example.com:8080\r\n"),
        ("Host: \r\nA: 1\r\n", "Host: example.com:8080\r\nA: 1\r\n"),
        ("Host: other.example\r\n", "Host: example.com:8080\r\n"),
    ])
    func theHostFieldNamesTheURLsAuthorityOnce(_ fields: String, _ expected: String) {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com:8080/ HTTP/1.1\r\n\(fields)\r\n")
        t.connected()
        #expect(t.toUpstream == "GET / HTTP/1.1\r\n\(expected)\r\n")
    }

    @Test func theHostFieldValueIsRecognisedWithoutBuildingIt() {
        let origins = [
            Origin(host: "example.com", port: 80), Origin(host: "example.com", port: 8080),
            Origin(host: "::1", port: 80), Origin(host: "::1", port: 443), Origin(host: "a", port: 1),
        ]
        let values = [
            "example.com", "example.com:80", "example.com:8080", "example.com:08080", "example.com:", "example.co",
            "example.comm", "[::1]", "[::1]:443", "::1", "[::1:443", "a:1", "a:01", "a", "", "example.com:99999999999",
        ]
        for origin in origins {
            for value in values {
                let bytes = Array(value.utf8)
                #expect(
                    origin.isHostFieldValue(bytes[...], defaultPort: 80)
                        == (bytes == origin.hostFieldValue(defaultPort: 80)),
                    "\(origin) \(value)")
            }
        }
    }

    @Test func hopByHopFieldsAndTheFieldsConnectionNamesAreRemoved() {
        var t = Transcript { $0.addVia = false }
        t.client(
            "GET http://example.com/ HTTP/1.1\r\nHost: wrong.example\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nProxy-Authorization: Basic x\r\nUpgrade: h2c\r\nX-Kept: yes\r\n\r\n"
        )
        t.connected()
        #expect(t.toUpstream == "GET / HTTP/1.1\r\nHost: example.com\r\nX-Kept: yes\r\n\r\n")
        t.upstream(
            "HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n")
        #expect(t.toClient == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() {
        var t = Transcript { $0.addVia = false }
        t.client(
            "GET http://example.com/1 HTTP/1.1\r\nHost: example.com\r\n\r\nGET http://example.com/2 HTTP/1.1\r\nHost: example.com\r\n\r\n"
        )
        t.connected()
        #expect(t.toUpstream == "GET /1 HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.upstream("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1")
        #expect(
            t.commands == [
                .connect(Self.origin, fresh: false), .releaseUpstream(reusable: true),
                .connect(Self.origin, fresh: false),
            ])
        t.connected(reused: true)
        #expect(t.toUpstream.hasSuffix("GET /2 HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        t.upstream("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2")
        #expect(
            t.toClient == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2")
    }

    @Test func requestBodiesStreamByContentLengthAndChunked() {
        var t = Transcript { $0.addVia = false }
        t.client("POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 10\r\n\r\n01234")
        t.connected()
        t.client("56789")
        #expect(t.toUpstream == "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 10\r\n\r\n0123456789")
        var c = Transcript { $0.addVia = false }
        c.client(
            "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        c.connected()
        c.client("0\r\nX-Trailer: t\r\n\r\n")
        #expect(c.toUpstream.hasSuffix("\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n"))
    }

    @Test func expectContinueInterimResponsesReachTheClient() {
        var t = Transcript { $0.addVia = false }
        t.client(
            "PUT http://example.com/ HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
        )
        t.connected()
        t.upstream("HTTP/1.1 100 Continue\r\n\r\n")
        #expect(t.toClient == "HTTP/1.1 100 Continue\r\n\r\n")
        t.client("ok")
        t.upstream("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        #expect(t.toClient.hasSuffix("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"))
        #expect(t.toUpstream.hasSuffix("\r\n\r\nok"))
    }

    @Test func http10ClientsGetChunkedBodiesUnframedAndTheConnectionClosed() {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com/ HTTP/1.0\r\n\r\n")
        t.connected()
        t.upstream("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        #expect(t.toClient == "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc")
        #expect(t.commands.suffix(2) == [.releaseUpstream(reusable: true), .closeClient])
    }

    @Test func headResponsesHaveNoBody() {
        var t = Transcript { $0.addVia = false }
        t.client("HEAD http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected()
        t.upstream("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        #expect(t.machine.phase == .idle)
        #expect(t.commands.last == .releaseUpstream(reusable: true))
    }

    @Test func closeDelimitedBodiesEndWithTheUpstreamAndCloseTheClient() {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected()
        t.upstream("HTTP/1.1 200 OK\r\n\r\npart")
        t.upstream("rest")
        t.upstreamClosed()
        #expect(t.toClient == "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npartrest")
        #expect(t.commands.last == .closeClient)
    }

    /// RFC 9112 §9.6: a client that closes its sending side after a whole request still gets the response, whether
    /// the body was forwarded already or waited for the upstream connection.
    @Test(
        arguments: [
            ("POST", "Content-Length: 5\r\n\r\nhello"),
            ("POST", "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
            ("GET", "\r\n"),
        ], [false, true])
    func aWholeRequestFollowedByTheClientsHalfCloseIsForwardedAndAnswered(
        _ request: (String, String), connectFirst: Bool
    ) {
        let (method, rest) = request
        var t = Transcript { $0.addVia = false }
        t.client("\(method) http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\(rest)")
        if connectFirst { t.connected() }
        t.clientClosed()
        if !connectFirst { t.connected() }
        #expect(t.toUpstream == "\(method) / HTTP/1.1\r\nHost: example.com\r\n\(rest)")
        t.upstream("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(t.toClient == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        #expect(t.commands.suffix(2) == [.releaseUpstream(reusable: true), .closeClient])
    }

    /// Pipelined requests followed by the client's half-close are each answered, in order; the connection closes
    /// after the last response (a partial head left behind is abandoned). A graceful shutdown instead closes after
    /// the exchange in flight, saying so.
    @Test(arguments: ["", "GET http://example.com/partial HTTP/1.1\r\nHo"])
    func pipelinedRequestsBeforeAHalfCloseAreAllAnswered(_ leftover: String) {
        var t = Transcript { $0.addVia = false }
        t.client(
            "GET http://example.com/1 HTTP/1.1\r\nHost: example.com\r\n\r\n"
                + "POST http://example.com/2 HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\nabc"
                + "GET http://example.com/3 HTTP/1.1\r\nHost: example.com\r\n\r\n" + leftover)
        t.clientClosed()
        for n in 1...3 {
            t.connected(reused: n > 1)
            t.upstream("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n\(n)")
        }
        #expect(
            t.toUpstream
                == "GET /1 HTTP/1.1\r\nHost: example.com\r\n\r\nPOST /2 HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\nabc"
                + "GET /3 HTTP/1.1\r\nHost: example.com\r\n\r\n")
        let lastHead = leftover.isEmpty ? "Connection: close\r\n" : ""
        #expect(
            t.toClient
                == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2"
                + "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\(lastHead)\r\n3")
        #expect(t.commands.last == .closeClient)
        #expect(t.machine.phase == .closed)

        var draining = Transcript { $0.addVia = false }
        draining.client(
            "GET http://example.com/1 HTTP/1.1\r\nHost: example.com\r\n\r\nGET http://example.com/2 HTTP/1.1\r\nHost: example.com\r\n\r\n"
        )
        draining.machine.drain(&draining.io)
        draining.connected()
        draining.upstream("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1")
        #expect(draining.toClient == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: close\r\n\r\n1")
        #expect(draining.commands.last == .closeClient)
    }

    /// A request cut short (the client closes mid-body, before or after the upstream connection is there) never
    /// ends in an orderly close towards the upstream: part of a body was sent, so the connection is reset.
    @Test(arguments: [
        "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 10\r\n\r\nhello",
        "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    ])
    func aClientThatClosesMidBodyGetsTheUpstreamReset(_ request: String) {
        var sent = Transcript()
        sent.client(request)
        sent.connected()
        #expect(sent.machine.upstreamHasPartialRequest)
        sent.clientClosed()
        #expect(sent.commands.suffix(2) == [.resetUpstream, .closeClient])
        #expect(!sent.machine.upstreamHasPartialRequest)
        // Before the connection is made nothing was sent: the attempt is simply let go.
        var unsent = Transcript()
        unsent.client(request)
        #expect(!unsent.machine.upstreamHasPartialRequest)
        unsent.clientClosed()
        #expect(unsent.commands.suffix(2) == [.releaseUpstream(reusable: false), .closeClient])
    }

    /// RFC 9112 §6.3 rule 4: a response whose last transfer coding is not chunked is read until the upstream closes,
    /// and relayed so (the Transfer-Encoding kept, the client's connection closed after it).
    @Test func aResponseWithChunkedNotLastIsRelayedUntilTheUpstreamCloses() {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected()
        t.upstream("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, deflate\r\n\r\n5\r\nnot")
        t.upstream(" really")
        t.upstreamClosed()
        #expect(
            t.toClient
                == "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, deflate\r\nConnection: close\r\n\r\n5\r\nnot really")
        #expect(t.commands.suffix(2) == [.releaseUpstream(reusable: false), .closeClient])
    }

    @Test func anUpstreamThatClosesMidBodyClosesTheClientWithoutFakingSuccess() {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected()
        t.upstream("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly some")
        t.upstreamClosed()
        #expect(t.commands.suffix(2) == [.releaseUpstream(reusable: false), .closeClient])
        #expect(t.machine.phase == .closed)
    }

    /// An upstream that ends partway through its response head, by an end of stream or by a reset, and one that
    /// ends after an interim response: the client gets a 502 naming the upstream either way (nothing of a final
    /// response has gone to it), never an empty close.
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-", "end of stream", "sent an incomplete response head"),
        ("HTTP/1.1 200 OK\r\nContent-", "reset", "failed: Connection reset by peer before its response head ended"),
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 20", "reset", "before its response head ended"),
        ("", "reset", "failed: Connection reset by peer"),
    ])
    func anUpstreamThatEndsInItsHeadIsA502NamingIt(_ sent: String, _ end: String, _ says: String) {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected()
        if !sent.isEmpty { t.upstream(sent) }
        if end == "reset" {
            t.failed(.failed(Self.origin, reason: "Connection reset by peer"))
        } else {
            t.upstreamClosed()
        }
        let final = t.toClient.split(separator: "HTTP/1.1 ").last.map(String.init) ?? ""
        #expect(final.hasPrefix("502 "), "\(t.toClient)")
        #expect(t.toClient.contains("upstream example.com:80 ") && t.toClient.contains(says), "\(t.toClient)")
    }

    /// The server closed the pooled connection before the request reached it: the proxy sees an end of stream,
    /// or, when the request arrived at a closed socket, a reset.
    @Test(arguments: ["end of stream", "reset"])
    func aStalePooledConnectionIsRetriedOnceOnAFreshOne(_ end: String) {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected(reused: true)
        if end == "reset" {
            t.failed(.failed(Self.origin, reason: "Connection reset by peer"))
        } else {
            t.upstreamClosed()
        }
        #expect(t.commands.suffix(2) == [.releaseUpstream(reusable: false), .connect(Self.origin, fresh: true)])
        t.connected()
        #expect(
            t.toUpstream == "GET / HTTP/1.1\r\nHost: example.com\r\n\r\nGET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
    }

    /// Once the machine has released an upstream connection, what the shell still reports from it in the same
    /// round (a TLS upstream's close right after the bytes that completed the response) is not the machine's:
    /// the connection goes on to the next request.
    @Test(arguments: ["end of stream", "failure", "bytes"])
    func eventsFromAReleasedUpstreamAreNotTheMachines(_ event: String) {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected()
        t.upstream("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(t.commands.last == .releaseUpstream(reusable: true))
        switch event {
        case "end of stream": t.upstreamClosed()
        case "failure": t.failed(.failed(Self.origin, reason: "TLS: unexpected eof"))
        default: t.upstream("HTTP/1.1 200 OK\r\n\r\n")
        }
        #expect(t.machine.phase == .idle)
        #expect(t.commands.last == .releaseUpstream(reusable: true))
        t.client("GET http://example.com/2 HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(t.commands.last == .connect(Self.origin, fresh: false))
        #expect(t.machine.status().unexpectedEvents == 0)
    }

    /// A pooled connection that does not answer in time is not retried: the client would wait twice.
    @Test func aTimeoutOnAPooledConnectionIsNotRetried() {
        var t = Transcript { $0.addVia = false }
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected(reused: true)
        t.failed(.responseTimeout(Self.origin))
        #expect(t.toClient.hasPrefix("HTTP/1.1 504 "))
        #expect(!t.commands.contains(.connect(Self.origin, fresh: true)))
    }

    @Test func connectOpensATunnelWithHalfClose() {
        var t = Transcript()
        t.client("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nCLIENTHELLO")
        // A connection of its own (never an idle keep-alive one to the same host and port).
        #expect(t.commands == [.connect(Origin(host: "example.com", port: 443), fresh: true)])
        t.connected()
        #expect(t.toClient == "HTTP/1.1 200 Connection Established\r\n\r\n")
        #expect(t.toUpstream == "CLIENTHELLO")
        t.upstream("SERVERHELLO")
        t.client("more")
        t.clientClosed()
        #expect(t.commands.last == .shutdownUpstreamWrite)
        t.upstream("last")
        t.upstreamClosed()
        #expect(t.toClient.hasSuffix("SERVERHELLOlast"))
        #expect(t.toUpstream == "CLIENTHELLOmore")
        #expect(t.commands.suffix(3) == [.shutdownClientWrite, .releaseUpstream(reusable: false), .closeClient])
    }

    @Test func upgradeTo101SwitchesToATunnel() {
        var t = Transcript { $0.addVia = false }
        t.client(
            "GET http://example.com/ws HTTP/1.1\r\nHost: example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n"
        )
        t.connected()
        #expect(
            t.toUpstream
                == "GET /ws HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\nConnection: upgrade\r\n\r\n"
        )
        t.upstream("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nframe")
        #expect(
            t.toClient == "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nframe")
        #expect(t.machine.phase == .tunnel)
        t.client("\u{81}\u{05}hello")
        #expect(t.toUpstream.hasSuffix("\u{81}\u{05}hello"))
    }

    @Test(arguments: [
        ("GARBAGE\r\n\r\n", "HTTP/1.1 400 Bad Request", "request line is not"),
        ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request", "this is a forward proxy"),
        ("GET https://example.com/ HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request", "https URLs go through CONNECT"),
        ("GET http://127.0.0.1:8080/ HTTP/1.0\r\n\r\n", "HTTP/1.1 400 Bad Request", "addressed to the proxy itself"),
        (
            "GET http://localhost:8080/x HTTP/1.1\r\nHost: localhost:8080\r\n\r\n", "HTTP/1.1 400 Bad Request",
            "addressed to the proxy itself"
        ),
        (
            "GET http://[::ffff:127.0.0.1]:8080/ HTTP/1.0\r\n\r\n", "HTTP/1.1 400 Bad Request",
            "addressed to the proxy itself"
        ),
        (
            "POST http://e.com/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "HTTP/1.1 400 Bad Request", "both Transfer-Encoding"
        ),
        (
            "GET http://e.com/ HTTP/1.1\r\nX: " + String(repeating: "a", count: 70_000),
            "HTTP/1.1 431 Request Header Fields Too Large", "over 65536 bytes"
        ),
        ("CONNECT nohost HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request", "host:port"),
        (
            "GET http://e.com/" + String(repeating: "a", count: 70_000) + " HTTP/1.1\r\n\r\n",
            "HTTP/1.1 414 URI Too Long",
            "the first line is over 65536 bytes"
        ),
        (
            "GET http://e.com/" + String(repeating: "a", count: 70_000), "HTTP/1.1 414 URI Too Long",
            "the first line is over 65536 bytes"
        ),
    ])
    func badRequestsGetAStatusAndAOneLineReason(_ request: String, _ statusLine: String, _ reason: String) {
        var t = Transcript()
        t.client(request)
        #expect(t.toClient.hasPrefix(statusLine + "\r\n"))
        #expect(t.toClient.contains("Content-Type: text/plain"))
        #expect(t.toClient.contains(reason))
        #expect(t.commands.last == .closeClient)
    }

    @Test(arguments: [
        (
            UpstreamFailure.resolve(host: "nope.invalid", reason: "Name or service not known"), "502 Bad Gateway",
            "nope.invalid"
        ),
        (.refused(Origin(host: "example.com", port: 80)), "502 Bad Gateway", "example.com:80 refused"),
        (
            .connectTimeout(Origin(host: "example.com", port: 80)), "504 Gateway Timeout",
            "timed out connecting to upstream example.com:80"
        ),
    ])
    func upstreamFailuresNameTheHost(_ failure: UpstreamFailure, _ status: String, _ text: String) {
        var t = Transcript()
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.failed(failure)
        #expect(t.toClient.hasPrefix("HTTP/1.1 \(status)\r\n"))
        #expect(t.toClient.contains(text))
    }

    @Test func aSilentUpstreamGets504AndASlowClientGets408() {
        var t = Transcript()
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected()
        #expect(t.machine.phase == .awaitingResponse)
        t.timedOut()
        #expect(t.toClient.hasPrefix("HTTP/1.1 504 Gateway Timeout\r\n"))
        var slow = Transcript()
        slow.client("GET http://exa")
        #expect(slow.machine.phase == .readingHead)
        slow.timedOut()
        #expect(slow.toClient.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
    }

    @Test func reverseModeSendsOriginFormRequestsToTheUpstream() {
        let upstream = Origin(host: "localhost", port: 3000)
        var t = Transcript {
            $0.reverseUpstream = upstream
            $0.addVia = false
            $0.addForwarded = false
        }
        t.client("GET /app HTTP/1.1\r\nHost: localhost:8080\r\n\r\n")
        #expect(t.commands == [.connect(upstream, fresh: false)])
        t.connected()
        #expect(t.toUpstream == "GET /app HTTP/1.1\r\nHost: localhost:8080\r\n\r\n")
    }

    /// Fed one byte at a time, the machine produces exactly what it produces from one chunk.
    @Test func byteAtATimeEqualsAllAtOnce() {
        let request =
            "POST http://example.com/x HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
        let response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=b\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        var whole = Transcript()
        whole.client(request)
        whole.connected()
        whole.upstream(response)
        var bytewise = Transcript()
        for ch in request.utf8 { bytewise.machine.clientData([ch][...], &bytewise.io) }
        bytewise.collect()
        bytewise.connected()
        for ch in response.utf8 { bytewise.machine.upstreamData([ch][...], &bytewise.io) }
        bytewise.collect()
        #expect(whole.toUpstream == bytewise.toUpstream)
        #expect(whole.toClient == bytewise.toClient)
        #expect(whole.commands == bytewise.commands)
        #expect(whole.machine.phase == .idle)
    }
}
