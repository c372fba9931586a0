import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The inspector of a real `cookie-proxy run`: its security, its API over real traffic, HAR read back by a HAR
/// reader, and the onboarding pages a device gets through the proxy.
@Suite(.serialized) struct InspectorEndToEndTests {
    /// The inspector's address and token, from the banner.
    struct UI {
        let base: String
        let port: Int
        let token: String

        init(base: String, port: Int, token: String) {
            self.base = base
            self.port = port
            self.token = token
        }

        init(_ proxy: Proxy) throws {
            let line = try #require(
                proxy.process.stderr.split(separator: "\n").first { $0.hasPrefix("  inspector:    http://") },
                "no inspector line in the banner: \(proxy.process.stderr)")
            let url = line.dropFirst("  inspector:    ".count)
            let parts = url.split(separator: "/?token=")
            base = String(parts[0])
            token = String(parts[1])
            port = Int(base.split(separator: ":").last!)!
        }

        /// The one client the inspector has seen, percent-encoded for a query: on loopback the address and the
        /// User-Agent's product (`127.0.0.1 curl/8.14.1`), as the lifecycle tells clients apart by default.
        func onlyClient() throws -> String {
            let clients = try #require(try json("/api/clients") as? [String])
            #expect(clients.count == 1 && clients.first?.hasPrefix("127.0.0.1 curl/") == true, "\(clients)")
            return clients.first?.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        }

        /// A request with curl: status, the head's lines, the body.
        func get(_ path: String, _ headers: [String] = [], method: String = "GET") throws -> (
            status: Int, head: [String], body: String
        ) {
            let result = try curl(["-i", "-X", method] + headers.flatMap { ["-H", $0] } + [base + path])
            let text = result.text
            let split = text.range(of: "\r\n\r\n")
            let head = text[..<(split?.lowerBound ?? text.endIndex)].components(separatedBy: "\r\n")
            let status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? -1
            return (status, head, split.map { String(text[$0.upperBound...]) } ?? "")
        }

