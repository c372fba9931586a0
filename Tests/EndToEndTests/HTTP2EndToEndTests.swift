import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// HTTP/2 with clients through the real binary (RFC 9113): h2c with prior knowledge on a `--reverse` listener, h2
/// by ALPN on intercepted TLS (`--http2`), real clients (curl, nghttp, Python's h2 sending exactly what it is
/// given), a real upstream speaking HTTP/1.1.
@Suite(.serialized) struct HTTP2EndToEndTests {
    static let python = Paths.root + "/.build/test-python/bin/python"

    /// Fixtures/h2raw.py: requests on one h2c connection, one JSON result per request.
    static func raw(port: Int, _ cases: [[String: Any]]) throws -> [[String: Any]] {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: cases), as: UTF8.self)
        let result = try run(python, [Paths.fixtures + "/h2raw.py", "\(port)", json], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        return result.text.split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
    }

    static func get(_ path: String, _ extra: [[String]] = []) -> [String: Any] {
        [
            "headers": [[":method", "GET"], [":scheme", "http"], [":path", path], [":authority", "127.0.0.1"]] + extra
        ]
    }

    static func setCookies(_ headers: String) -> [String] {
        headers.split(separator: "\r\n").compactMap { line in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "set-cookie" else { return nil }
            return String(parts[1].drop(while: { $0 == " " }))
        }
    }

    /// The log's records without what differs between two runs of one exchange (time, request id, protocol, the
    /// proxy's port in the URL).
    static func records(_ log: String) -> [String] {
        log.split(separator: "\n").map { line in
            guard var object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return String(line)
            }
            // The URL names the proxy's port (a reverse proxy is the origin to its client): one per run. The client
            // is the address and the User-Agent's product (curl or nghttp2): only the address is compared.
            for key in ["time", "requestId", "protocol", "url"] { object[key] = nil }
            object["client"] = (object["client"] as? String)?.split(separator: " ").first.map(String.init)
            return String(
                decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        }
    }

    /// One scenario, over HTTP/1.1 and then over h2c with each client: the same Set-Cookie lines reach the client,
    /// in order, each its own field; the log's records are the same but for `"protocol":"HTTP/2"`.
    @Test(arguments: ["curl", "nghttp"])
    func h2cThroughAReverseListenerRewritesAndLogsAsHTTP1Does(_ client: String) throws {
        let home = NSTemporaryDirectory() + "cp-h2-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let rules = home + "/r.rules"
        try "rule \"lock a\" {\n    cookie a\n    httponly\n    samesite lax\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        func session(http2: Bool) throws -> (cookies: [String], log: [String], body: String) {
            let log = home + "/\(http2 ? "h2" : "h1").jsonl"
            let proxy = try Proxy(["--quiet", "--reverse", upstream.base, "--rules", rules, "--log", log])
            let url = "http://127.0.0.1:\(proxy.port)/cookies"
            let result: CommandResult
            if !http2 {
                result = try curl(["-D", "-", url])
            } else if client == "curl" {
                result = try curl(["--http2-prior-knowledge", "-D", "-", url, "-w", "\nVERSION %{http_version}"])
                #expect(result.text.hasSuffix("VERSION 2"), "\(result.text)")
            } else {
                result = try run(Paths.which("nghttp"), ["-v", url])
            }
            #expect(result.status == 0, "\(result.stderr)")
            proxy.process.signal(SIGTERM)
            _ = proxy.process.waitForExit()
            let text = result.text
            let cookies =
                client == "nghttp" && http2
                ? text.split(separator: "\n").compactMap { line -> String? in
                    guard let r = line.range(of: "set-cookie: ") else { return nil }
                    return String(line[r.upperBound...])
                }
                : Self.setCookies(text)
            return (cookies, Self.records(try String(contentsOfFile: log, encoding: .utf8)), text)
        }
        let h1 = try session(http2: false)
        let h2 = try session(http2: true)
        #expect(
            h1.cookies.count == 6
                && h1.cookies.first == "a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Path=/; HttpOnly; SameSite=Lax")
        #expect(h2.cookies == h1.cookies)
        #expect(h2.log == h1.log)
        #expect(h2.log.count == 2)  // the two `a` lines: the log has the cookies the rules changed
        let raw = try String(contentsOfFile: home + "/h2.jsonl", encoding: .utf8)
        #expect(raw.split(separator: "\n").allSatisfy { $0.contains(",\"status\":200,\"protocol\":\"HTTP/2\",") })
        #expect(!(try String(contentsOfFile: home + "/h1.jsonl", encoding: .utf8)).contains("\"protocol\""))
    }

    /// The inspector's HAR says which protocol the client spoke (`httpVersion`), HTTP/2 for a stream and HTTP/1.1
    /// for the same request over HTTP/1.1.
    @Test func harSaysWhichProtocolTheClientSpoke() throws {
        let home = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let upstream = try Upstream()
        let proxy = try Proxy(["--reverse", upstream.base], environment: ["COOKIE_PROXY_HOME": home])
        let ui = try InspectorEndToEndTests.UI(proxy)
        #expect(try curl(["--http2-prior-knowledge", "-o", "/dev/null", "\(proxy.url)/cookies?h2"]).status == 0)
        #expect(try curl(["--http1.1", "-o", "/dev/null", "\(proxy.url)/cookies?h1"]).status == 0)
        let har = try ui.get("/har", ["Authorization: Bearer \(ui.token)"])
        let log = try #require(
            (try JSONSerialization.jsonObject(with: Data(har.body.utf8)) as? [String: Any])?["log"] as? [String: Any])
        let entries = try #require(log["entries"] as? [[String: Any]])
        var versions: [String: [String]] = [:]
        for entry in entries {
            let request = entry["request"] as? [String: Any] ?? [:]
            let response = entry["response"] as? [String: Any] ?? [:]
            let url = request["url"] as? String ?? ""
            versions[String(url.suffix(2))] = [request["httpVersion"], response["httpVersion"]].map {
                $0 as? String ?? ""
            }
        }
        #expect(versions == ["h2": ["HTTP/2", "HTTP/2"], "h1": ["HTTP/1.1", "HTTP/1.1"]], "\(versions)")
        // The inspector's own view says what each side spoke.
        let rows = try #require(try ui.json("/api/exchanges") as? [[String: Any]])
        let sides = rows.map { "\($0["protocol"] ?? "") → \($0["upstreamProtocol"] ?? "")" }.sorted()
        #expect(sides == ["HTTP/1.1 → HTTP/1.1", "HTTP/2 → HTTP/1.1"], "\(rows)")
    }

    /// RFC 9113 §8.2.3: the client may split `cookie` into crumbs; they are one field, joined with "; ", before the
    /// rules, the log and the HTTP/1.1 upstream (which reads one Cookie line).
    @Test func cookieCrumbsReachTheUpstreamAsOneField() throws {
        let upstream = try Upstream()
        let proxy = try Proxy(["--quiet", "--reverse", upstream.base])
        let results = try Self.raw(
            port: proxy.port,
            [Self.get("/read", [["cookie", "a=1"], ["x-between", "1"], ["cookie", "b=2"], ["cookie", "c=\"3\""]])])
        #expect(results.first?["status"] as? Int == 200, "\(results)")
        #expect((results.first?["body"] as? String)?.contains("COOKIE[a=1; b=2; c=\"3\"]") == true, "\(results)")
    }

    /// RFC 9113 §8.1.1, §8.2.1, §8.2.2, §8.3.1: a request the translation to HTTP/1.1 could read two ways, or that
    /// is no HTTP/2 request at all, is reset and nothing of it reaches the upstream.
    @Test(arguments: [
        ("uppercase-name", [["X-Upper", "1"]]),
        ("cr-in-value", [["x-bad", "a\rb"]]),
        ("lf-in-value", [["x-bad", "a\nX-Injected: 1"]]),
        ("nul-in-value", [["x-bad", "a\u{0}b"]]),
        ("connection", [["connection", "close"]]),
        ("keep-alive", [["keep-alive", "timeout=5"]]),
        ("proxy-connection", [["proxy-connection", "keep-alive"]]),
        ("upgrade", [["upgrade", "websocket"]]),
        ("transfer-encoding", [["transfer-encoding", "chunked"]]),
        ("te-gzip", [["te", "gzip"]]),
        ("path-twice", [[":path", "/again"]]),
        ("host-disagrees", [["host", "evil.example"]]),
        ("pseudo-after-regular", [["x-first", "1"], [":scheme", "https"]]),
        ("unknown-pseudo", [[":unknown", "1"]]),
        ("space-in-name", [["x bad", "1"]]),
    ])
    func malformedRequestsAreResetBeforeTheUpstream(_ name: String, _ extra: [[String]]) throws {
        let upstream = try Upstream(environment: ["UPSTREAM_LOG": "1"])
        let proxy = try Proxy(["--quiet", "--reverse", upstream.base])
        let results = try Self.raw(
            port: proxy.port, [Self.get("/read/refused-\(name)", extra), Self.get("/read/after-\(name)")])
        #expect(results.first?["reset"] as? Int == 1, "\(name): \(results)")  // PROTOCOL_ERROR
        // The connection lives on: the next stream is answered.
        #expect(results.last?["status"] as? Int == 200, "\(name): \(results)")
        _ = try upstream.process.waitForLine(startingWith: "REQ GET /read/after-\(name)")
        #expect(!upstream.process.stdout.contains("/refused-"), "\(upstream.process.stdout)")
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        #expect(proxy.process.stderr.contains("HTTP/2: stream 1 from 127.0.0.1 refused"), "\(proxy.process.stderr)")
    }

    /// A `content-length` the DATA does not match (RFC 9113 §8.1.1) is found only as the body arrives: the stream is
    /// reset and the upstream, which may have the head, never gets a whole request (its connection is reset).
    @Test(arguments: [("3", "hello"), ("9", "hello")])
    func aContentLengthTheDataDisagreesWithNeverCompletesUpstream(_ length: String, _ data: String) throws {
        let upstream = try Upstream(environment: ["UPSTREAM_LOG": "1"])
        let proxy = try Proxy(["--quiet", "--reverse", upstream.base])
        let post: [String: Any] = [
            "headers": [
                [":method", "POST"], [":scheme", "http"], [":path", "/echo-\(length)"], [":authority", "127.0.0.1"],
                ["content-length", length],
            ],
            "data": data,
        ]
        let results = try Self.raw(port: proxy.port, [post, Self.get("/read/after")])
        #expect(results.first?["reset"] != nil, "\(results)")
        #expect(results.last?["status"] as? Int == 200, "\(results)")
        _ = try upstream.process.waitForLine(startingWith: "DONE GET /read/after")
        #expect(!upstream.process.stdout.contains("DONE POST"), "\(upstream.process.stdout)")
    }

    /// Extended CONNECT (RFC 8441) is refused cleanly: SETTINGS_ENABLE_CONNECT_PROTOCOL is never sent, so a
    /// `:protocol` request is malformed; plain CONNECT gets a 501 that says why.
    @Test func connectOverHTTP2IsRefusedWithAReason() throws {
        let upstream = try Upstream(environment: ["UPSTREAM_LOG": "1"])
        let proxy = try Proxy(["--quiet", "--reverse", upstream.base])
        let results = try Self.raw(
            port: proxy.port,
            [
                [
                    "headers": [
                        [":method", "CONNECT"], [":protocol", "websocket"], [":scheme", "http"], [":path", "/ws"],
                        [":authority", "127.0.0.1"],
                    ]
                ],
                ["headers": [[":method", "CONNECT"], [":authority", "127.0.0.1:\(upstream.port)"]]],
            ])
        #expect(results.first?["reset"] as? Int == 1, "\(results)")
        #expect(results.last?["status"] as? Int == 501, "\(results)")
        #expect((results.last?["body"] as? String)?.contains("CONNECT over HTTP/2 is not supported") == true)
        #expect(!upstream.process.stdout.contains("REQ"))
    }

    /// Streams are independent: an upstream that fails part way resets its stream only, an unreachable one is a
    /// 502 naming it, and the connection goes on serving.
    @Test func aFailingUpstreamResetsOnlyItsStream() throws {
        let upstream = try Upstream()
        let proxy = try Proxy(["--quiet", "--reverse", upstream.base])
        let results = try Self.raw(
            port: proxy.port, [Self.get("/truncated"), Self.get("/until-close"), Self.get("/chunked")])
        #expect(results.count == 3, "\(results)")
        #expect(results[0]["reset"] as? Int == 2, "\(results)")  // INTERNAL_ERROR
        #expect(results[1]["status"] as? Int == 200 && results[1]["body"] as? String == "body until close")
        #expect(results[2]["body"] as? String == "hello, world", "\(results)")
        // Nothing listens on the port of a closed socket.
        let closed = try Self.freePort()
        let unreachable = try Proxy(["--quiet", "--reverse", "http://127.0.0.1:\(closed)"])
        let answer = try Self.raw(port: unreachable.port, [Self.get("/x")])
        #expect(answer.first?["status"] as? Int == 502, "\(answer)")
        #expect((answer.first?["body"] as? String)?.contains("127.0.0.1:\(closed)") == true, "\(answer)")
    }

    /// A free port: bound, then closed.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Many streams at once on one connection (nghttp -m), bodies larger than the windows: each arrives whole.
    @Test func multiplexedStreamsEachArriveWhole() throws {
        let upstream = try Upstream()
        let proxy = try Proxy(["--quiet", "--reverse", upstream.base])
        let result = try run(
            Paths.which("nghttp"), ["-n", "-s", "-m", "20", "http://127.0.0.1:\(proxy.port)/large=300000"])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = result.text.split(separator: "\n").filter { $0.contains("/large=300000") }
        #expect(rows.count == 20, "\(result.text)")
        #expect(rows.allSatisfy { $0.contains(" 200 ") && $0.contains("292K") }, "\(result.text)")
    }

    /// A client that opens 100 streams of 20 MB each and never gives back any window (RFC 9113 §5.2): the proxy
    /// stops taking each response once the stream's bytes wait past the high-water mark (an HTTP/1.1 upstream's
    /// socket is no longer read; an h2c upstream's stream window is no longer given back), so its memory grows by a
    /// bounded amount per stream, not by the 2 GB offered (figures in docs/architecture.md); and the upstream
    /// connection they shared still serves the next request.
    @Test(arguments: [false, true])
    func aClientThatNeverReadsHoldsBoundedMemory(_ h2cUpstream: Bool) throws {
        let upstream = try Upstream()
        let origin = h2cUpstream ? try HTTP2UpstreamEndToEndTests.H2Origin() : nil
        let target = origin.map { "h2c://127.0.0.1:\($0.port)" } ?? upstream.base
        let proxy = try Proxy(["--quiet", "--reverse", target, "--log", "none"], threads: 1)
        let before = try #require(proxy.process.peakRSSKiB)
        let result = try run(
            Self.python, [Paths.fixtures + "/h2raw.py", "\(proxy.port)", "--stall", "100", "/large=20000000", "3"])
        #expect(result.text.contains("\"received\": 65535"), "\(result.text) \(result.stderr)")
        let after = try #require(proxy.process.peakRSSKiB)
        #expect(after - before < 150 * 1024, "peak RSS grew by \((after - before) / 1024) MiB")
        let next = try curl([
            "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "\(proxy.url)/large=10",
        ])
        #expect(next.text == "200", "\(next.stderr)")
    }

    /// With `--http2 off`, a connection that opens with HTTP/2's preface is told so in HTTP/2, which is all such a
    /// client reads: the server's SETTINGS, then GOAWAY with HTTP_1_1_REQUIRED (RFC 9113 §7) and the reason as
    /// its debug data (nghttp prints it), where it used to get an HTTP/1.1 `400` it could not read.
    @Test func aPrefaceToAListenerWithoutHTTP2IsAnsweredGOAWAY() throws {
        let proxy = try Proxy(["--quiet", "--http2", "off", "--reverse", "http://127.0.0.1:9", "--log", "none"])
        let raw = try Self.raw(port: proxy.port, [Self.get("/")])
        #expect(raw.first?["goaway"] as? Int == 13, "\(raw)")
        let nghttp = try run(Paths.which("nghttp"), ["-v", "\(proxy.url)/"], timeout: 20)
        #expect(
            nghttp.text.contains(
                "error_code=HTTP_1_1_REQUIRED(0x0d), opaque_data(44)=[HTTP/2 is off on this listener (--http2 off)]"),
            "\(nghttp.text)")
    }

    /// ALPN on intercepted TLS by `--http2` (RFC 7301): `fallback` keeps HTTP/1.1 for clients that offer it and
    /// gives h2 to those that offer nothing else (gRPC's), `on` prefers h2, `off` never offers it.
    @Test(arguments: [
        ("fallback", "h2,http/1.1", "http/1.1"), ("fallback", "h2", "h2"), ("on", "h2,http/1.1", "h2"),
        ("on", "http/1.1", "http/1.1"), ("off", "h2", nil), ("off", "h2,http/1.1", "http/1.1"),
    ])
    func alpnChoosesByTheHTTP2Mode(_ mode: String, _ offer: String, _ chosen: String?) throws {
        let (home, ca) = try (InterceptionEndToEndTests.home(), TestCA())
        defer { InterceptionEndToEndTests.remove(home, ca) }
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(
            ["--quiet", "--intercept", "localhost", "--upstream-ca", ca.caCert, "--http2", mode],
            environment: ["COOKIE_PROXY_HOME": home])
        let result = try run(
            Paths.which("openssl"),
            [
                "s_client", "-proxy", "127.0.0.1:\(proxy.port)", "-connect", "localhost:\(upstream.port)",
                "-servername", "localhost", "-CAfile", home + "/ca-cert.pem", "-alpn", offer,
            ], stdin: Data())
        if let chosen {
            #expect(result.text.contains("ALPN protocol: \(chosen)\n"), "\(result.text)")
        } else {
            #expect(result.text.contains("No ALPN negotiated"), "\(result.text)")
        }
    }

    /// curl over intercepted TLS with `--http2 on`: the exchange is HTTP/2 end to end with the client, the rules
    /// rewrite its cookies, and 3 MB each way arrive whole (flow control in both directions).
    @Test func curlSpeaksHTTP2ThroughInterceptionAndBodiesArriveWhole() throws {
        let (home, ca) = try (InterceptionEndToEndTests.home(), TestCA())
        defer { InterceptionEndToEndTests.remove(home, ca) }
        let rules = home + "/fix.rules"
        try "rule \"fix\" {\n    host localhost\n    where samesite-none\n    secure\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(
            ["--quiet", "--rules", rules, "--upstream-ca", ca.caCert, "--http2", "on"],
            environment: ["COOKIE_PROXY_HOME": home])
        let base = "https://localhost:\(upstream.port)"
        let common = ["--http2", "--cacert", home + "/ca-cert.pem", "-x", proxy.url]
        let cookie = try curl(
            common + [
                "-D", "-", "-o", "/dev/null", base + "/setcookie?c=x%3D1%3B%20SameSite%3DNone", "-w",
                "VERSION %{http_version}",
            ])
        #expect(cookie.status == 0, "\(cookie.stderr)")
        #expect(cookie.text.contains("HTTP/2 200"), "\(cookie.text)")
        #expect(cookie.text.contains("\r\nset-cookie: x=1; SameSite=None; Secure\r\n"), "\(cookie.text)")
        #expect(cookie.text.hasSuffix("VERSION 2"))
        let file = home + "/large.bin"
        let download = try curl(
            common + ["-o", file, base + "/large=3000000", "-w", "%{http_version} %{size_download}"])
        #expect(download.text == "2 3000000", "\(download.text) \(download.stderr)")
        let expected = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data(expected))
        let upload = try curl(
            common + ["--data-binary", "@" + file, "-o", home + "/echo.bin", base + "/echo", "-w", "%{http_version}"])
        #expect(upload.text == "2", "\(upload.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: home + "/echo.bin")) == Data(expected))
    }

    /// Headless Chromium through the intercepting proxy: with `--http2 on` the DevTools protocol's
    /// Network.responseReceived says each response came over `h2`, with `off` over `http/1.1`; either way the rule
    /// makes the cookie acceptable (Secure added to SameSite=None) and the next page gets it back.
    @Test(arguments: [("on", "h2"), ("off", "http/1.1")])
    func chromiumLoadsPagesOverTheProtocolALPNChose(_ mode: String, _ protocolName: String) throws {
        #expect(BrowserEndToEndTests.chromium() != nil, "chromium is not installed (scripts/setup.sh installs it)")
        let (home, ca) = try (InterceptionEndToEndTests.home(), TestCA())
        defer { InterceptionEndToEndTests.remove(home, ca) }
        try "rule \"add Secure\" {\n    host a.site.test\n    where samesite-none\n    secure\n}\n".write(
            toFile: home + "/secure.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(
            [
                "--quiet", "--rules", home + "/secure.rules", "--resolve", "a.site.test:127.0.0.1",
                "--insecure-upstream", "a.site.test", "--http2", mode,
            ], environment: ["COOKIE_PROXY_HOME": home])
        let base = "https://a.site.test:\(upstream.port)"
        let url =
            "\(base)/setcookie?c=\(InterceptionEndToEndTests.enc("x=1; SameSite=None; Path=/"))"
            + "&location=\(InterceptionEndToEndTests.enc(base + "/read"))"
        let result = try run(
            Self.python, [Paths.fixtures + "/chromium_protocol.py", proxy.url, url], timeout: 90)
        let page = try #require(
            try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.text) \(result.stderr)")
        #expect((page["text"] as? String)?.contains("COOKIE[x=1]") == true, "\(page)")
        let protocols = page["protocols"] as? [String: String] ?? [:]
        #expect(protocols[base + "/read"] == protocolName, "\(protocols)")
        // (The redirect has no Network.responseReceived of its own; the favicon's is the same connection's.)
        #expect(protocols[base + "/favicon.ico"].map { $0 == protocolName } ?? true, "\(protocols)")
    }

    /// SIGTERM while a stream waits for its response: GOAWAY (RFC 9113 §6.8), the stream finishes, then the proxy
    /// exits.
    @Test func shutdownLetsTheStreamsInFlightFinish() throws {
        let upstream = try Upstream()
        let proxy = try Proxy(["--quiet", "--reverse", upstream.base])
        let client = try Subprocess(
            Paths.which("curl"),
            ["-sS", "--http2-prior-knowledge", "http://127.0.0.1:\(proxy.port)/slow=1.5", "-w", " %{http_version}"],
            stdin: .bytes(Data()))
        usleep(500_000)
        proxy.process.signal(SIGTERM)
        #expect(client.wait(timeout: 20) == 0)
        #expect(String(decoding: client.standardOutput, as: UTF8.self) == "slow 2")
        #expect(proxy.process.waitForExit() == 0)
    }
}
