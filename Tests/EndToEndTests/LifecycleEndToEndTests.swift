import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// "Did the client keep my cookie, and did it send it back?" through the real binary: curl sessions against the
/// test upstream, each request's verdicts in the log and the inspector, a cookie's timeline, request-cookie rules.
@Suite(.serialized) struct LifecycleEndToEndTests {
    static let rules = """
        rule "no tracking upstream" {
            request-cookie remove ga
        }

        """

    /// One request: the URL's path (on app.site.test unless it names another host), extra headers, and the verdicts
    /// the proxy should give (cookie, verdict, reason code).
    struct Step: Sendable {
        var host: String = "app.site.test"
        var path: String
        var headers: [String]
        var verdicts: [(String, String, String?)]
    }

    static func setcookie(_ lines: [String]) -> String {
        "/setcookie?"
            + lines.map { "c=" + $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }.joined(
                separator: "&")
    }

    static let steps: [Step] = [
        // The login: nothing is expected yet; the Fetch Metadata shows the client is a browser.
        Step(
            path: setcookie(["sid=s1; Path=/", "bad=1; Domain=other.test"]), headers: ["Sec-Fetch-Site: none"],
            verdicts: []),
        Step(path: "/read", headers: ["Cookie: sid=s1"], verdicts: [("sid", "sent-as-expected", nil)]),
        Step(
            path: "/read", headers: ["Cookie: sid=s1; ga=GA1.2"],
            verdicts: [("sid", "sent-as-expected", nil), ("ga", "sent-not-set", "not-seen")]),
        Step(
            path: "/read", headers: ["Cookie: sid=changed"],
            verdicts: [("sid", "sent-other-value", "changed-elsewhere")]),
        Step(
            path: "/read", headers: ["Sec-Fetch-Site: same-origin"],
            verdicts: [("sid", "expected-not-sent", "unexplained")]),
        Step(
            path: "/read", headers: ["Cookie: sid=s1; bad=1"],
            verdicts: [("sid", "sent-as-expected", nil), ("bad", "sent-not-set", "rejected-on-set")]),
        // A widget's cookie set first-party, then asked for from a cross-site frame without it.
        Step(
            host: "localhost", path: setcookie(["w=1; SameSite=None; Secure"]), headers: ["Sec-Fetch-Site: none"],
            verdicts: []),
        Step(
            host: "localhost", path: "/read",
            headers: ["Sec-Fetch-Site: cross-site", "Sec-Fetch-Dest: iframe", "Sec-Fetch-Mode: navigate"],
            verdicts: [("w", "expected-not-sent", "third-party-blocking")]),
    ]