        func json(_ path: String) throws -> Any {
            let r = try get(path, ["Authorization: Bearer \(token)"])
            guard r.status == 200 else { throw HarnessError("\(path): \(r.status) \(r.body)") }
            return try JSONSerialization.jsonObject(with: Data(r.body.utf8))
        }
    }

    @Test func everyPageAndCallNeedsTheTokenAndTheInspectorsOwnHost() throws {
        let home = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let proxy = try Proxy(["--log", "none"], environment: ["COOKIE_PROXY_HOME": home])
        let ui = try UI(proxy)
        // The token is the installation's: a file next to the CA, its owner's only, holding the token as text (so
        // `Authorization: Bearer $(cat inspector-token)` works), and `cookie-proxy ui url` prints the banner's URL.
        var info = stat()
        #expect(stat(home + "/inspector-token", &info) == 0 && info.st_mode & 0o777 == 0o600)
        let secret = try String(contentsOfFile: home + "/inspector-token", encoding: .utf8)
        #expect(secret == ui.token + "\n")
        let printed = try run(
            Paths.binary, ["ui", "url", "--ui", "127.0.0.1:\(ui.port)"], environment: ["COOKIE_PROXY_HOME": home])
        #expect(printed.text == "http://127.0.0.1:\(ui.port)/?token=\(ui.token)\n", "\(printed.stderr)")

        #expect(try ui.get("/api/exchanges").status == 401)
        #expect(try ui.get("/").status == 401)
        #expect(try ui.get("/har").status == 401)
        #expect(try ui.get("/api/exchanges?token=0123").status == 403)
        #expect(try ui.get("/api/exchanges", ["Authorization: Bearer \(ui.token)0"]).status == 403)
        let ok = try ui.get("/api/exchanges", ["Authorization: Bearer \(ui.token)"])
        #expect(ok.status == 200 && ok.body == "[]")
        // DNS rebinding: the right token under another name is refused.
        let rebound = try ui.get("/api/exchanges", ["Authorization: Bearer \(ui.token)", "Host: evil.test:\(ui.port)"])
        #expect(rebound.status == 403 && rebound.body.contains("is not this inspector's address"), "\(rebound)")
        // The banner's URL trades the token for a cookie scripts cannot read, and the page then loads with it.
        let entry = try ui.get("/?token=\(ui.token)")
        #expect(entry.status == 302)
        #expect(
            entry.head.contains("Set-Cookie: cookie-proxy-inspector=\(ui.token); Path=/; HttpOnly; SameSite=Strict"))
        let page = try ui.get("/", ["Cookie: cookie-proxy-inspector=\(ui.token)"])
        #expect(page.status == 200 && page.body.contains("<title>cookie-proxy inspector</title>"))
        #expect(page.head.contains { $0.hasPrefix("Content-Security-Policy: default-src 'none'; script-src 'self'") })
        // Read-only, and no CORS.
        #expect(try ui.get("/api/exchanges", ["Authorization: Bearer \(ui.token)"], method: "POST").status == 405)
        for response in [ok, page, entry, rebound] {
            #expect(!response.head.contains { $0.lowercased().hasPrefix("access-control-") })
        }
        // Through the proxy, the inspector's port is the proxy's own: refused.
        let through = try curl(["-s", "-x", proxy.url, "http://127.0.0.1:\(ui.port)/api/exchanges"])
        #expect(through.text.contains("refusing a request addressed to the proxy itself"), "\(through.text)")
    }

    static let rules = """
        rule "share the login" {
            host   login.site.test
            cookie sid
            domain ensure
        }

        """

    /// The login-sharing story: a host-only cookie from login.site.test, widened by a rule; the jar view gives the
    /// Cookie header app.site.test now gets; HAR carries what the upstream sent and what the rule did.
    /// The inspector takes another port when it is told to (or the default is taken): `ui` (its action `url` the
    /// default) and `mcp` in another terminal find the port the running proxy took, and once it stops, the default
    /// again; an unknown action is refused naming the one there is.
    @Test func uiAndMCPFindTheInspectorThePortTheRunningProxyTook() throws {
        let home = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let environment = ["COOKIE_PROXY_HOME": home]
        let proxy = try Proxy(["--log", "none", "--ui", "127.0.0.1:0"], environment: environment)
        let ui = try UI(proxy)
        #expect(ui.port != 8081 && ui.port > 0)
        for action in [[], ["url"]] {
            let printed = try run(Paths.binary, ["ui"] + action, environment: environment)
            #expect(printed.text == "http://127.0.0.1:\(ui.port)/?token=\(ui.token)\n", "\(action) \(printed.stderr)")
        }
        let unknown = try run(Paths.binary, ["ui", "open"], environment: environment)
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown action 'open'"), "\(unknown.stderr)")
        // mcp's recent_exchanges tool reads the inspector it found: it answers (an empty list), not a refused
        // connection to 8081.
        let requests = [
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recent_exchanges","arguments":{}}}"#,
        ]
        let mcp = try run(
            Paths.binary, ["mcp"], stdin: Data((requests.joined(separator: "\n") + "\n").utf8), environment: environment
        )
        let reply = try #require(mcp.text.split(separator: "\n").last.map(String.init))
        #expect(!reply.contains("\"isError\":true") && !reply.contains("8081"), "\(reply)")
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let after = try run(Paths.binary, ["ui"], environment: environment)
        #expect(after.text == "http://127.0.0.1:8081/?token=\(ui.token)\n", "\(after.text)")
    }

    @Test func theAPIAndHARShowEachCookieAsReceivedAndForwardedAndTheJarASubdomainsCookieHeader() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.rules.write(toFile: dir + "/share.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(
            [
                "--rules", dir + "/share.rules", "--log", "none", "--log-values", "--resolve",
                "login.site.test:127.0.0.1", "--resolve", "app.site.test:127.0.0.1",
            ], environment: ["COOKIE_PROXY_HOME": dir])
        let ui = try UI(proxy)
        let login =
            "http://login.site.test:\(upstream.port)/setcookie?c=sid%3Ds3cr3t%3B%20Path%3D%2F&c=bad%3D1%3B%20SameSite%3DNone"
        #expect(try curl(["-s", "-o", "/dev/null", "-x", proxy.url, login]).status == 0)
        #expect(
            try curl(["-s", "-o", "/dev/null", "-x", proxy.url, "http://login.site.test:\(upstream.port)/path/none"])
                .status == 0)
        #expect(
            try curl([
                "-s", "-o", "/dev/null", "-x", proxy.url, "-b", "sid=s3cr3t",
                "http://app.site.test:\(upstream.port)/path/home",
            ]).status == 0)

        // Only exchanges that carried cookies are held.
        let rows = try #require(try ui.json("/api/exchanges") as? [[String: Any]])
        #expect(rows.count == 2, "\(rows)")
        let first = try #require(rows.first)
        #expect(first["setCookies"] as? [String] == ["sid", "bad"])
        #expect(first["rules"] as? [String] == ["share the login"])
        #expect((first["findings"] as? [String])?.contains("samesite-none-insecure") == true)
        #expect((first["severity"] as? [String: Int])?["rejects"] == 1)
        #expect(rows.last?["sentCookies"] as? [String] == ["sid"])

        let detail = try #require(try ui.json("/api/exchanges/\(first["seq"]!)") as? [String: Any])
        let cookies = try #require(detail["cookies"] as? [[String: Any]])
        #expect(cookies.first?["received"] as? String == "sid=s3cr3t; Path=/")
        #expect(cookies.first?["forwarded"] as? String == "sid=s3cr3t; Path=/; Domain=site.test")
        let changes = try #require(cookies.first?["changes"] as? [[String: Any]])
        #expect(changes.contains { $0["op"] as? String == "add" && $0["attribute"] as? String == "Domain" })
        let rule = try #require((cookies.first?["rules"] as? [[String: Any]])?.first)
        #expect(rule["name"] as? String == "share the login")
        #expect(rule["location"] as? String == dir + "/share.rules:1:1")
        let finding = try #require((cookies.last?["findings"] as? [[String: Any]])?.first)
        #expect(finding["code"] as? String == "samesite-none-insecure" && finding["severity"] as? String == "rejects")
        #expect((finding["message"] as? String)?.contains("§5.7") == true)

        // The browser's view: app.site.test gets the widened login cookie; the SameSite=None one was refused.
        let jar = try #require(
            try ui.json("/api/jar?client=\(try ui.onlyClient())&url=http%3A%2F%2Fapp.site.test%3A\(upstream.port)%2F")
                as? [String: Any])
        #expect(jar["cookieHeader"] as? String == "sid=s3cr3t", "\(jar)")
        let rejected = try #require(jar["rejected"] as? [[String: Any]])
        #expect(rejected.count == 1 && rejected.first?["name"] as? String == "bad")
        #expect((rejected.first?["reason"] as? String)?.contains("SameSite=None requires Secure") == true)
        let other = try #require(
            try ui.json("/api/jar?client=\(try ui.onlyClient())&url=http%3A%2F%2Fother.test%3A\(upstream.port)%2F")
                as? [String: Any])
        #expect(other["cookieHeader"] as? String == "")

        // HAR: valid against the HAR 1.2 schema, read back by haralyzer, with what the upstream sent.
        let har = try ui.get("/har", ["Authorization: Bearer \(ui.token)"])
        #expect(har.head.contains("Content-Disposition: attachment; filename=\"cookie-proxy.har\""))
        try har.body.write(toFile: dir + "/capture.har", atomically: true, encoding: .utf8)
        let check = try run(
            Paths.root + "/.build/test-python/bin/python",
            [Paths.fixtures + "/har_check.py", dir + "/capture.har", Paths.fixtures + "/har-1.2.schema.json"])
        #expect(check.status == 0, "\(check.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout)) as? [String: Any])
        #expect((report["errors"] as? [String])?.isEmpty == true, "\(report["errors"] ?? "")")
        let entries = try #require(report["entries"] as? [[String: Any]])
        #expect(entries.count == 2)
        #expect(entries.first?["url"] as? String == login)
        #expect(entries.first?["original"] as? [String] == ["sid=s3cr3t; Path=/", "bad=1; SameSite=None"])
        #expect(
            entries.first?["setCookie"] as? [String] == [
                "sid=s3cr3t; Path=/; Domain=site.test", "bad=1; SameSite=None",
            ])
        let record = try #require((entries.first?["records"] as? [[String: Any]])?.first)
        #expect(record["rules"] as? [String] == ["share the login"])
        #expect(entries.last?["requestCookies"] as? [String] == ["sid"])
    }

    /// Not timed: 24,000 exchanges with cookies through a ring of 500 while a client follows the live stream. The
    /// proxy stays up, the ring holds the newest 500 in order, the stream carried rows, and it exits cleanly.
    @Test func underLoadTheRingHoldsTheNewestExchangesAndTheLiveStreamKeepsUp() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let upstream = try Recorder()
        let proxy = try Proxy(
            ["--quiet", "--log", "none", "--ui-history", "500", "--ui", "127.0.0.1:0"],
            environment: ["COOKIE_PROXY_HOME": dir])
        let token = try String(contentsOfFile: dir + "/inspector-token", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        // --quiet prints no banner: the inspector's port is the proxy's other listening socket.
        let ports = try run(Paths.which("ss"), ["-Hltnp"]).text.split(separator: "\n")
            .filter { $0.contains("pid=\(proxy.process.pid),") }
            .compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first }
            .compactMap { Int($0.split(separator: ":").last ?? "") }.filter { $0 != proxy.port }
        let port = try #require(ports.first, "no inspector socket")
        let listener = try TestProcess(
            Paths.which("curl"), ["-sN", "-H", "Authorization: Bearer \(token)", "http://127.0.0.1:\(port)/api/events"])
        usleep(300_000)
        let received = try LogEndToEndTests.load(proxy, upstream, threads: 8, requests: 3000)
        #expect(received.count == 8 * 3000 * 3)
        let ui = InspectorEndToEndTests.UI(base: "http://127.0.0.1:\(port)", port: port, token: token)
        let rows = try #require(try ui.json("/api/exchanges") as? [[String: Any]])
        #expect(rows.count == 500)
        #expect(rows.compactMap { $0["seq"] as? Int } == Array(23_501...24_000))
        usleep(500_000)
        #expect(listener.stdout.components(separatedBy: "event: exchange").count > 1)
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
    }

    @Test func valuesAreRedactedInEveryViewUnlessLogValues() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.rules.write(toFile: dir + "/share.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(
            ["--rules", dir + "/share.rules", "--log", "none", "--resolve", "login.site.test:127.0.0.1"],
            environment: ["COOKIE_PROXY_HOME": dir])
        let ui = try UI(proxy)
        _ = try curl([
            "-s", "-o", "/dev/null", "-x", proxy.url, "-b", "theme=dark-s3cr3t",
            "http://login.site.test:\(upstream.port)/setcookie?c=sid%3Ds3cr3t%3B%20Path%3D%2F",
        ])
        let auth = ["Authorization: Bearer \(ui.token)"]
        for path in [
            "/api/exchanges", "/api/exchanges/1", "/har",
            "/api/jar?client=127.0.0.1&url=http%3A%2F%2Flogin.site.test%2F",
        ] {
            // (The URL itself carries the value percent-encoded, as the test's upstream takes it from the query.)
            let body = try ui.get(path, auth).body
            #expect(!body.contains("sid=s3cr3t") && !body.contains("dark-s3cr3t"), "\(path): \(body)")
        }
        #expect(try ui.get("/api/exchanges/1", auth).body.contains("sid=[h:"))
    }

    @Test func theOnboardingPagesServeTheCAThroughTheProxyAndNothingWithoutInterception() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let proxy = try Proxy(["--intercept", "app.test", "--log", "none"], environment: ["COOKIE_PROXY_HOME": dir])
        let page = try curl(["-s", "-x", proxy.url, "http://cookie-proxy.local/"])
        for step in ["iPhone and iPad", "iOS simulator", "Android", "macOS", "Linux", "Firefox", "/ca.mobileconfig"] {
            #expect(page.text.contains(step), "\(step)")
        }
        let openssl = Paths.which("openssl")
        func fingerprint(_ args: [String]) throws -> String {
            let r = try run(openssl, ["x509", "-noout", "-fingerprint", "-sha256"] + args)
            #expect(r.status == 0, "\(r.stderr)")
            return r.text
        }
        let expected = try fingerprint(["-in", dir + "/ca-cert.pem"])
        #expect(expected.contains("Fingerprint="))
        #expect(
            try curl(["-s", "-x", proxy.url, "-o", dir + "/got.der", "http://cookie-proxy.local/ca.der"]).status == 0)
        #expect(try fingerprint(["-inform", "DER", "-in", dir + "/got.der"]) == expected)
        #expect(
            try curl(["-s", "-x", proxy.url, "-o", dir + "/got.pem", "http://cookie-proxy.local/ca.pem"]).status == 0)
        #expect(try fingerprint(["-in", dir + "/got.pem"]) == expected)
        let pem = try String(contentsOfFile: dir + "/got.pem", encoding: .utf8)
        #expect(!pem.contains("PRIVATE KEY"))
        // The profile is a plist whose root-certificate payload is the DER.
        #expect(
            try curl([
                "-s", "-x", proxy.url, "-o", dir + "/got.mobileconfig", "http://cookie-proxy.local/ca.mobileconfig",
            ])
            .status == 0)
        let plist = """
            import plistlib, sys
            p = plistlib.load(open(sys.argv[1], 'rb'))
            payload = p['PayloadContent'][0]
            assert p['PayloadType'] == 'Configuration' and payload['PayloadType'] == 'com.apple.security.root'
            print(payload['PayloadContent'] == open(sys.argv[2], 'rb').read())
            """
        let parsed = try run(Paths.which("python3"), ["-c", plist, dir + "/got.mobileconfig", dir + "/got.der"])
        #expect(parsed.text == "True\n", "\(parsed.stderr)")

        // Without interception: no CA is named and none is served.
        let plainHome = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: plainHome) }
        let plain = try Proxy(["--log", "none", "--ui", "off"], environment: ["COOKIE_PROXY_HOME": plainHome])
        #expect(!plain.process.stderr.contains("inspector:"))
        let bare = try curl(["-s", "-x", plain.url, "http://cookie-proxy.local/"])
        #expect(bare.text.contains("HTTPS interception is off"), "\(bare.text)")
        #expect(!bare.text.lowercased().contains("certificate") && !bare.text.contains(" CA"))
        let none = try curl(["-s", "-w", "\n%{http_code}", "-x", plain.url, "http://cookie-proxy.local/ca.pem"])
        #expect(none.text.hasSuffix("\n404"))
    }
}

