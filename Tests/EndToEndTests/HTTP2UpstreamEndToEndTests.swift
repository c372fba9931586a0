import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// HTTP/2 towards upstreams, through the real binary: an origin without TLS named `h2c://` in `--reverse`, and an
/// https origin that chooses `h2` by ALPN when the client speaks HTTP/2; real peers (hypercorn, grpcio).
@Suite(.serialized) struct HTTP2UpstreamEndToEndTests {
    /// Fixtures/h2origin.py under hypercorn, on a free port.
    final class H2Origin: Sendable {
        let process: TestProcess
        let port: Int
        init() throws {
            port = try HTTP2EndToEndTests.freePort()
            process = try TestProcess(
                HTTP2EndToEndTests.python, ["-u", Paths.fixtures + "/h2origin.py", "\(port)"])
            _ = try process.waitForLine(startingWith: "PORT ")
            #expect(waitUntilListening(port: port))
        }
    }

    /// Fixtures/grpc_peer.py's server (TLS with the test CA's leaf when given).
    final class GRPCServer: Sendable {
        let process: TestProcess
        let port: Int
        init(tls: TestCA? = nil) throws {
            process = try TestProcess(
                HTTP2EndToEndTests.python,
                ["-u", Paths.fixtures + "/grpc_peer.py", "server"] + (tls.map { [$0.cert, $0.key] } ?? []))
            port = Int(try process.waitForLine(startingWith: "PORT ").dropFirst(5))!
        }
    }

    /// Fixtures/hpack_bomb.py's origin: GET /bomb is answered with the HPACK bomb as its head.
    final class BombOrigin: Sendable {
        let process: TestProcess
        let port: Int
        init() throws {
            process = try TestProcess(
                HTTP2EndToEndTests.python, ["-u", Paths.fixtures + "/hpack_bomb.py", "origin", "5"])
            port = Int(try process.waitForLine(startingWith: "PORT ").dropFirst(5))!
        }
    }

    static let lockRule = "rule \"lock\" {\n    cookie a sid\n    httponly\n    samesite lax\n}\n"