    @Test func eachRequestIsJudgedAgainstTheJarInTheLogTheInspectorAndTheTimeline() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.rules.write(toFile: dir + "/r.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(
            [
                "--rules", dir + "/r.rules", "--log", dir + "/log.jsonl", "--ui", "127.0.0.1:0", "--resolve",
                "app.site.test:127.0.0.1",
            ], environment: ["COOKIE_PROXY_HOME": dir])
        let ui = try InspectorEndToEndTests.UI(proxy)
        var bodies: [String] = []
        for step in Self.steps {
            let r = try curl(
                ["-s", "-x", proxy.url] + step.headers.flatMap { ["-H", $0] }
                    + ["http://\(step.host):\(upstream.port)\(step.path)"])
            #expect(r.status == 0, "\(r.stderr)")
            bodies.append(r.text)
        }
        // The request-cookie rule took ga out before the upstream; sid kept its bytes.
        #expect(bodies[2].contains("COOKIE[sid=s1]"), "\(bodies[2])")

        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let records = try String(contentsOfFile: dir + "/log.jsonl", encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        // One cookies-sent record for each request where something was not as expected, with all its verdicts.
        let judged = records.filter { $0["record"] as? String == "cookies-sent" }
        let expected = Self.steps.filter { $0.verdicts.contains { $0.1 != "sent-as-expected" } }
        #expect(judged.count == expected.count)
        for (record, step) in zip(judged, expected) {
            let verdicts = record["verdicts"] as? [[String: Any]] ?? []
            #expect(verdicts.map { $0["cookie"] as? String } == step.verdicts.map(\.0))
            #expect(verdicts.map { $0["verdict"] as? String } == step.verdicts.map(\.1))
            #expect(
                verdicts.map { ($0["reason"] as? [String: Any])?["code"] as? String } == step.verdicts.map(\.2),
                "\(record)")
            // Values are redacted unless --log-values, written as before/after write them: `[h:` 8 hex digits `]`.
            for value in verdicts.flatMap({ [$0["sent"], $0["expected"]] }).compactMap({ $0 as? String }) {
                #expect(value.wholeMatch(of: /\[h:[0-9a-f]{8}\]/) != nil, "\(value)")
            }
        }
        let third = try #require(judged.last?["verdicts"] as? [[String: Any]])
        #expect(((third[0]["reason"] as? [String: Any])?["engines"] as? [String])?.contains("WKWebView") == true)
        #expect(judged.last?["site"] as? String == "cross-site-subresource")
        // The request-cookie edit: a transformation record on the request side.
        let edits = records.filter { $0["side"] as? String == "request" }
        #expect(edits.count == 1)
        #expect(edits.first?["cookie"] as? String == "ga")
        #expect(edits.first?["rules"] as? [String] == ["no tracking upstream"])
        #expect(edits.first?["after"] is NSNull)
        _ = ui
    }

    @Test func theInspectorShowsVerdictsAndACookiesTimeline() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let upstream = try Upstream()
        let proxy = try Proxy(
            ["--log", "none", "--ui", "127.0.0.1:0", "--resolve", "app.site.test:127.0.0.1"],
            environment: ["COOKIE_PROXY_HOME": dir])
        let ui = try InspectorEndToEndTests.UI(proxy)
        for step in Self.steps.prefix(5) {
            _ = try curl(
                ["-s", "-o", "/dev/null", "-x", proxy.url] + step.headers.flatMap { ["-H", $0] }
                    + ["http://\(step.host):\(upstream.port)\(step.path)"])
        }
        let rows = try #require(try ui.json("/api/exchanges") as? [[String: Any]])
        #expect(rows.count == 5)
        let counts = rows.map { ($0["verdicts"] as? [String: Int]) ?? [:] }
        // The login judged nothing (no verdicts key); the others one verdict each.
        #expect(counts.map { $0["sent-as-expected"] ?? -1 } == [-1, 1, 1, 0, 0])
        #expect(counts.map { $0["sent-not-set"] ?? -1 } == [-1, 0, 1, 0, 0])
        #expect(counts.map { $0["sent-other-value"] ?? -1 } == [-1, 0, 0, 1, 0])
        #expect(counts.map { $0["expected-not-sent"] ?? -1 } == [-1, 0, 0, 0, 1])
        let last = try #require(rows.last?["seq"] as? Int)
        let detail = try #require(try ui.json("/api/exchanges/\(last)") as? [String: Any])
        let lifecycle = try #require(detail["lifecycle"] as? [String: Any])
        #expect((lifecycle["client"] as? String)?.hasPrefix("127.0.0.1 curl/") == true, "\(lifecycle)")
        #expect(lifecycle["engine"] as? String == "rfc6265bis")
        #expect(lifecycle["siteEvidence"] as? String == "Sec-Fetch-Site: same-origin")
        let verdicts = try #require(lifecycle["verdicts"] as? [[String: Any]])
        #expect(verdicts.first?["verdict"] as? String == "expected-not-sent")
        #expect(verdicts.first?["setBy"] as? Int == 1)

        let timeline = try #require(try ui.json("/api/cookies/sid?client=\(try ui.onlyClient())") as? [String: Any])
        let events = try #require(timeline["events"] as? [[String: Any]])
        // The same value sent twice in a row is one event counted twice.
        #expect(
            events.map { $0["kind"] as? String } == [
                "stored", "sent-as-expected", "sent-other-value", "expected-not-sent",
            ])
        #expect(events.map { $0["count"] as? Int } == [1, 2, 1, 1])
        #expect(events.map { $0["lastRequestId"] as? Int } == [1, 3, 4, 5])
        #expect(
            events.first?["received"] as? String == "sid=[\(events.first?["value"] as? String ?? "?")]; Path=/"
                || (events.first?["received"] as? String)?.hasPrefix("sid=") == true)
        #expect(events.map { $0["requestId"] as? Int } == [1, 2, 4, 5])
        let other = try #require(try ui.json("/api/cookies/sid?client=10.0.0.9") as? [String: Any])
        #expect((other["events"] as? [Any])?.isEmpty == true)
        let har = try #require(try ui.json("/har") as? [String: Any])
        let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let extra = try #require(entries.last?["_cookieProxy"] as? [String: Any])
        #expect((extra["verdicts"] as? [[String: Any]])?.first?["verdict"] as? String == "expected-not-sent")
        #expect(
            (extra["client"] as? String)?.hasPrefix("127.0.0.1 curl/") == true
                && extra["engine"] as? String == "rfc6265bis")

        // The inspector's own HAR, audited offline, gives the verdicts the proxy gave (the values in it are the
        // log's keyed hashes, the same on both sides of each comparison).
        let exported = try ui.get("/har", ["Authorization: Bearer \(ui.token)"])
        try exported.body.write(toFile: dir + "/inspector.har", atomically: true, encoding: .utf8)
        let audit = try run(Paths.binary, ["audit", "--har", dir + "/inspector.har", "--format", "json"])
        #expect(audit.status == 1, "\(audit.stderr)")
        let summary = try #require(
            audit.text.split(separator: "\n").last.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }?["summary"] as? [String: Any])
        #expect(
            summary["verdicts"] as? [String: Int] == [
                "sent-as-expected": 2, "sent-not-set": 1, "sent-other-value": 1, "expected-not-sent": 1,
            ], "\(summary)")
    }

    /// One client, one key: the log's Set-Cookie records, its request-cookie records, its cookies-sent records and
    /// the inspector all name the client as the lifecycle tells it apart (by default on loopback the address and
    /// the User-Agent's product; with `--client-by header:NAME`, the header's value).
    @Test(arguments: [
        ([], "127.0.0.1 curl/"), (["--client-by", "header:X-Device"], "phone"),
    ])
    func everyRecordKindAndTheInspectorNameTheClientByOneKey(_ options: [String], _ key: String) throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try """
        rule "log every cookie" {
            log
        }

        rule "no tracking cookie upstream" {
            request-cookie remove track
        }

        """.write(toFile: dir + "/t.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(
            [
                "--log", dir + "/log.jsonl", "--ui", "127.0.0.1:0", "--rules", dir + "/t.rules", "--resolve",
                "app.site.test:127.0.0.1",
            ] + options, environment: ["COOKIE_PROXY_HOME": dir])
        let ui = try InspectorEndToEndTests.UI(proxy)
        let base = "http://app.site.test:\(upstream.port)"
        let device = ["-H", "X-Device: phone"]
        _ = try curl(["-s", "-o", "/dev/null", "-x", proxy.url] + device + [base + Self.setcookie(["sid=p"])])
        // Sends a cookie never set (sent-not-set: a cookies-sent record) and one a rule removes (a request record).
        _ = try curl(
            ["-s", "-o", "/dev/null", "-x", proxy.url] + device + [
                "-H", "Cookie: sid=p; other=1; track=1", "-H", "Sec-Fetch-Site: same-origin", base + "/read",
            ])
        let clients = try #require(try ui.json("/api/clients") as? [String])
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let records = try String(contentsOfFile: dir + "/log.jsonl", encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }.filter { $0["event"] == nil }
        let kinds = Set(
            records.map { ($0["record"] as? String) ?? ($0["side"] as? String).map { "\($0)-cookie" } ?? "set-cookie" })
        #expect(kinds == ["set-cookie", "request-cookie", "cookies-sent"], "\(records)")
        for record in records {
            #expect((record["client"] as? String)?.hasPrefix(key) == true, "\(record)")
        }
        #expect(clients.count == 1 && clients[0].hasPrefix(key), "\(clients)")
        #expect(Set(records.compactMap { $0["client"] as? String }) == Set(clients), "\(clients) \(records)")
    }

    /// Two devices behind one address told apart by a header: one's cookies are not expected from the other.
    @Test func clientsByHeaderKeepJarsApart() throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let upstream = try Upstream()
        let proxy = try Proxy(
            [
                "--log", dir + "/log.jsonl", "--ui", "off", "--client-by", "header:X-Device", "--resolve",
                "app.site.test:127.0.0.1",
            ], environment: ["COOKIE_PROXY_HOME": dir])
        let base = "http://app.site.test:\(upstream.port)"
        _ = try curl([
            "-s", "-o", "/dev/null", "-x", proxy.url, "-H", "X-Device: phone", base + Self.setcookie(["sid=p"]),
        ])
        for device in ["phone", "tablet"] {
            _ = try curl(
                [
                    "-s", "-o", "/dev/null", "-x", proxy.url, "-H", "X-Device: \(device)", "-H",
                    "Sec-Fetch-Site: same-origin", base + "/read",
                ])
        }
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let records = try String(contentsOfFile: dir + "/log.jsonl", encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }.filter { $0["record"] as? String == "cookies-sent" }
        #expect(records.map { $0["client"] as? String } == ["phone"])
        #expect(records.first.flatMap { ($0["verdicts"] as? [[String: Any]])?.first?["cookie"] as? String } == "sid")
        let bad = try run(Paths.binary, ["run", "--client-by", "cookie:x"])
        #expect(
            bad.status != 0 && bad.stderr.contains("--client-by must be auto, address or header:NAME"), "\(bad.stderr)")
    }
}

