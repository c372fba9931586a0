import Foundation
import Locking
import ProxyCore
import Testing

@testable import ProxyServer

// Blocking Glibc sockets: Linux only (the shell's macOS paths are not built here; see the README).
#if canImport(Glibc)
    import Glibc

    /// The real shell (event loop, sockets, pool) in this process: a `ProxyServer` on a loopback port, an origin on a
    /// thread of the test, and a client socket, all with blocking calls and a receive timeout.
    @Suite(.serialized) struct InProcessServerTests {
        /// A listening loopback socket on a free port.
        static func listen() throws -> (fd: Int32, port: Int) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                    bind(fd, p, length) == 0 && Glibc.listen(fd, 16) == 0 && getsockname(fd, p, &length) == 0
                }
            }
            try #require(bound, "bind: \(String(cString: strerror(errno)))")
            return (fd, Int(UInt16(bigEndian: address.sin_port)))
        }

        static func connect(_ port: Int) throws -> Int32 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(rc == 0, "connect: \(String(cString: strerror(errno)))")
            return fd
        }

        static func send(_ fd: Int32, _ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Reads until `done` holds for what arrived, the peer closes, or 5 s pass.
        static func read(_ fd: Int32, until done: (String) -> Bool) -> String {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while !done(String(decoding: received, as: UTF8.self)) {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                received += buffer[0..<n]
            }
            return String(decoding: received, as: UTF8.self)
        }

        /// An origin on a thread of the test: accepts one connection on `listener` and answers each request head
        /// with the next of `responses`, then closes; the last head it read goes to `received`.
        static func serve(_ listener: Int32, _ responses: [String], received: Locked<String>? = nil) {
            Thread {
                let fd = accept(listener, nil, nil)
                for response in responses {
                    let text = Self.read(fd) { $0.contains("\r\n\r\n") }
                    received?.withLock { $0 = text }
                    Self.send(fd, response)
                }
                close(fd)
            }.start()
        }

        static func server(_ configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> ProxyServer {
            var configuration = ServerConfiguration()
            configuration.listenPort = 0
            configuration.loops = 1
            configure(&configuration)
            let server = ProxyServer(configuration: configuration)
            try server.start()
            return server
        }

        @Test func aRequestGoesToTheOriginAndItsResponseComesBackWithVia() throws {
            let origin = try Self.listen()
            defer { close(origin.fd) }
            let request = Locked<String>("")
            Self.serve(
                origin.fd, ["HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/\r\nContent-Length: 2\r\n\r\nok"],
                received: request)
            let server = try Self.server()
            defer { server.shutdown(deadline: 1) }
            let client = try Self.connect(server.boundPort)
            defer { close(client) }
            Self.send(
                client, "GET http://127.0.0.1:\(origin.port)/p HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n")
            let response = Self.read(client) { $0.hasSuffix("\r\n\r\nok") }
            #expect(
                response
                    == "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/\r\nContent-Length: 2\r\nVia: 1.1 cookie-proxy\r\n\r\nok"
            )
            #expect(
                request.withLock { $0 }
                    == "GET /p HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\nVia: 1.1 cookie-proxy\r\n\r\n")
            #expect(server.requests == 1)
        }

        /// The proxy's socket for the client connected from `client` (in this process: the descriptor whose peer is
        /// the client's own address), and whether TCP_NODELAY is on for it.
        static func serverSideNoDelay(of client: Int32) throws -> Bool {
            func port(_ fd: Int32, peer: Bool) -> Int? {
                var address = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let rc = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)
                    }
                }
                return rc == 0 && address.sin_family == sa_family_t(AF_INET)
                    ? Int(UInt16(bigEndian: address.sin_port)) : nil
            }
            let own = try #require(port(client, peer: false))
            let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
            let accepted = try #require(
                names.compactMap { Int32($0) }.first { $0 != client && port($0, peer: true) == own })
            var on: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            try #require(getsockopt(accepted, Int32(IPPROTO_TCP), TCP_NODELAY, &on, &length) == 0)
            return on != 0
        }

        /// TCP_NODELAY on a client's socket is set before its second write, not at accept: Linux's Nagle
        /// (Minshall's) never holds a connection's first write, so a one-response connection saves the syscall,
        /// and every later write goes out at once.
        @Test func noDelayIsSetBeforeAConnectionsSecondWrite() throws {
            let origin = try Self.listen()
            defer { close(origin.fd) }
            Self.serve(origin.fd, Array(repeating: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", count: 2))
            let server = try Self.server()
            defer { server.shutdown(deadline: 1) }
            let client = try Self.connect(server.boundPort)
            defer { close(client) }
            let request = "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n"
            Self.send(client, request)
            #expect(Self.read(client) { $0.hasSuffix("\r\n\r\nok") }.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(try Self.serverSideNoDelay(of: client) == false)
            Self.send(client, request)
            #expect(Self.read(client) { $0.hasSuffix("\r\n\r\nok") }.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(try Self.serverSideNoDelay(of: client) == true)
        }

        @Test func anUnreachableUpstreamIsA502NamingIt() throws {
            // A port that was just free: nothing listens on it.
            let closed = try Self.listen()
            close(closed.fd)
            let server = try Self.server()
            defer { server.shutdown(deadline: 1) }
            let client = try Self.connect(server.boundPort)
            defer { close(client) }
            Self.send(client, "GET http://127.0.0.1:\(closed.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = Self.read(client) { $0.hasSuffix("\n") && $0.contains("\r\n\r\n") }
            #expect(response.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"), "\(response)")
            #expect(response.contains("127.0.0.1:\(closed.port)"), "\(response)")
            #expect(server.unexpectedEventCount == 0)
        }

        @Test func aClientThatIsNotAdmittedGetsA403FromTheLoop() throws {
            let server = try Self.server { $0.maximumConnections = 0 }
            defer { server.shutdown(deadline: 1) }
            let client = try Self.connect(server.boundPort)
            defer { close(client) }
            let response = Self.read(client) { $0.hasSuffix("too many connections\n") }
            #expect(
                response
                    == "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\nVia: 1.1 cookie-proxy\r\nConnection: close\r\n\r\ntoo many connections\n"
            )
        }
    }
#endif