    /// `--reverse h2c://`: an HTTP/1.1 client and an HTTP/2 one reach an origin that speaks HTTP/2 only with prior
    /// knowledge; the origin sees HTTP/2, its cookies are rewritten, and 3 MB arrive whole each way.
    @Test(arguments: [false, true])
    func clientsOfBothVersionsReachAnH2cOrigin(_ http2Client: Bool) throws {
        let home = NSTemporaryDirectory() + "cp-h2up-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        try Self.lockRule.write(toFile: home + "/lock.rules", atomically: true, encoding: .utf8)
        let origin = try H2Origin()
        let proxy = try Proxy([
            "--quiet", "--reverse", "h2c://127.0.0.1:\(origin.port)", "--rules", home + "/lock.rules",
        ])
        let version = http2Client ? ["--http2-prior-knowledge"] : ["--http1.1"]
        let cookies = try curl(version + ["-D", "-", "\(proxy.url)/cookies"])
        #expect(cookies.status == 0, "\(cookies.stderr)")
        #expect(cookies.text.hasSuffix("protocol 2"), "the origin saw: \(cookies.text)")
        #expect(cookies.text.contains("set-cookie: a=1; Path=/; HttpOnly; SameSite=Lax\r\n"), "\(cookies.text)")
        #expect(cookies.text.contains("set-cookie: b=2; Max-Age=60\r\n"))
        let file = home + "/large.bin"
        let download = try curl(version + ["-o", file, "\(proxy.url)/large=3000000", "-w", "%{size_download}"])
        #expect(download.text == "3000000", "\(download.stderr)")
        let expected = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == expected)
        let upload = try curl(version + ["--data-binary", "@" + file, "-o", home + "/echo.bin", "\(proxy.url)/echo"])
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: home + "/echo.bin")) == expected)
    }

    /// Exchanges to an HTTP/2 origin at once share one connection, a stream each (RFC 9113 §5): ten requests in
    /// parallel, each held 0.3 s by the origin, all come on the connection the first request opened, from one
    /// HTTP/2 client's streams (Python's h2) and from ten HTTP/1.1 connections (curl --parallel). One event loop:
    /// each loop keeps its own connection per origin.
    @Test func exchangesAtOnceShareOneUpstreamConnection() throws {
        let origin = try H2Origin()
        let proxy = try Proxy(["--quiet", "--reverse", "h2c://127.0.0.1:\(origin.port)"], threads: 1)
        let first = try curl(["--http2-prior-knowledge", "\(proxy.url)/peer"])
        let streams = try run(
            HTTP2EndToEndTests.python,
            [Paths.fixtures + "/h2raw.py", "\(proxy.port)", "--parallel", "10", "/peer"], timeout: 60)
        let ports = try JSONSerialization.jsonObject(with: streams.stdout) as? [String] ?? []
        #expect(ports.count == 10, "\(streams.text) \(streams.stderr)")
        #expect(Set(ports) == [first.text], "upstream connections: \(Set(ports)) after \(first.text)")
        let dir = NSTemporaryDirectory() + "cp-h2share-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let transfers = (0..<10).flatMap { ["-o", "\(dir)/\($0)", "\(proxy.url)/peer?\($0)"] }
        let http1 = try curl(["--http1.1", "--parallel", "--parallel-max", "10"] + transfers)
        #expect(http1.status == 0, "\(http1.stderr)")
        let http1Ports = try (0..<10).map { try String(contentsOfFile: "\(dir)/\($0)", encoding: .utf8) }
        #expect(Set(http1Ports) == [first.text], "\(http1Ports)")
    }

    /// A gRPC call (grpcio, which speaks only HTTP/2) round trips through the proxy: in reverse mode to a
    /// plaintext server (`h2c://`), and through an intercepted CONNECT (`--http2` left at `fallback`: the client
    /// offers only h2) to a TLS server that chooses h2 by ALPN. The reply, the cookie in its initial metadata
    /// (rewritten by the rules) and its trailers (grpc-status, x-trailer) all arrive; the log says both sides spoke
    /// HTTP/2.
    @Test(arguments: ["reverse", "intercepted"])
    func aGRPCCallRoundTripsWithItsCookieRewrittenAndItsTrailers(_ mode: String) throws {
        let (home, ca) = try (InterceptionEndToEndTests.home(), TestCA())
        defer { InterceptionEndToEndTests.remove(home, ca) }
        try Self.lockRule.write(toFile: home + "/lock.rules", atomically: true, encoding: .utf8)
        let log = home + "/log.jsonl"
        let common = ["--quiet", "--rules", home + "/lock.rules", "--log", log]
        let server = try GRPCServer(tls: mode == "reverse" ? nil : ca)
        let result: CommandResult
        let proxy: Proxy
        if mode == "reverse" {
            proxy = try Proxy(common + ["--reverse", "h2c://127.0.0.1:\(server.port)"])
            result = try run(
                HTTP2EndToEndTests.python,
                [Paths.fixtures + "/grpc_peer.py", "client", "127.0.0.1:\(proxy.port)"], timeout: 60)
        } else {
            proxy = try Proxy(
                common + ["--intercept", "localhost", "--upstream-ca", ca.caCert],
                environment: ["COOKIE_PROXY_HOME": home])
            result = try run(
                HTTP2EndToEndTests.python,
                [Paths.fixtures + "/grpc_peer.py", "client", "localhost:\(server.port)", home + "/ca-cert.pem"],
                environment: ["grpc_proxy": proxy.url, "no_grpc_proxy": "", "no_proxy": ""], timeout: 60)
        }
        let reply = try #require(
            try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any],
            "\(result.text) \(result.stderr)")
        #expect(reply["code"] as? String == "OK", "\(reply)")
        #expect(reply["reply"] as? String == "echo:hello")
        #expect(reply["set-cookie"] as? String == "sid=1; Path=/; HttpOnly; SameSite=Lax", "\(reply)")
        #expect(reply["trailer"] as? String == "done")
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        let record = try String(contentsOfFile: log, encoding: .utf8)
        #expect(record.contains("\"method\":\"POST\""), "\(record)")
        #expect(
            record.contains("/test.Echo/Say\",\"status\":200,\"protocol\":\"HTTP/2\",\"upstreamProtocol\":\"HTTP/2\""),
            "\(record)")
    }

    /// gRPC's failures keep their status through the proxy, in both modes: a call that fails before any message
    /// (a Trailers-Only response: one HEADERS frame with END_STREAM) keeps its code, message and trailing metadata,
    /// binary metadata byte for byte; one that fails after two messages keeps the messages and its status; a
    /// deadline shorter than the server's answer expires as the client's DEADLINE_EXCEEDED.
    @Test(
        arguments: ["reverse", "intercepted"],
        [
            (
                "NotFound",
                [
                    "code": "NOT_FOUND", "details": "no such echo", "reply": "", "trailer": "done",
                    "detail-bin": "0001feff",
                ]
            ),
            ("Stream", ["code": "PERMISSION_DENIED", "details": "after two", "reply": "one|two", "trailer": "done"]),
            ("Slow", ["code": "DEADLINE_EXCEEDED"]),
        ])
    func aGRPCFailureKeepsItsStatusAndMetadata(_ mode: String, _ call: (method: String, expected: [String: String]))
        throws
    {
        let (home, ca) = try (InterceptionEndToEndTests.home(), TestCA())
        defer { InterceptionEndToEndTests.remove(home, ca) }
        let server = try GRPCServer(tls: mode == "reverse" ? nil : ca)
        let options = ["--method", call.method, "--timeout", call.method == "Slow" ? "1" : "20"]
        let result: CommandResult
        if mode == "reverse" {
            let proxy = try Proxy(["--quiet", "--log", "none", "--reverse", "h2c://127.0.0.1:\(server.port)"])
            result = try run(
                HTTP2EndToEndTests.python,
                [Paths.fixtures + "/grpc_peer.py", "client", "127.0.0.1:\(proxy.port)"] + options, timeout: 60)
        } else {
            let proxy = try Proxy(
                ["--quiet", "--log", "none", "--intercept", "localhost", "--upstream-ca", ca.caCert],
                environment: ["COOKIE_PROXY_HOME": home])
            result = try run(
                HTTP2EndToEndTests.python,
                [Paths.fixtures + "/grpc_peer.py", "client", "localhost:\(server.port)", home + "/ca-cert.pem"]
                    + options,
                environment: ["grpc_proxy": proxy.url, "no_grpc_proxy": "", "no_proxy": ""], timeout: 60)
        }
        let reply = try #require(
            try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.text) \(result.stderr)")
        for (key, value) in call.expected {
            #expect(reply[key] as? String == value, "\(key) in \(reply)")
        }
    }

    /// The HPACK bomb (RFC 7541 §7.3, RFC 9113 §10.5.1) through the real listener, from a client and from an h2c
    /// origin: 80 KB of frames that decode to over 300 MB are refused after the head limit's 64 KiB — the client's
    /// stream answered `431`, the origin's response a `502` to HTTP/2 and HTTP/1.1 clients — with the proxy's
    /// peak memory up by at most 16 MiB, and the next request is served.
    @Test(arguments: ["request", "response"])
    func anHPACKBombIsRefusedInBoundedMemory(_ direction: String) throws {
        let origin = try BombOrigin()
        let proxy = try Proxy(["--quiet", "--log", "none", "--reverse", "h2c://127.0.0.1:\(origin.port)"], threads: 1)
        let before = try #require(proxy.process.peakRSSKiB)
        if direction == "request" {
            let result = try run(
                HTTP2EndToEndTests.python, [Paths.fixtures + "/hpack_bomb.py", "client", "\(proxy.port)", "5"],
                timeout: 60)
            #expect(result.text == "{\"status\": 431}\n", "\(result.text) \(result.stderr)")
        } else {
            for version in ["--http2-prior-knowledge", "--http1.1"] {
                let result = try curl([version, "\(proxy.url)/bomb"])
                #expect(
                    result.text.hasPrefix(
                        "upstream 127.0.0.1:\(origin.port) failed: HTTP/2: the upstream's response header list is over 65536 bytes"
                    ), "\(result.text)")
            }
        }
        let after = try #require(proxy.process.peakRSSKiB)
        #expect(after - before < 16 * 1024, "peak RSS grew by \((after - before) / 1024) MiB")
        let next = try curl(["--http2-prior-knowledge", "\(proxy.url)/next"])
        #expect(next.text == "fine", "\(next.stderr)")
    }
}