/// A real headless Chromium through the intercepting proxy: a widget's cookie set first-party, then the widget in a
/// cross-site iframe of another site's page (two names resolved to the local upstream). With third-party cookies
/// allowed the frame gets it and the proxy says sent as expected; with Chrome's "Block third-party cookies" it does
/// not, and the proxy says expected but not sent, third-party blocking. The same session, recorded as a HAR from the
/// DevTools protocol, gives `audit --har` the same verdict; sanitized, truncated and non-HAR files exit 2.
@Suite(.serialized) struct BrowserLifecycleEndToEndTests {
    @Test(arguments: [false, true])
    func aCrossSiteFrameGetsItsCookieUnlessThirdPartyCookiesAreBlocked(_ blocked: Bool) throws {
        #expect(BrowserEndToEndTests.chromium() != nil, "chromium is not installed (scripts/setup.sh installs it)")
        let (home, ca) = try (InterceptionEndToEndTests.home(), TestCA())
        defer { InterceptionEndToEndTests.remove(home, ca) }
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(
            [
                "--log", home + "/log.jsonl", "--ui", "127.0.0.1:0", "--intercept-all", "--resolve",
                "app.site.test:127.0.0.1", "--resolve", "widget.other.test:127.0.0.1", "--insecure-upstream",
                "app.site.test", "--insecure-upstream", "widget.other.test",
            ], environment: ["COOKIE_PROXY_HOME": home])
        let ui = try InspectorEndToEndTests.UI(proxy)
        let widget = "https://widget.other.test:\(upstream.port)"
        let set = "\(widget)/setcookie?c=\(InterceptionEndToEndTests.enc("w=1; SameSite=None; Secure; Path=/"))"
        let framing =
            "https://app.site.test:\(upstream.port)/frame?src=\(InterceptionEndToEndTests.enc(widget + "/read"))"
        let har = home + "/chromium.har"
        let result = try run(
            HTTP2EndToEndTests.python,
            [Paths.fixtures + "/chromium_lifecycle.py", proxy.url, set, framing, har]
                + (blocked ? ["block-third-party"] : []), timeout: 90)
        #expect(result.status == 0, "\(result.stderr)")
        let out = try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any] ?? [:]
        #expect(out["frameText"] as? String == (blocked ? "COOKIE[]" : "COOKIE[w=1]"), "\(out)")