/// The inspector in a real browser: headless Chromium driven by Selenium (chromium-driver), traffic sent through
/// the proxy with curl while the page is open.
@Suite(.serialized) struct InspectorBrowserTests {
    @Test func rowsArriveLiveTheFilterNarrowsThemAndTheDetailAndJarAnswerTheLoginStory() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try InspectorEndToEndTests.rules.write(toFile: dir + "/share.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(
            [
                "--rules", dir + "/share.rules", "--log", "none", "--log-values", "--resolve",
                "login.site.test:127.0.0.1", "--resolve", "app.site.test:127.0.0.1", "--resolve",
                "other.test:127.0.0.1",
            ], environment: ["COOKIE_PROXY_HOME": dir])
        let ui = try InspectorEndToEndTests.UI(proxy)
        // UPDATE_SCREENSHOT=1 writes docs/inspector.md's picture.
        let screenshot =
            ProcessInfo.processInfo.environment["UPDATE_SCREENSHOT"] != nil
            ? Paths.root + "/docs/inspector.png" : dir + "/inspector.png"
        let result = try run(
            Paths.root + "/.build/test-python/bin/python",
            [
                Paths.fixtures + "/inspector_browser.py", "\(ui.base)/?token=\(ui.token)", proxy.url,
                "\(upstream.port)", screenshot, dir,
            ], timeout: 180)
        #expect(result.status == 0, "\(result.stderr)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any])
        #expect(out["landed"] as? String == "\(ui.base)/", "the token is traded for the cookie")
        #expect(out["rowsBefore"] as? Int == 0)
        #expect(out["rowsLive"] as? Int == 3, "rows arrive without a reload")
        #expect((out["rowsFiltered"] as? [String])?.count == 1)
        #expect((out["rowsFiltered"] as? [String])?.first?.contains("login.site.test") == true)
        #expect(out["rowsByFinding"] as? Int == 1)
        let detail = (out["detail"] as? [String]) ?? []
        #expect(detail.first?.contains("forwarded: sid=s3cr3t; Path=/; Domain=site.test") == true, "\(detail)")
        #expect(detail.first?.contains("share the login") == true)
        #expect((out["changes"] as? [String])?.contains("add Domain to site.test") == true, "\(out["changes"] ?? "")")
        #expect((out["findingBadges"] as? [String])?.contains("rejects") == true)
        // From 1024 to 1920 pixels wide (screenshots beside the main one): the list and the open detail never
        // overlap, the page never scrolls sideways, the URL column keeps at least 150 pixels.
        let layout = out["layout"] as? [String: [String: Any]] ?? [:]
        #expect(layout.keys.sorted() == ["1024", "1280", "1400", "1500", "1920"], "\(layout)")
        for (width, measured) in layout {
            #expect(measured["apart"] as? Bool == true, "\(width): \(measured)")
            #expect(measured["sideways"] as? Bool == false, "\(width): \(measured)")
            #expect((measured["urlWidth"] as? Int ?? 0) >= 150, "\(width): \(measured)")
        }
        #expect(out["jarHeader"] as? String == "sid=s3cr3t", "\(out)")
        #expect((out["jarClient"] as? String)?.hasPrefix("127.0.0.1 curl/") == true, "\(out)")
        #expect((out["jarRejected"] as? [String])?.first?.contains("SameSite=None requires Secure") == true)
        #expect((out["rules"] as? [String])?.first?.contains("share the login") == true)
        #expect(out["sentBack"] as? [String] == ["", "sent 1", "", "changed 1"], "\(out["sentBack"] ?? "")")
        #expect(
            (out["lifecycle"] as? String)?.contains("sid sent-other-value (set by #1)") == true,
            "\(out["lifecycle"] ?? "")")
        let timeline = out["timeline"] as? [String] ?? []
        #expect(timeline.count == 4, "\(timeline)")
        #expect(
            timeline.dropFirst().map {
                $0.contains("stored") || $0.contains("sent-as-expected") || $0.contains("sent-other-value")
            } == [true, true, true], "\(timeline)")
        #expect((out["consoleErrors"] as? [String])?.isEmpty == true, "\(String(describing: out["consoleErrors"]))")
        #expect(FileManager.default.fileExists(atPath: screenshot))
    }
}

