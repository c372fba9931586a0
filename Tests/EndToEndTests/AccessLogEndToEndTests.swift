import Foundation
import TestSupport
import Testing

/// `run --access-log -`: the access log on standard output, from the binary as a user starts it.
@Suite struct AccessLogEndToEndTests {
    /// With the transformation log off, `--access-log -` writes a line per request to stdout (here JSON), which a
    /// pipe reads as the requests happen.
    @Test func theAccessLogOnStdoutHasALinePerRequest() throws {
        let upstream = try Upstream()
        defer { upstream.process.signal(SIGTERM) }
        let proxy = try Proxy([
            "--quiet", "--log", "none", "--access-log", "-", "--access-log-format", "json", "--reverse", upstream.base,
        ])
        defer { proxy.process.signal(SIGTERM) }
        let result = try curl(["-o", "/dev/null", "-w", "%{http_code}", proxy.url + "/missing"])
        #expect(result.text == "404")
        let line = try proxy.process.waitForLine(startingWith: "{\"ts\":")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(json["status"] as? Int == 404 && json["ending"] as? String == "relayed", "\(json)")
        #expect((json["request"] as? [String: Any])?["uri"] as? String == "/missing", "\(json)")
    }

    /// Two logs on one stdout would interleave: `--access-log -` with the transformation log on stdout is refused
    /// with what to do, before anything listens.
    @Test func theAccessLogOnStdoutBesideTheLogOnStdoutIsRefused() throws {
        let result = try run(
            Paths.binary, ["run", "--listen", "127.0.0.1:0", "--access-log", "-"],
            environment: ["COOKIE_PROXY_HOME": Proxy.defaultHome], timeout: 30)
        #expect(result.status == 2)
        #expect(result.stderr.contains("--access-log -") && result.stderr.contains("--log"), "\(result.stderr)")
    }