        // The inspector's row for the framed request: its site and verdict.
        let rows = try #require(try ui.json("/api/exchanges") as? [[String: Any]])
        let read = try #require(
            rows.last {
                ($0["url"] as? String)?.contains("widget.other.test") == true
                    && ($0["url"] as? String)?.hasSuffix("/read") == true
            }, "\(rows)")
        #expect(read["site"] as? String == "cross-site-subresource")
        let counts = read["verdicts"] as? [String: Int] ?? [:]
        #expect(counts["sent-as-expected"] == (blocked ? 0 : 1), "\(counts)")
        #expect(counts["expected-not-sent"] == (blocked ? 1 : 0), "\(counts)")
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let judged = try String(contentsOfFile: home + "/log.jsonl", encoding: .utf8).split(separator: "\n").compactMap
        {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["record"] as? String == "cookies-sent" && ($0["url"] as? String)?.contains("/read") == true }
        if blocked {
            let verdict = try #require((judged.first?["verdicts"] as? [[String: Any]])?.first)
            #expect(verdict["cookie"] as? String == "w")
            #expect((verdict["reason"] as? [String: Any])?["code"] as? String == "third-party-blocking", "\(verdict)")
        } else {
            #expect(judged.isEmpty, "\(judged)")
        }

        // The HAR Chromium's DevTools protocol gave: the same verdict offline.
        let audit = try run(Paths.binary, ["audit", "--har", har, "--format", "json"])
        #expect(audit.status == (blocked ? 1 : 0), "\(audit.text) \(audit.stderr)")
        let lines = audit.text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let entry = try #require(
            lines.first { ($0["url"] as? String)?.hasSuffix("widget.other.test:\(upstream.port)/read") == true },
            "\(audit.text)")
        #expect(entry["site"] as? String == "cross-site-subresource")
        let verdicts = entry["verdicts"] as? [[String: Any]] ?? []
        #expect(
            verdicts.map { $0["verdict"] as? String } == [blocked ? "expected-not-sent" : "sent-as-expected"],
            "\(entry)")
        // The same as JUnit XML, read back by junitparser: the read of w is a case of its host, failed with the
        // verdict and its reason exactly when the verdict is not sent-as-expected.
        let junit = try run(Paths.binary, ["audit", "--har", har, "--format", "junit"])
        #expect(junit.status == (blocked ? 1 : 0), "\(junit.stderr)")
        try junit.text.write(toFile: home + "/report.xml", atomically: true, encoding: .utf8)
        let script = """
            import json, sys
            from junitparser import JUnitXml
            print(json.dumps([[s.name, c.name, [r.type for r in c.result]] for s in JUnitXml.fromfile(sys.argv[1]) for c in s]))
            """
        let parsed = try run(Paths.root + "/.build/test-python/bin/python", ["-c", script, home + "/report.xml"])
        let cases = try #require(try JSONSerialization.jsonObject(with: parsed.stdout) as? [[Any]], "\(parsed.stderr)")
        let readCase = try #require(
            cases.first {
                ($0[1] as? String)?.hasPrefix("w sent? (") == true && ($0[1] as? String)?.contains("/read") == true
            },
            "\(cases)")
        #expect(readCase[0] as? String == "widget.other.test")
        #expect((readCase[2] as? [String]) == (blocked ? ["expected-not-sent"] : []), "\(readCase)")

        if blocked {
            // Sanitized as Chrome's default export is: no Cookie or Set-Cookie header left.
            var document = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: har))) as? [String: Any])
            var log = document["log"] as! [String: Any]
            log["creator"] = ["name": "WebInspector", "version": "537.36"]
            log["entries"] = (log["entries"] as! [[String: Any]]).map { e in
                var e = e
                for side in ["request", "response"] {
                    var part = e[side] as! [String: Any]
                    part["headers"] = (part["headers"] as! [[String: Any]]).filter {
                        !["cookie", "set-cookie"].contains(($0["name"] as! String).lowercased())
                    }
                    e[side] = part
                }
                return e
            }
            document["log"] = log
            try JSONSerialization.data(withJSONObject: document).write(
                to: URL(fileURLWithPath: home + "/sanitized.har"))
            let sanitized = try run(Paths.binary, ["audit", "--har", home + "/sanitized.har"])
            #expect(sanitized.status == 2)
            #expect(sanitized.stderr.contains("with sensitive data"), "\(sanitized.stderr)")
            // From another tool, with no cookie anywhere (no cookies arrays either): not an error, but said, with
            // how each tool exports cookies.
            let plain = """
                {"log": {"version": "1.2", "creator": {"name": "Charles", "version": "4"}, "entries": [{
                "startedDateTime": "2026-12-04T09:00:00.000Z", "time": 1,
                "request": {"method": "GET", "url": "https://app.test/", "httpVersion": "HTTP/1.1", "headers": [],
                  "cookies": [], "queryString": [], "headersSize": -1, "bodySize": 0},
                "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": [],
                  "cookies": [], "content": {"size": 0, "mimeType": "text/html"}, "redirectURL": "",
                  "headersSize": -1, "bodySize": 0}, "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}}]}}
                """
            try plain.write(toFile: home + "/plain.har", atomically: true, encoding: .utf8)
            let noCookies = try run(Paths.binary, ["audit", "--har", home + "/plain.har"])
            #expect(noCookies.status == 0, "\(noCookies.stderr)")
            #expect(
                noCookies.stderr.contains(
                    "note: \(home)/plain.har has 1 entries and not one Cookie or Set-Cookie header (exported by Charles)"
                ),
                "\(noCookies.stderr)")
            for tool in ["Chrome", "Firefox", "Safari", "Charles", "Proxyman"] {
                #expect(noCookies.stderr.contains(tool + ":") || noCookies.stderr.contains(tool + " and"), "\(tool)")
            }
            // Truncated in the middle of its entries, and JSON that is no HAR: exit 2 with where.
            let bytes = try Data(contentsOf: URL(fileURLWithPath: har))
            try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: home + "/truncated.har"))
            let truncated = try run(Paths.binary, ["audit", "--har", home + "/truncated.har"])
            #expect(truncated.status == 2)
            #expect(truncated.stderr.contains("log.entries["), "\(truncated.stderr)")
            #expect(truncated.stderr.contains("truncated"), "\(truncated.stderr)")
            try Data("{\"name\": \"package.json\", \"version\": \"1.0.0\"}".utf8).write(
                to: URL(fileURLWithPath: home + "/other.json"))
            let other = try run(Paths.binary, ["audit", "--har", home + "/other.json"])
            #expect(other.status == 2)
            #expect(other.stderr.contains("not a HAR file: no 'log' object"), "\(other.stderr)")
        }
    }
}

