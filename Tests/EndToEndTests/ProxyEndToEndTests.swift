import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real binary between real clients (curl, raw sockets, openssl) and a real upstream.
@Suite(.serialized) struct ProxyEndToEndTests {
    /// A reverse proxy's banner lists its routes in the order they are tried, each with its upstream's own scheme,
    /// and says that it opens no tunnel (CONNECT gets a 405).
    @Test(arguments: [
        (["--reverse", "http://127.0.0.1:9"], ["/ → http://127.0.0.1:9"]),
        (["--reverse", "h2c://127.0.0.1:9"], ["/ → h2c://127.0.0.1:9"]),
        (
            [
                "--route", "/=http://127.0.0.1:9", "--route", "/api/=https://localhost:9/v1/", "--route",
                "a.test/=http://[::1]:9",
            ],
            ["a.test/ → http://[::1]:9", "/api/ → https://localhost:9/v1/", "/ → http://127.0.0.1:9"]
        ),
    ])
    func theReverseBannerSaysWhatReverseModeDoes(_ options: [String], _ routes: [String]) throws {
        let home = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let proxy = try Proxy(options + ["--log", "none"], environment: ["COOKIE_PROXY_HOME": home])
        let banner = proxy.process.stderr
        #expect(
            banner.contains("the routes, in the order they are tried:\n" + routes.map { "    \($0)\n" }.joined()),
            "\(banner)")
        #expect(banner.contains("  https:        none (a reverse proxy answers CONNECT with 405)\n"), "\(banner)")
        #expect(!banner.contains("tunnelled"), "\(banner)")
        let connect = try curl([
            "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "CONNECT", "--request-target", "x:443", proxy.url,
        ])
        #expect(connect.text == "405", "\(connect.text)")
    }

    /// An https forward proxy (`--listen https://…` without routes): the banner's curl line, run as printed (with
    /// this test's upstream for example.com), goes through it; the banner says Apple's proxy settings need an http
    /// listener, and the log line says `none` alone.
    @Test func theHTTPSForwardProxysBannerCurlLineWorksAsPrinted() throws {
        let home = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let upstream = try Upstream()
        let proxy = try Proxy(
            ["--log", "none"], listen: "https://127.0.0.1:0", environment: ["COOKIE_PROXY_HOME": home])
        let banner = proxy.process.stderr
        let line = try #require(banner.split(separator: "\n").first { $0.hasPrefix("  curl:         ") })
        let words = line.dropFirst("  curl:         ".count).split(separator: " ").map(String.init)
        #expect(words.first == "curl" && words.contains("--proxy-cacert"), "\(line)")
        let arguments = words.dropFirst().map {
            $0 == "http://example.com/" ? "http://127.0.0.1:\(upstream.port)/head" : $0
        }
        let result = try curl(["-o", "/dev/null", "-w", "%{http_code}"] + arguments)
        #expect(result.text == "200", "\(line): \(result.text) \(result.stderr)")
        #expect(banner.contains("  iOS / macOS:  their proxy settings speak plain HTTP to a proxy"), "\(banner)")
        #expect(banner.contains("  log:          none\n"), "\(banner)")
        #expect(!banner.contains("intercepting  with"), "\(banner)")
    }

    /// The forward proxy's own URL opened in a browser (`GET /`, accepting HTML) is a page saying what this is, with
    /// links to the onboarding pages and the inspector (no token in it); other clients, and other methods, get the
    /// `400` that says to send an absolute URL.
    @Test(arguments: [
        ("GET", "text/html,application/xhtml+xml;q=0.9", 200), ("HEAD", "text/html", 200), ("GET", "*/*", 400),
        ("POST", "text/html", 400),
    ])
    func theProxysOwnURLInABrowserIsAPageThatSaysWhatThisIs(_ method: String, _ accept: String, _ status: Int) throws {
        let proxy = try Proxy(["--quiet", "--log", "none"])
        let method = method == "HEAD" ? ["--head"] : ["-X", method]
        let result = try curl(method + ["-H", "Accept: \(accept)", "-w", "\n%{http_code}", "\(proxy.url)/"])
        #expect(result.text.hasSuffix("\n\(status)"), "\(result.text)")
        if status == 200 && method == ["-X", "GET"] {
            #expect(result.text.contains("<a href=\"http://cookie-proxy.local/\">"), "\(result.text)")
            #expect(result.text.contains("<a href=\"http://127.0.0.1:8081/\">") && !result.text.contains("token="))
        }
        if status == 400 { #expect(result.text.hasPrefix("this is a forward proxy: send an absolute URL")) }
    }

    @Test func oddSetCookieLinesAndEveryOtherByteComeOutUnchangedWhenNoRuleMatches() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let request =
            "GET \(upstream.base)/cookies HTTP/1.1\r\nHost: 127.0.0.1:\(upstream.port)\r\nConnection: close\r\n\r\n"
        let direct = try RawClient.exchange(
            port: upstream.port, send: [Array("GET /cookies HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)],
            until: { $0.firstRange(of: Array("cookies\n".utf8)) != nil })
        let proxied = try RawClient.exchange(port: proxy.port, send: [Array(request.utf8)])
        let directLines = direct.headerLines().filter { !$0.starts(with: Array("Content-Length".utf8)) }
        let proxiedLines = proxied.headerLines()
        // Every upstream line arrives, byte for byte and in order; the proxy only adds Via and Connection.
        #expect(proxiedLines.filter { directLines.contains($0) } == directLines)
        let added = proxiedLines.filter { !directLines.contains($0) && !$0.starts(with: Array("Content-Length".utf8)) }
        #expect(added.map { String(decoding: $0, as: UTF8.self) } == ["Connection: close", "Via: 1.1 cookie-proxy"])
        #expect(proxied.suffix(8) == Array("cookies\n".utf8))
    }

    @Test func curlThroughTheProxyKeepsItsConnectionAlive() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let result = try curl(["-v", "-x", proxy.url, "\(upstream.base)/path/a", "\(upstream.base)/path/b?q=1"])
        #expect(result.status == 0)
        #expect(result.text == "GET /path/aGET /path/b?q=1")
        #expect(result.stderr.contains("Re-using existing connection"))
    }

    /// `COOKIE_PROXY_POLLER=poll`: the portable poller, with the loops sharing one listening socket (as on macOS),
    /// serves new and kept-alive connections alike. (CI also runs this whole suite a second time with it.)
    @Test func thePortablePollerServesNewAndKeptAliveConnections() throws {
        let upstream = try Upstream()
        let proxy = try Proxy(
            ["--log", "none"], threads: 2,
            environment: ["COOKIE_PROXY_HOME": Proxy.defaultHome, "COOKIE_PROXY_POLLER": "poll"])
        #expect(proxy.process.stderr.contains("  poller:       poll (COOKIE_PROXY_POLLER)"))
        for round in 0..<12 {
            let urls = (0..<4).map { "\(upstream.base)/path/\(round)-\($0)" }
            let result = try curl(["-x", proxy.url] + urls)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.text == (0..<4).map { "GET /path/\(round)-\($0)" }.joined())
        }
    }

    @Test func chunkedResponsesAndTheirTrailersPassThrough() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let raw = try RawClient.exchange(
            port: proxy.port,
            "GET \(upstream.base)/chunked HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(raw.hasSuffix("\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Checksum: abc\r\n\r\n"))
        #expect(raw.contains("Transfer-Encoding: chunked\r\n"))
        let decoded = try curl(["-x", proxy.url, "\(upstream.base)/chunked"])
        #expect(decoded.text == "hello, world")
    }

    @Test func requestBodiesStreamAndExpectContinueWorks() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let body = Data((0..<300_000).map { UInt8($0 % 251) })
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cp-body-\(getpid())")
        try body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try curl([
            "-v", "-x", proxy.url, "-H", "Expect: 100-continue", "--data-binary", "@\(file.path)",
            "\(upstream.base)/echo",
        ])
        #expect(result.status == 0)
        #expect(result.stdout == body)
        #expect(result.stderr.contains("HTTP/1.1 100 Continue"))
        let chunked = try curl([
            "-x", proxy.url, "-H", "Transfer-Encoding: chunked", "--data-binary", "@\(file.path)",
            "\(upstream.base)/echo",
        ])
        #expect(chunked.status == 0)
        #expect(chunked.stdout == body)
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let one = "GET \(upstream.base)/path/1 HTTP/1.1\r\nHost: x\r\n\r\n"
        let two = "GET \(upstream.base)/path/2 HTTP/1.1\r\nHost: x\r\n\r\n"
        let three = "GET \(upstream.base)/path/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let raw = try RawClient.exchange(port: proxy.port, one + two + three)
        let bodies = ["GET /path/1", "GET /path/2", "GET /path/3"].map { raw.range(of: $0)?.lowerBound }
        #expect(bodies.allSatisfy { $0 != nil })
        #expect(bodies[0]! < bodies[1]! && bodies[1]! < bodies[2]!)
    }

    @Test func largeDownloadsStreamWithBoundedMemoryToASlowClient() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let size = 256 * 1024 * 1024
        let before = proxy.process.residentKiB ?? 0
        let result = try curl([
            "--limit-rate", "64M", "-o", "/dev/null", "-w", "%{size_download}", "-x", proxy.url,
            "\(upstream.base)/large?n=\(size)",
        ])
        #expect(result.text == "\(size)")
        let peak = try #require(proxy.process.peakRSSKiB)
        #expect(peak - before < 64 * 1024, "resident memory grew by \(peak - before) KiB")
    }

    @Test func connectTunnelsToATLSServerEndToEnd() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-tls-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let openssl = Paths.which("openssl")
        let gen = try run(
            openssl,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout", "\(dir)/key.pem", "-out", "\(dir)/cert.pem",
            ])
        #expect(gen.status == 0)
        // A port below the kernel's ephemeral range (32768 and up here), where the suite's own connections could
        // hold it; s_server exits when it cannot bind, and the next port is tried. s_server says nothing when it
        // is ready (-quiet): its port is asked instead of sleeping a fixed time, which on a loaded machine was
        // sometimes too short (the proxy then answered 502, connection refused).
        var server: TestProcess? = nil
        var port = 0
        for attempt in 0..<5 where server == nil {
            port = 20000 + (Int(getpid()) + 1009 * attempt) % 12000
            let candidate = try TestProcess(
                openssl,
                [
                    "s_server", "-accept", "127.0.0.1:\(port)", "-cert", "\(dir)/cert.pem", "-key", "\(dir)/key.pem",
                    "-www", "-quiet",
                ])
            let deadline = Date().addingTimeInterval(20)
            while candidate.process.isRunning && Date() < deadline && !waitUntilListening(port: port, timeout: 0.1) {}
            if candidate.process.isRunning && Date() < deadline {
                server = candidate
            } else {
                candidate.process.terminate()
            }
        }
        #expect(server != nil)
        let proxy = try Proxy()
        let result = try curl(["-v", "--cacert", "\(dir)/cert.pem", "-x", proxy.url, "https://localhost:\(port)/"])
        #expect(result.status == 0)
        #expect(result.text.contains("s_server"))
        // The client saw the upstream's own certificate: the tunnel is end-to-end.
        #expect(result.stderr.contains("subject: CN=localhost"))
        #expect(result.stderr.contains("200 Connection Established"))
    }

    @Test func webSocketUpgradesBecomeATunnel() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let request =
            "GET \(upstream.base)/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        let raw = try RawClient.exchange(
            port: proxy.port, send: [Array(request.utf8), Array("ping".utf8)], pause: 200_000,
            until: { String(decoding: $0, as: UTF8.self).contains("echo:ping") })
        let text = String(decoding: raw, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(text.contains("echo:ping"))
    }

    @Test(arguments: [
        ("BROKEN\r\n\r\n", "HTTP/1.1 400 Bad Request", "request line"),
        ("GET http://x/ HTTP/1.1\r\nX: " + String(repeating: "a", count: 70_000) + "\r\n\r\n", "HTTP/1.1 431", "over"),
        ("GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 502 Bad Gateway", "127.0.0.1:1 refused"),
        (
            "GET http://no-such-host.invalid/ HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 502 Bad Gateway",
            "no-such-host.invalid"
        ),
    ])
    func badInputGetsAStatusAndAReason(_ request: String, _ status: String, _ reason: String) throws {
        let proxy = try Proxy()
        let raw = try RawClient.exchange(port: proxy.port, request)
        #expect(raw.hasPrefix(status))
        #expect(raw.contains(reason))
        // The proxy keeps serving.
        let again = try RawClient.exchange(port: proxy.port, "BROKEN\r\n\r\n")
        #expect(again.hasPrefix("HTTP/1.1 400"))
    }

    @Test func aSilentUpstreamGets504() throws {
        let upstream = try Upstream()
        let proxy = try Proxy(["--response-timeout", "1"])
        let result = try curl(["-x", proxy.url, "-w", "%{http_code}", "\(upstream.base)/slow?t=3"])
        #expect(result.text.hasSuffix("504"))
        #expect(result.text.contains("did not answer in time"))
    }

    @Test func anUpstreamThatClosesMidResponseClosesTheClient() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let result = try curl(["-x", proxy.url, "\(upstream.base)/truncated"])
        #expect(result.status == 18)  // CURLE_PARTIAL_FILE: never a fake success
        let untilClose = try curl(["-x", proxy.url, "\(upstream.base)/until-close"])
        #expect(untilClose.status == 0)
        #expect(untilClose.text == "body until close")
    }

    @Test func aSlowlorisClientGets408() throws {
        let proxy = try Proxy(["--header-timeout", "1"])
        let start = Date()
        let raw = try RawClient.exchange(port: proxy.port, send: [Array("GET http://x/ HTTP/1.1\r\nX-Slow: ".utf8)])
        #expect(String(decoding: raw, as: UTF8.self).hasPrefix("HTTP/1.1 408"))
        #expect(Date().timeIntervalSince(start) < 5)
        // The note names what of the head had come, not an empty request.
        let note = try proxy.process.waitForLine(startingWith: "cookie-proxy: header timeout", onStderr: true)
        #expect(
            note.hasPrefix("cookie-proxy: header timeout: (incomplete head) GET http://x/ HTTP/1.1 (client"), "\(note)")
        // The log holds the closing as an event, and the exit message counts it.
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        #expect(proxy.process.stdout.contains("\"event\":\"exchange-closed\""), "\(proxy.process.stdout)")
        #expect(
            proxy.process.stderr.contains("0 log records and 1 event written, 0 dropped"), "\(proxy.process.stderr)")
    }

    @Test func sigtermFinishesTheExchangeInFlightAndExitsZero() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let result = LockedText()
        let url = proxy.url
        let target = "\(upstream.base)/slow?t=1"
        let thread = Thread {
            if let r = try? curl(["-x", url, target]) { result.append(r.text) }
        }
        thread.start()
        usleep(400_000)
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        while !thread.isFinished { usleep(10_000) }
        #expect(result.value == "slow")
    }

    @Test func refusesRequestsAddressedToItself() throws {
        let proxy = try Proxy()
        let result = try curl(["-x", proxy.url, "http://127.0.0.1:\(proxy.port)/"])
        #expect(result.text.contains("addressed to the proxy itself"))
    }
}
