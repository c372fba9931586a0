import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The slow and misbehaving peers of Fixtures/slowpeer.py (an upstream; its `END` lines say how each request body it
/// read ended).
final class SlowPeer: Sendable {
    let process: TestProcess
    let port: Int

    init(tls: TestCA? = nil) throws {
        process = try TestProcess(
            Paths.which("python3"),
            ["-u", Paths.fixtures + "/slowpeer.py", "upstream"] + (tls.map { [$0.cert, $0.key] } ?? []))
        port = Int(try process.waitForLine(startingWith: "PORT ").dropFirst(5))!
    }

    /// The `END` line of the request to `path`, once the upstream has stopped reading its body.
    func end(of path: String, timeout: Double = 10) throws -> String {
        try process.waitForLine(startingWith: "END \(path) ", timeout: timeout)
    }

    /// `slowpeer.py client`: a POST of `size` pseudo-random bytes (chunked when `seed` is odd) in random sizes with
    /// random pauses, the response read the same way. Its output line.
    static func client(
        proxyPort: Int, url: String, seed: Int, size: Int, responseSize: Int, mode: String = "forward",
        environment: [String: String]? = nil
    ) throws -> String {
        let result = try run(
            Paths.which("python3"),
            [
                Paths.fixtures + "/slowpeer.py", "client", "\(proxyPort)", url, "\(seed)", "\(size)", "\(responseSize)",
                mode,
            ], environment: environment, timeout: 120)
        return result.text.trimmingCharacters(in: .whitespacesAndNewlines) + result.stderr
    }

    /// "BYTES SHA256" of the pseudo-random bytes `seed` and `size` make (what the client sent, or the upstream).
    static func digest(seed: Int, size: Int) throws -> String {
        try run(Paths.which("python3"), [Paths.fixtures + "/slowpeer.py", "digest", "\(seed)", "\(size)"]).text
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Flow control and deadlines through the real binary with real slow peers (RFC 9112 §9): every byte of a large
/// upload or WebSocket frame arrives whatever the pace of either side, every phase has a deadline, and a request
/// cut short never reaches the upstream as if it were whole.
@Suite(.serialized) struct SlowPeerEndToEndTests {
    /// Reverse mode (`--reverse` to the peer) or the forward proxy, and the URL the client asks for.
    static func proxy(_ mode: String, _ peer: SlowPeer, _ extra: [String] = [], threads: Int = 2) throws -> Proxy {
        try Proxy(
            ["--quiet"] + (mode == "reverse" ? ["--reverse", "http://127.0.0.1:\(peer.port)"] : []) + extra,
            threads: threads)
    }

    /// An 8 MiB body (Content-Length when the seed is even, chunked when odd) to an upstream that reads 64 KiB every
    /// 10 ms: the proxy pauses reading from the client while the upstream is behind and resumes when it catches up.
    @Test(arguments: ["forward", "reverse"], [2, 3])
    func aLargeUploadToASlowReaderArrivesWhole(_ mode: String, _ seed: Int) throws {
        let peer = try SlowPeer()
        let proxy = try Self.proxy(mode, peer, threads: 1)
        let size = 8 << 20
        let line = try SlowPeer.client(
            proxyPort: proxy.port, url: "http://127.0.0.1:\(peer.port)/slow-read", seed: seed, size: size,
            responseSize: 0, mode: mode)
        #expect(line.hasPrefix("OK 200 "), "\(line)")
        #expect(try peer.end(of: "/slow-read") == "END /slow-read complete \(size)")
    }

    /// The property: random read and write sizes (1 byte to 1 MiB) and pauses on both sides, bodies up to 64 MiB
    /// both ways, plain, reverse and TLS on both sides (an intercepted CONNECT to an https upstream): every byte
    /// arrives, in order.
    @Test(arguments: [
        ("forward", 11, 64 << 20, 3_000_000), ("forward", 12, 5_000_000, 64 << 20), ("reverse", 13, 64 << 20, 1),
        ("reverse", 14, 1, 20_000_000), ("connect", 15, 24 << 20, 24 << 20), ("connect", 16, 7_000_001, 1234),
    ])
    func everyByteArrivesWhateverThePaceOfEitherSide(_ mode: String, _ seed: Int, _ size: Int, _ responseSize: Int)
        throws
    {
        let ca = mode == "connect" ? try TestCA() : nil
        defer { if let ca { try? FileManager.default.removeItem(atPath: ca.dir) } }
        let peer = try SlowPeer(tls: ca)
        let home = Proxy.defaultHome
        let proxy = try Self.proxy(
            mode, peer, ca.map { ["--intercept", "localhost", "--upstream-ca", $0.caCert] } ?? [])
        let startKiB = try #require(proxy.process.residentKiB)
        let host = mode == "connect" ? "localhost" : "127.0.0.1"
        let scheme = mode == "connect" ? "https" : "http"
        let line = try SlowPeer.client(
            proxyPort: proxy.port,
            url: "\(scheme)://\(host):\(peer.port)/random-read?seed=\(seed)&size=\(responseSize)",
            seed: seed, size: size, responseSize: responseSize, mode: mode,
            environment: ["CLIENT_CA": home + "/ca-cert.pem"])
        let sent = try SlowPeer.digest(seed: seed, size: size)
        let answered = try SlowPeer.digest(seed: seed + 1, size: responseSize)
        #expect(line == "OK 200 \(answered) \(sent)")
        #expect(try peer.end(of: "/random-read") == "END /random-read complete \(size)")
        // Backpressure bounds what one connection holds (about 256 KiB queued each way, plus a read and TLS
        // records), whatever the bodies' size: the proxy grows by a few MiB at most.
        let peakKiB = try #require(proxy.process.peakRSSKiB)
        #expect(peakKiB - startKiB < 8 * 1024, "grew from \(startKiB) KiB to a peak of \(peakKiB) KiB")
    }

    /// A real `websockets` echo server behind both modes: 16 MiB frames go up and come back whole.
    @Test(arguments: ["forward", "reverse"])
    func sixteenMebibyteWebSocketFramesCrossBothWays(_ mode: String) throws {
        let python = Paths.root + "/.build/test-python/bin/python"
        let echo = try TestProcess(python, ["-u", Paths.fixtures + "/wsecho.py", "server"])
        let echoPort = Int(try echo.waitForLine(startingWith: "PORT ").dropFirst(5))!
        let proxy = try Proxy(["--quiet"] + (mode == "reverse" ? ["--reverse", "http://127.0.0.1:\(echoPort)"] : []))
        for _ in 0..<3 {
            let result = try run(
                python,
                [Paths.fixtures + "/wsecho.py", "client", "\(proxy.port)", "\(echoPort)", mode, "\(16 << 20)", "3"],
                timeout: 120)
            #expect(result.text == "OK 3 16777216\n", "\(result.text) \(result.stderr)")
        }
    }

    /// An upstream that sends ten bytes of a 1,000-byte body and then nothing: after `--upstream-read-timeout` the
    /// client's connection closes (curl: "transfer closed with outstanding read data", exit 18), and the closing is
    /// noted with the exchange and counted in the exit message.
    @Test func aResponseBodyThatStopsArrivingEndsAfterTheUpstreamReadTimeout() throws {
        let peer = try SlowPeer()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("cp-slow-\(UUID().uuidString).jsonl")
            .path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let proxy = try Proxy(["--quiet", "--upstream-read-timeout", "1", "--log", log])
        let start = Date()
        let result = try curl(["-o", "/dev/null", "-x", proxy.url, "http://127.0.0.1:\(peer.port)/stall-body"])
        let waited = Date().timeIntervalSince(start)
        #expect(result.status == 18, "\(result.stderr)")
        #expect(waited >= 0.9 && waited < 5, "\(waited)")
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        let stderr = proxy.process.stderr
        #expect(
            stderr.contains(
                "upstream read timeout: GET http://127.0.0.1:\(peer.port)/stall-body (client 127.0.0.1): no byte from"
                    + " upstream 127.0.0.1:\(peer.port) for 1 s"), "\(stderr)")
        #expect(stderr.contains("exchanges closed early: 1 × upstream read timeout"), "\(stderr)")
        // And in the log, beside the exchange's records.
        let events = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["event"] as? String == "exchange-closed" }
        #expect(events.count == 1)
        #expect(events.first?["reason"] as? String == "upstream read timeout")
        #expect(events.first?["request"] as? String == "GET http://127.0.0.1:\(peer.port)/stall-body")
        // The client by the lifecycle's key, as every other record names it (on loopback: with its User-Agent).
        #expect((events.first?["client"] as? String)?.hasPrefix("127.0.0.1 curl/") == true, "\(events)")
    }

    /// Twenty clients pipeline requests for large responses and never read: after `--client-write-timeout` each is
    /// closed (with a reset: the unsent bytes are dropped), and a client that reads is served meanwhile.
    @Test func clientsThatNeverReadAreClosedAfterTheClientWriteTimeout() throws {
        let peer = try SlowPeer()
        let proxy = try Proxy(["--quiet", "--client-write-timeout", "1"])
        let request = Array(
            "GET http://127.0.0.1:\(peer.port)/big?size=4000000 HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\n\r\n".utf8)
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for _ in 0..<20 {
            let fd = try connectedLoopbackSocket(port: proxy.port, timeout: 10)
            var small: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            for _ in 0..<3 { sendAll(fd, request) }
            sockets.append(fd)
        }
        let served = try curl([
            "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.url, "http://127.0.0.1:\(peer.port)/big?size=1000",
        ])
        #expect(served.text == "200")
        usleep(3_500_000)
        for fd in sockets {
            // What was queued in the client's own buffer is there; then the reset (or an end) from the proxy.
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var ended = false
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n > 0 { continue }
                ended = n == 0 || errno == ECONNRESET
                break
            }
            #expect(ended, "a client that never read is still connected (errno \(errno))")
        }
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        #expect(proxy.process.stderr.contains("20 × client write timeout"), "\(proxy.process.stderr)")
    }

    /// RFC 9112 §9.6: a client may close its sending side after a whole request and still read the response.
    @Test(
        arguments: ["forward", "reverse"],
        ["Content-Length: 5\r\n\r\nhello", "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"])
    func aRequestFollowedByAHalfCloseIsAnswered(_ mode: String, _ body: String) throws {
        let peer = try SlowPeer()
        let proxy = try Self.proxy(mode, peer)
        let target = mode == "reverse" ? "/record" : "http://127.0.0.1:\(peer.port)/record"
        let fd = try connectedLoopbackSocket(port: proxy.port, timeout: 10)
        defer { close(fd) }
        sendAll(fd, Array("POST \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\n\(body)".utf8))
        shutdown(fd, Int32(SHUT_WR))
        let reply = String(decoding: receive(fd) { _ in false }, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n") && reply.hasSuffix("\r\n\r\n5"), "\(reply)")
        #expect(try peer.end(of: "/record") == "END /record complete 5")
    }

    /// A client that goes mid-body (an orderly close or a reset): the upstream sees a reset, never the end of a
    /// body it could take as whole. Counted in the exit message.
    @Test(arguments: ["forward", "reverse"], [false, true])
    func aClientThatAbortsMidBodyResetsTheUpstream(_ mode: String, _ clientResets: Bool) throws {
        let peer = try SlowPeer()
        let proxy = try Self.proxy(mode, peer)
        let target = mode == "reverse" ? "/record" : "http://127.0.0.1:\(peer.port)/record"
        let fd = try connectedLoopbackSocket(port: proxy.port, timeout: 10)
        sendAll(
            fd,
            Array("POST \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\nContent-Length: 100\r\n\r\nhello".utf8))
        usleep(300_000)
        if clientResets {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        close(fd)
        #expect(try peer.end(of: "/record") == "END /record reset 5")
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        #expect(
            proxy.process.stderr.contains("1 × request unfinished (the upstream got a reset)"),
            "\(proxy.process.stderr)")
    }

    /// RFC 9112 §6.3 rule 4: chunked not last is read until the server closes, and relayed so, byte for byte.
    @Test func aResponseWhoseLastCodingIsNotChunkedIsRelayedUntilTheUpstreamCloses() throws {
        let peer = try SlowPeer()
        let proxy = try Proxy(["--quiet"])
        let reply = try RawClient.exchange(
            port: proxy.port,
            "GET http://127.0.0.1:\(peer.port)/chunked-deflate HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\n\r\n")
        #expect(
            reply.hasPrefix("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, deflate\r\nConnection: close\r\n"),
            "\(reply)")
        let body = reply.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        #expect(body == String(repeating: "not-really-deflate-", count: 100) + "end")
    }

    /// RFC 9112 §3: a request-target longer than the proxy parses is a 414, not a 431.
    @Test func aRequestTargetOverTheHeadLimitIsA414() throws {
        let recorder = try Recorder()
        let proxy = try Proxy(["--quiet"])
        let target = "http://127.0.0.1:\(recorder.port)/" + String(repeating: "a", count: 1 << 20)
        let reply = try RawClient.exchange(port: proxy.port, "GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(reply.hasPrefix("HTTP/1.1 414 URI Too Long\r\n"), "\(String(reply.prefix(200)))")
        let fields =
            "GET http://127.0.0.1:\(recorder.port)/ HTTP/1.1\r\nX: \(String(repeating: "b", count: 70_000))\r\n\r\n"
        #expect(try RawClient.exchange(port: proxy.port, fields).hasPrefix("HTTP/1.1 431 "))
        #expect(recorder.connections.allSatisfy { $0.isEmpty })
    }

    /// A second proxy on the port one already listens on is refused: SO_REUSEPORT would have it silently take half
    /// of the first one's connections.
    @Test func aSecondProxyOnAPortInUseIsRefused() throws {
        let first = try Proxy(["--quiet"])
        let second = try run(Paths.binary, ["run", "--listen", "127.0.0.1:\(first.port)", "--quiet"], timeout: 20)
        #expect(second.status == 1)
        #expect(
            second.stderr.contains("cannot listen on 127.0.0.1:\(first.port): the address is in use"),
            "\(second.stderr)")
    }
}