/// `run --emulate safari`: in a cross-site subresource or frame, an unpartitioned cookie is neither kept (its
/// Set-Cookie dropped) nor sent (taken out of the Cookie header), a partitioned one is; the log says which rule
/// blocked which cookie. Without the switch nothing is touched.
@Suite(.serialized) struct EmulateEndToEndTests {
    @Test(arguments: [true, false])
    func safariBlocksUnpartitionedThirdPartyCookies(_ emulate: Bool) throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let upstream = try Upstream()
        let proxy = try Proxy(
            ["--log", dir + "/log.jsonl", "--ui", "off"] + (emulate ? ["--emulate", "safari"] : []),
            environment: ["COOKIE_PROXY_HOME": dir])
        let base = "http://localhost:\(upstream.port)"
        let thirdParty = [
            "-H", "Sec-Fetch-Site: cross-site", "-H", "Sec-Fetch-Dest: iframe", "-H", "Sec-Fetch-Mode: navigate",
        ]
        // First party: both cookies kept (loopback is a secure context, so Secure cookies stick over http).
        let set = LifecycleEndToEndTests.setcookie([
            "u=1; SameSite=None; Secure", "p=2; SameSite=None; Secure; Partitioned",
        ])
        let first = try curl([
            "-s", "-D", "-", "-o", "/dev/null", "-x", proxy.url, "-H", "Sec-Fetch-Site: none", base + set,
        ])
        #expect(first.text.contains("Set-Cookie: u=1") && first.text.contains("Set-Cookie: p=2"))
        // Third party: the request's unpartitioned cookie is taken out, the partitioned one sent.
        let read = try curl(["-s", "-x", proxy.url, "-H", "Cookie: u=1; p=2"] + thirdParty + [base + "/read"])
        #expect(read.text.contains(emulate ? "COOKIE[p=2]" : "COOKIE[u=1; p=2]"), "\(read.text)")
        // Third party: its unpartitioned Set-Cookie is dropped, the partitioned one forwarded.
        let again = LifecycleEndToEndTests.setcookie([
            "t=1; SameSite=None; Secure", "q=1; SameSite=None; Secure; Partitioned",
        ])
        let response = try curl(["-s", "-D", "-", "-o", "/dev/null", "-x", proxy.url] + thirdParty + [base + again])
        #expect(response.text.contains("Set-Cookie: t=1") == !emulate, "\(response.text)")
        #expect(response.text.contains("Set-Cookie: q=1"))
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let records = try String(contentsOfFile: dir + "/log.jsonl", encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }.filter { $0["record"] == nil }
        let blocked = records.map {
            "\($0["side"] as? String ?? "response") \($0["cookie"] as? String ?? "") \(($0["rules"] as? [String])?.first ?? "")"
        }
        #expect(
            blocked
                == (emulate
                    ? [
                        "request u Safari: third-party Cookie not sent",
                        "response t Safari: third-party Set-Cookie blocked",
                    ]
                    : []),
            "\(blocked)")
    }
}
