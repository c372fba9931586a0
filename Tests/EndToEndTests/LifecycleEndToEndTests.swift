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
            // Values are redacted unless --log-values.
            #expect(!verdicts.contains { ($0["sent"] as? String) == "s1" || ($0["sent"] as? String) == "changed" })
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
        #expect(counts.map { $0["sent-as-expected"] ?? -1 } == [0, 1, 1, 0, 0])
        #expect(counts.map { $0["sent-not-set"] ?? -1 } == [0, 0, 1, 0, 0])
        #expect(counts.map { $0["sent-other-value"] ?? -1 } == [0, 0, 0, 1, 0])
        #expect(counts.map { $0["expected-not-sent"] ?? -1 } == [0, 0, 0, 0, 1])
        let last = try #require(rows.last?["seq"] as? Int)
        let detail = try #require(try ui.json("/api/exchanges/\(last)") as? [String: Any])
        let lifecycle = try #require(detail["lifecycle"] as? [String: Any])
        #expect(lifecycle["client"] as? String == "127.0.0.1")
        #expect(lifecycle["siteEvidence"] as? String == "Sec-Fetch-Site: same-origin")
        let verdicts = try #require(lifecycle["verdicts"] as? [[String: Any]])
        #expect(verdicts.first?["verdict"] as? String == "expected-not-sent")
        #expect(verdicts.first?["setBy"] as? Int == 1)

        let timeline = try #require(try ui.json("/api/cookies/sid?client=127.0.0.1") as? [String: Any])
        let events = try #require(timeline["events"] as? [[String: Any]])
        #expect(
            events.map { $0["kind"] as? String } == [
                "stored", "sent-as-expected", "sent-as-expected", "sent-other-value", "expected-not-sent",
            ])
        #expect(
            events.first?["received"] as? String == "sid=[\(events.first?["value"] as? String ?? "?")]; Path=/"
                || (events.first?["received"] as? String)?.hasPrefix("sid=") == true)
        #expect(events.map { $0["requestId"] as? Int } == [1, 2, 3, 4, 5])
        let other = try #require(try ui.json("/api/cookies/sid?client=10.0.0.9") as? [String: Any])
        #expect((other["events"] as? [Any])?.isEmpty == true)
        let har = try #require(try ui.json("/har") as? [String: Any])
        let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let extra = try #require(entries.last?["_cookieProxy"] as? [String: Any])
        #expect((extra["verdicts"] as? [[String: Any]])?.first?["verdict"] as? String == "expected-not-sent")
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
        #expect(bad.status != 0 && bad.stderr.contains("--client-by must be address or header:NAME"), "\(bad.stderr)")
    }
}
