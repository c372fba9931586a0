import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Rules and the log through the real proxy binary with curl and a real upstream.
@Suite(.serialized) struct RulesEndToEndTests {
    static func tempDir() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cp-rules-\(getpid())-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func setCookieURL(_ upstream: Upstream, _ cookies: [String]) -> String {
        let query = cookies.map { "c=" + $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }.joined(
            separator: "&")
        return "\(upstream.base)/setcookie?\(query)"
    }

    static func setCookieLines(_ headers: String) -> [String] {
        headers.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("set-cookie:") }.map {
            String($0.dropFirst("set-cookie: ".count))
        }
    }

    static let rules = """
        rule "share login with subdomains" {
            host     127.0.0.1
            cookie   Bin-Auth-Token
            domain   add-dot
            secure
            samesite lax
        }
        """

    @Test func rulesRewriteTargetedCookiesAndTheLogRecordsTheChangeWithValuesRedacted() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.rules.write(toFile: "\(dir)/login.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(["--rules", "\(dir)/login.rules", "--log", "\(dir)/log.jsonl"])
        let url = Self.setCookieURL(
            upstream,
            ["Bin-Auth-Token=s3cr3t; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly", "other=1; Path=/"])
        let result = try curl(["-D", "-", "-o", "/dev/null", "-x", proxy.url, url])
        #expect(
            Self.setCookieLines(result.text) == [
                "Bin-Auth-Token=s3cr3t; Path=/; Domain=.bin.example.com; Max-Age=604800; HttpOnly; Secure; SameSite=Lax",
                "other=1; Path=/",
            ])
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let log = try String(contentsOfFile: "\(dir)/log.jsonl", encoding: .utf8)
        let lines = log.split(separator: "\n")
        #expect(lines.count == 1)
        let record = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(record["cookie"] as? String == "Bin-Auth-Token")
        #expect(record["rules"] as? [String] == ["share login with subdomains"])
        #expect(record["method"] as? String == "GET")
        #expect((record["url"] as? String)?.hasPrefix("http://127.0.0.1:\(upstream.port)/setcookie") == true)
        #expect(record["status"] as? Int == 200)
        // The client as the lifecycle tells it apart (on loopback: the address and the User-Agent's product).
        #expect((record["client"] as? String)?.hasPrefix("127.0.0.1 curl/") == true, "\(record)")
        #expect((record["requestId"] as? Int ?? 0) > 0)
        // (The test's URL carries the cookie in its query; the cookie fields must not.)
        #expect(!(record["before"] as? String ?? "s3cr3t").contains("s3cr3t"))
        #expect(!(record["after"] as? String ?? "s3cr3t").contains("s3cr3t"))
        #expect((record["before"] as? String)?.hasPrefix("Bin-Auth-Token=[h:") == true)
        let changes = try #require(record["changes"] as? [[String: Any]])
        #expect(changes.map { $0["op"] as? String } == ["set", "add", "add"])
        let findings = try #require(record["findings"] as? [[String: Any]])
        // Domain=.bin.example.com does not cover 127.0.0.1: browsers will drop it, and the log says so.
        #expect(
            findings.contains { $0["code"] as? String == "domain-mismatch" && $0["severity"] as? String == "rejects" })
    }

    @Test func dryRunChangesNothingAndLogsEveryCookie() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.rules.write(toFile: "\(dir)/login.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy([
            "--rules", "\(dir)/login.rules", "--dry-run", "--log", "\(dir)/log.jsonl", "--log-values",
        ])
        let url = Self.setCookieURL(upstream, ["Bin-Auth-Token=abc; Domain=127.0.0.1", "other=1; SameSite=None"])
        let result = try curl(["-D", "-", "-o", "/dev/null", "-x", proxy.url, url])
        #expect(Self.setCookieLines(result.text) == ["Bin-Auth-Token=abc; Domain=127.0.0.1", "other=1; SameSite=None"])
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        let records = try String(contentsOfFile: "\(dir)/log.jsonl", encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(records.count == 2)
        #expect(records.allSatisfy { $0["dryRun"] as? Bool == true })
        #expect(records[0]["after"] as? String == "Bin-Auth-Token=abc; Domain=.127.0.0.1; Secure; SameSite=Lax")
        #expect((records[1]["findings"] as? [[String: Any]])?.first?["code"] as? String == "samesite-none-insecure")
    }

    /// The same over HTTP/1.1 (a forward proxy) and HTTP/2 (h2c to `--reverse`, the Cookie header sent as two
    /// crumbs that the proxy joins before renaming back, RFC 9113 §8.2.3).
    @Test(arguments: ["HTTP/1.1", "HTTP/2"])
    func requestAndResponseHeaderRulesApply(_ version: String) throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try """
        rule "headers" {
            host 127.0.0.1
            request-header set X-Debug on
            response-header set X-Proxied yes
        }
        rule "rename session" {
            cookie sid
            rename app_sid
        }
        """.write(toFile: "\(dir)/h.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let h2 = version == "HTTP/2"
        let proxy = try Proxy(
            ["--rules", "\(dir)/h.rules", "--log", "\(dir)/log.jsonl"] + (h2 ? ["--reverse", upstream.base] : []))
        // Forward: the absolute URL through -x; HTTP/2: the same path to the reverse proxy, h2c.
        let via = h2 ? ["--http2-prior-knowledge"] : ["-x", proxy.url]
        func url(_ u: String) -> String { h2 ? u.replacingOccurrences(of: upstream.base, with: proxy.url) : u }
        let set = try curl(["-D", "-", "-o", "/dev/null"] + via + [url(Self.setCookieURL(upstream, ["sid=1"]))])
        #expect(Self.setCookieLines(set.text) == ["app_sid=1"], "\(set.text)")
        #expect(set.text.lowercased().contains("x-proxied: yes\r\n"))
        // The browser sends the renamed cookie back; the backend sees its own name.
        let cookie = h2 ? ["-H", "Cookie: app_sid=1", "-H", "Cookie: x=2"] : ["-H", "Cookie: app_sid=1; x=2"]
        let read = try curl(via + cookie + [url("\(upstream.base)/read")])
        #expect(read.text.contains("COOKIE[sid=1; x=2]"), "\(read.text)")
    }

    @Test func invalidRulesAtStartFailWithPositionAndExit2() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "rule \"x\" {\n    samesite laxx\n}\n".write(toFile: "\(dir)/bad.rules", atomically: true, encoding: .utf8)
        let result = try run(Paths.binary, ["run", "--listen", "127.0.0.1:0", "--rules", "\(dir)/bad.rules"])
        #expect(result.status == 2)
        #expect(
            result.stderr.contains(
                "\(dir)/bad.rules:2:14: error: samesite must be strict, lax, none or remove, not 'laxx'; did you mean 'lax'?"
            ))
    }

    /// Rules are swapped under traffic: no request fails; an invalid edit keeps the last good rules.
    @Test func hotReloadUnderTrafficLosesNoRequest() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = "\(dir)/r.rules"
        try "rule \"a\" {\n    secure\n}\n".write(toFile: file, atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(["--rules", file, "--log", "\(dir)/log.jsonl"])
        let url = Self.setCookieURL(upstream, ["t=1"])
        let failures = LockedText()
        let seen = LockedText()
        let stop = LockedText()
        let proxyURL = proxy.url
        let traffic = Thread {
            while stop.value.isEmpty {
                guard let r = try? curl(["-sS", "-D", "-", "-o", "/dev/null", "-x", proxyURL, url]), r.status == 0,
                    r.text.hasPrefix("HTTP/1.1 200")
                else {
                    failures.append("x")
                    continue
                }
                seen.append(Self.setCookieLines(r.text).first ?? "?")
                seen.append("\n")
            }
        }
        traffic.start()
        usleep(500_000)
        try "rule \"a\" {\n    httponly\n}\n".write(toFile: file, atomically: true, encoding: .utf8)
        usleep(1_800_000)
        try "rule \"a\" {\n    httponlyy\n}\n".write(toFile: file, atomically: true, encoding: .utf8)
        usleep(1_800_000)
        proxy.process.signal(SIGHUP)
        usleep(800_000)
        stop.append("stop")
        while !traffic.isFinished { usleep(10_000) }
        #expect(failures.value.isEmpty)
        let results = seen.value.split(separator: "\n").map(String.init)
        #expect(results.first == "t=1; Secure")
        #expect(results.last == "t=1; HttpOnly")  // the invalid edit left the last good rules in force
        #expect(Set(results).isSubset(of: ["t=1; Secure", "t=1; HttpOnly"]))
        #expect(proxy.process.stderr.contains("rules reloaded (file changed)"))
        #expect(proxy.process.stderr.contains("rules NOT reloaded"))
        #expect(proxy.process.stderr.contains("r.rules:2:5: error: unknown directive 'httponlyy'"))
        #expect(proxy.process.stderr.contains("(SIGHUP)"))
    }

    /// An editor's save (truncate, then write a moment later) is one change, read once, and a file that stays
    /// empty does not replace its rules: the last good rules stay in force, with a warning that names the file.
    @Test func anEditorsSaveIsOneReloadAndAnEmptiedFileKeepsTheLastGoodRules() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = "\(dir)/r.rules"
        try "rule \"a\" {\n    secure\n}\n".write(toFile: file, atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let proxy = try Proxy(["--rules", file, "--log", "none", "--ui", "off"])
        let url = Self.setCookieURL(upstream, ["t=1"])
        func line() throws -> String? {
            Self.setCookieLines(try curl(["-sS", "-D", "-", "-o", "/dev/null", "-x", proxy.url, url]).text).first
        }
        // Truncate-then-write, as editors that save in place do, 30 ms apart.
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.truncate(atOffset: 0)
        usleep(30_000)
        try handle.write(contentsOf: Data("rule \"a\" {\n    httponly\n}\n".utf8))
        try handle.close()
        _ = try proxy.process.waitForLine(startingWith: "cookie-proxy: rules reloaded (file changed)", onStderr: true)
        #expect(try line() == "t=1; HttpOnly")
        // Emptied and left so: not read as "no rules".
        try "".write(toFile: file, atomically: false, encoding: .utf8)
        let warning = try proxy.process.waitForLine(
            startingWith: "cookie-proxy: WARNING: rules NOT reloaded", onStderr: true)
        #expect(warning.contains("\(file) is empty; the last good rules (1) stay in force"), "\(warning)")
        #expect(try line() == "t=1; HttpOnly")
        let stderr = proxy.process.stderr
        #expect(stderr.components(separatedBy: "rules reloaded (file changed)").count == 2, "\(stderr)")
        #expect(!stderr.contains("0 rules from"), "\(stderr)")
        // A comment is a file meant to hold no rules.
        try "# no rules for now\n".write(toFile: file, atomically: false, encoding: .utf8)
        _ = try proxy.process.waitForLine(
            startingWith: "cookie-proxy: rules reloaded (file changed): 0 rules", onStderr: true)
        #expect(try line() == "t=1")
    }
}