    /// A line for everything that got an answer (nginx's and Caddy's rule), each kind with what of its request was
    /// read: a CONNECT tunnel (its authority, User-Agent, bytes each way, duration), an intercepted CONNECT's 200, a
    /// malformed request's 400, the device page (answered, from no upstream), a client over `--max-connections`
    /// (503), and plain HTTP to the TLS listener (400).
    @Test func everyAnswerHasALineWithWhatWasRead() throws {
        let upstream = try Upstream()
        defer { upstream.process.signal(SIGTERM) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-access-kinds-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let proxy = try Proxy(
            [
                "--quiet", "--log", "none", "--access-log", dir + "/access.jsonl", "--access-log-format", "json",
                "--intercept", "intercepted.test", "--max-connections", "2",
                "--listen", "127.0.0.1:0", "--listen", "https://127.0.0.1:0",
            ],
            environment: ["COOKIE_PROXY_HOME": dir + "/home"])
        let tlsPort = try #require(
            proxy.process.stderr.split(separator: "\n").first { $0.contains("listening on https://127.0.0.1:") }
                .flatMap { Int($0.split(separator: ":").last ?? "") })
        // A tunnel: curl's CONNECT, then a request inside it.
        let tunnelled = try curl(["-s", "-p", "-A", "tunnel-agent/1", "-x", proxy.url, "\(upstream.base)/cookies/1"])
        #expect(tunnelled.text == "cookies\n")
        // An intercepted CONNECT: the proxy's own 200 (the TLS inside fails: the test's curl trusts no CA).
        _ = try curl(["-s", "-A", "intercept-agent/1", "-x", proxy.url, "https://intercepted.test/"])
        // A malformed head: a 400 with what was read of it.
        let malformed = try RawClient.exchange(
            port: proxy.port, "GET /bad HTTP/1.1\r\nHost: a.test\r\nUser-Agent: malformed-agent/1\r\nbad line\r\n\r\n")
        #expect(malformed.hasPrefix("HTTP/1.1 400"))
        // The device page, through the proxy.
        let page = try curl([
            "-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.url, "http://cookie-proxy.local/",
        ])
        #expect(page.text == "200")
        // Plain HTTP to the TLS listener.
        let plain = try RawClient.exchange(
            port: tlsPort, "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: plain-agent/1\r\n\r\n")
        #expect(plain.hasPrefix("HTTP/1.1 400"))
        // Over --max-connections: two held open (each has had an answer: the proxy has taken and counts it), the
        // third refused at accept.
        let held = try (0..<2).map { _ in
            let fd = try connectedLoopbackSocket(port: proxy.port)
            sendAll(fd, Array("GET \(upstream.base)/cookies/held HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            _ = receive(fd) { String(decoding: $0, as: UTF8.self).contains("cookies\n") }
            return fd
        }
        let third = try connectedLoopbackSocket(port: proxy.port)
        let refused = String(decoding: receive(third) { _ in false }, as: UTF8.self)
        #expect(refused.hasPrefix("HTTP/1.1 503"), "\(refused)")
        for fd in held + [third] { close(fd) }
        usleep(500_000)
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit(timeout: 20)

        let lines = try String(contentsOfFile: dir + "/access.jsonl", encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        func request(_ line: [String: Any]) -> [String: Any] { line["request"] as? [String: Any] ?? [:] }
        func agent(_ line: [String: Any]) -> String? {
            ((request(line)["headers"] as? [String: [String]])?["User-Agent"])?.first
        }
        let tunnel = try #require(
            lines.first { agent($0) == "tunnel-agent/1" && request($0)["method"] as? String == "CONNECT" }, "\(lines)")
        #expect(request(tunnel)["uri"] as? String == "127.0.0.1:\(upstream.port)", "\(tunnel)")
        #expect(tunnel["ending"] as? String == "tunnel" && tunnel["status"] as? Int == 200, "\(tunnel)")
        #expect((tunnel["bytes_read"] as? Int ?? 0) > 50 && (tunnel["size"] as? Int ?? 0) > 50, "\(tunnel)")
        #expect((tunnel["duration"] as? Double ?? -1) >= 0)
        let intercepted = try #require(lines.first { agent($0) == "intercept-agent/1" }, "\(lines)")
        #expect(request(intercepted)["method"] as? String == "CONNECT" && intercepted["status"] as? Int == 200)
        #expect(request(intercepted)["uri"] as? String == "intercepted.test:443", "\(intercepted)")
        let bad = try #require(lines.first { agent($0) == "malformed-agent/1" }, "\(lines)")
        #expect(
            bad["status"] as? Int == 400 && request(bad)["uri"] as? String == "/bad"
                && request(bad)["host"] as? String == "a.test")
        let device = try #require(lines.first { request($0)["host"] as? String == "cookie-proxy.local" }, "\(lines)")
        #expect(device["ending"] as? String == "answered" && device["upstream"] is NSNull, "\(device)")
        #expect(device["upstream_request"] is NSNull, "\(device)")
        let plainLine = try #require(lines.first { agent($0) == "plain-agent/1" }, "\(lines)")
        #expect(plainLine["status"] as? Int == 400 && request(plainLine)["uri"] as? String == "/x", "\(plainLine)")
        #expect(lines.contains { $0["status"] as? Int == 503 && $0["ending"] as? String == "answered" }, "\(lines)")
    }

    /// The combined format's tunnel line names its target and User-Agent and counts what came back through it.
    @Test func aTunnelsCombinedLineNamesItsTargetAndAgent() throws {
        let upstream = try Upstream()
        defer { upstream.process.signal(SIGTERM) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-access-tunnel-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let proxy = try Proxy(["--quiet", "--log", "none", "--access-log", dir + "/access.log"])
        _ = try curl(["-s", "-p", "-A", "tunnel-agent/2", "-x", proxy.url, "\(upstream.base)/cookies/1"])
        usleep(300_000)
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit(timeout: 20)
        let log = try String(contentsOfFile: dir + "/access.log", encoding: .utf8)
        let line = try #require(log.split(separator: "\n").first { $0.contains("CONNECT") }, "\(log)")
        #expect(line.contains("\"CONNECT 127.0.0.1:\(upstream.port) HTTP/1.1\" 200 "), "\(line)")
        #expect(line.hasSuffix("\"-\" \"tunnel-agent/2\""), "\(line)")
        #expect(!line.contains("\" 200 - "), "\(line)")
    }
}