/// `cookie-proxy mcp` with the official MCP Python SDK as its client, against a running proxy's inspector.
@Suite(.serialized) struct MCPEndToEndTests {
    @Test func theSDKListsTheToolsAndEachCallAnswersAsTheCommandWould() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let rules = dir + "/share.rules"
        try InspectorEndToEndTests.rules.write(toFile: rules, atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(
            [
                "--rules", rules, "--log", "none", "--log-values", "--resolve", "login.site.test:127.0.0.1",
                "--resolve", "app.site.test:127.0.0.1",
            ], environment: ["COOKIE_PROXY_HOME": dir])
        let ui = try InspectorEndToEndTests.UI(proxy)
        _ = try curl([
            "-s", "-o", "/dev/null", "-x", proxy.url,
            "http://login.site.test:\(upstream.port)/setcookie?c=sid%3Ds3cr3t%3B%20Path%3D%2F",
        ])
        let result = try run(
            Paths.root + "/.build/test-python/bin/python",
            [Paths.fixtures + "/mcp_client.py", Paths.binary, ui.base, dir, rules, "\(upstream.port)"], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any])
        #expect(out["server"] as? String == "cookie-proxy")
        #expect(
            out["tools"] as? [String] == [
                "audit_url", "browser_jar", "check_rules", "exchange_detail", "parse_set_cookie", "recent_exchanges",
                "try_rules",
            ])
        let calls = try #require(out["calls"] as? [String: [String: Any]])
        func text(_ name: String) -> String { calls[name]?["text"] as? String ?? "" }
        for (name, call) in calls { #expect(call["isError"] as? Bool == false, "\(name): \(call)") }
        #expect(text("parse_set_cookie").contains("\"rejected\":\"SameSite=None requires Secure"))
        #expect(text("try_rules").contains("Domain=site.test"), "\(text("try_rules"))")
        #expect(text("check_rules").contains("share the login"), "\(text("check_rules"))")
        #expect(text("audit_url").contains("samesite-none-insecure"), "\(text("audit_url"))")
        #expect(text("recent_exchanges").contains("login.site.test"), "\(text("recent_exchanges"))")
        #expect(text("exchange_detail").contains("sid=s3cr3t; Path=/; Domain=site.test"), "\(text("exchange_detail"))")
        #expect(text("browser_jar").contains("\"cookieHeader\":\"sid=s3cr3t\""), "\(text("browser_jar"))")
    }
}
