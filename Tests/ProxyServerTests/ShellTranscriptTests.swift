import Foundation
import Locking
import ProxyCore
import Testing

@testable import ProxyServer

// Blocking Glibc sockets: Linux only (the shell's macOS paths are not built here; see the README).
#if canImport(Glibc)
    import Glibc

    /// The same transcripts through the connection machine alone (bytes in, bytes out, no socket) and through the
    /// real shell in this process (event loop, sockets, a real origin on a thread): the client and the origin
    /// must receive the same bytes both ways. The shell adds nothing but I/O.
    @Suite(.serialized) struct ShellTranscriptTests {
        struct Scenario: Sendable, CustomStringConvertible {
            var name: String
            /// `PORT` stands for the origin's port.
            var request: String
            var response: String
            /// The origin closes after its response, and the body ends with it.
            var closeDelimited = false
            var description: String { name }
        }

        static let scenarios: [Scenario] = [
            Scenario(
                name: "content-length",
                request: "GET http://127.0.0.1:PORT/a?b HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nAccept: */*\r\n\r\n",
                response:
                    "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT, b=2\r\nSet-Cookie: q=\"x y\"; weird\r\nContent-Length: 5\r\n\r\nhello"
            ),
            Scenario(
                name: "chunked",
                request: "GET http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n",
                response:
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n"),
            Scenario(
                name: "http/1.0 client, chunked body",
                request: "GET http://127.0.0.1:PORT/ HTTP/1.0\r\n\r\n",
                response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
            Scenario(
                name: "close-delimited",
                request: "GET http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n",
                response: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", closeDelimited: true),
            Scenario(
                name: "hop-by-hop",
                request:
                    "GET http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: wrong.example\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nProxy-Authorization: Basic x\r\nX-Kept: yes\r\n\r\n",
                response:
                    "HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n"
            ),
            Scenario(
                name: "interim response",
                request:
                    "POST http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
                response: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"),
            Scenario(
                name: "head",
                request: "HEAD http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n",
                response: "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"),
            Scenario(
                name: "bare-LF response head",
                request: "GET http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n",
                response: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok"),
        ]

        /// The machine alone: what the client and the origin get.
        static func machine(_ s: Scenario, port: Int) -> (client: [UInt8], origin: [UInt8]) {
            var machine = ProxyConnectionMachine(
                configuration: ServerConfiguration().proxy, clientAddress: "127.0.0.1", requestIDs: { 1 })
            var io = ConnectionIO()
            var client: [UInt8] = []
            var origin: [UInt8] = []
            func collect() {
                client += io.toClient
                origin += io.toUpstream
                io = ConnectionIO()
            }
            machine.clientData(Array(s.request.replacingOccurrences(of: "PORT", with: "\(port)").utf8)[...], &io)
            collect()
            machine.upstreamConnected(reused: false, &io)
            collect()
            machine.upstreamData(Array(s.response.utf8)[...], &io)
            collect()
            if s.closeDelimited {
                machine.upstreamClosed(&io)
                collect()
            }
            return (client, origin)
        }

        @Test(arguments: scenarios)
        func theShellDeliversWhatTheMachineWrites(_ s: Scenario) throws {
            let origin = try InProcessServerTests.listen()
            defer { close(origin.fd) }
            let expected = Self.machine(s, port: origin.port)
            let received = Locked<[UInt8]>([])
            let expectedRequest = expected.origin
            let thread = Thread {
                let fd = accept(origin.fd, nil, nil)
                var timeout = timeval(tv_sec: 5, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var got: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 16_384)
                while got.count < expectedRequest.count {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n <= 0 { break }
                    got += buffer[0..<n]
                }
                received.withLock { $0 = got }
                InProcessServerTests.send(fd, s.response)
                if s.closeDelimited { close(fd) } else { usleep(300_000); close(fd) }
            }
            thread.start()
            let server = try InProcessServerTests.server()
            defer { server.shutdown(deadline: 1) }
            let client = try InProcessServerTests.connect(server.boundPort)
            defer { close(client) }
            InProcessServerTests.send(client, s.request.replacingOccurrences(of: "PORT", with: "\(origin.port)"))
            let expectedText = String(decoding: expected.client, as: UTF8.self)
            let got = InProcessServerTests.read(client) { $0.utf8.count >= expected.client.count }
            #expect(got == expectedText)
            #expect(received.withLock { $0 } == expected.origin)
            #expect(!expected.client.isEmpty && !expected.origin.isEmpty)
            #expect(server.unexpectedEventCount == 0)
        }
    }
#endif
