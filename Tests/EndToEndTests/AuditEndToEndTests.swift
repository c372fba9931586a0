import Foundation
import TestSupport
import Testing

/// `cookie-proxy audit` against local upstreams (http, and https with a test CA).
@Suite(.serialized) struct AuditEndToEndTests {
    static func enc(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }

    /// A redirect chain that sets cookies on each hop, with a cross-domain hop (127.0.0.1 → localhost).
    static func chain(_ upstream: Upstream) -> String {
        let last = "http://localhost:\(upstream.port)/read"
        let second =
            "http://localhost:\(upstream.port)/setcookie?c=\(enc("step2=b; Path=/"))&c=\(enc("foreign=x; Domain=example.com"))&location=\(enc(last))"
        return
            "http://127.0.0.1:\(upstream.port)/setcookie?c=\(enc("step1=a; Path=/; HttpOnly"))&c=\(enc("cross=1; SameSite=None"))&location=\(enc(second))"
    }

    @Test func followsRedirectsCarriesCookiesAndReportsWhatBrowsersDrop() throws {
        let upstream = try Upstream()
        let result = try run(Paths.binary, ["audit", "--format", "json", Self.chain(upstream)])
        #expect(result.status == 1, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        let hops = try #require(report["hops"] as? [[String: Any]])
        #expect(hops.map { $0["status"] as? Int } == [302, 302, 200])
        #expect((hops[2]["url"] as? String)?.hasPrefix("http://localhost:") == true)
        let first = try #require(hops[0]["cookies"] as? [[String: Any]])
        #expect(first.map { $0["name"] as? String } == ["step1", "cross"])
        #expect(first[1]["rejected"] as? String == "SameSite=None requires Secure (§5.7 step 19)")
        #expect(first[1]["findings"] as? [String] == ["samesite-none-insecure", "webkit-keeps-samesite-none-insecure"])
        let second = try #require(hops[1]["cookies"] as? [[String: Any]])
        #expect(second[1]["stored"] as? Bool == false)
        #expect((second[1]["rejected"] as? String)?.contains("does not domain-match Domain=example.com") == true)
        // step1 was set by 127.0.0.1: the cross-domain hop to localhost does not carry it.
        #expect(report["cookieHeader"] as? String == "step2=b")
        let dropped = try #require(report["dropped"] as? [[String: Any]])
        #expect(dropped.map { $0["name"] as? String } == ["cross", "foreign"])
    }

    /// `--resolve HOST:ADDRESS` as `run` takes it: a name DNS does not know reaches the local upstream, on every
    /// hop of a redirect chain (the cookie set on the first hop comes back on the second, under that name).
    /// A later hop that fails keeps the hops before it: they are printed (text and JSON) with their cookies, then
    /// the failure naming the redirect that led there; the status is 2 (the audit is incomplete).
    @Test(arguments: ["text", "json"])
    func aFailedLaterHopKeepsTheHopsBeforeIt(_ format: String) throws {
        let upstream = try Upstream()
        let url =
            "http://127.0.0.1:\(upstream.port)/setcookie?c=first%3D1&location="
            + InterceptionEndToEndTests.enc("http://127.0.0.1:9/next")
        let result = try run(Paths.binary, ["audit", "--format", format, url])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("hop 2: cannot connect to 127.0.0.1:9"), "\(result.stderr)")
        #expect(result.stderr.contains("the redirect from GET \(url), Location: http://127.0.0.1:9/next, led there"))
        if format == "text" {
            #expect(result.text.contains("1. GET \(url) → 302"), "\(result.text)")
            #expect(result.text.contains("Set-Cookie: first=1"), "\(result.text)")
            #expect(result.text.contains("2. FAILED: hop 2: cannot connect"), "\(result.text)")
        } else {
            let report = try #require(try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any])
            #expect((report["hops"] as? [Any])?.count == 1, "\(report)")
            #expect((report["failure"] as? String)?.hasPrefix("hop 2: cannot connect") == true, "\(report)")
        }
    }

    @Test func resolveSendsANameToAnAddressOnEveryHop() throws {
        let upstream = try Upstream()
        let url =
            "http://app.test:\(upstream.port)/setcookie?c=\(Self.enc("sid=1; Path=/"))&location=\(Self.enc("/read"))"
        let result = try run(Paths.binary, ["audit", "--resolve", "app.test:127.0.0.1", url])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.text.contains(
                "Cookie header a browser would send to http://app.test:\(upstream.port)/read:\n  sid=1"),
            "\(result.text)")
        let refused = try run(Paths.binary, ["audit", "--resolve", "app.test", url])
        #expect(refused.status == 2 && refused.stderr.contains("must be HOST:ADDRESS"), "\(refused.stderr)")
    }

    /// `--format junit` is JUnit XML a CI system reads: junitparser (PyPI) finds a suite per host, a case per
    /// Set-Cookie line, and a failure for each cookie a browser would not keep, with the reason.
    @Test func junitIsAReportACISystemReads() throws {
        let upstream = try Upstream()
        let result = try run(Paths.binary, ["audit", "--format", "junit", Self.chain(upstream)])
        #expect(result.status == 1, "\(result.stderr)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cp-junit-\(getpid()).xml").path
        try result.text.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let script = """
            import json, sys
            from junitparser import JUnitXml
            out = []
            for suite in JUnitXml.fromfile(sys.argv[1]):
                for case in suite:
                    out.append([suite.name, case.name.split(" ")[0], [r.message for r in case.result]])
            print(json.dumps(out))
            """
        let parsed = try run(Paths.root + "/.build/test-python/bin/python", ["-c", script, file])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let cases = try #require(try JSONSerialization.jsonObject(with: parsed.stdout) as? [[Any]])
        #expect(cases.map { $0[0] as? String } == ["127.0.0.1", "127.0.0.1", "localhost", "localhost"], "\(cases)")
        #expect(cases.map { $0[1] as? String } == ["step1", "cross", "step2", "foreign"])
        let failures = cases.map { ($0[2] as? [String?]) ?? [] }
        #expect(failures[0].isEmpty && failures[2].isEmpty, "\(failures)")
        #expect(failures[1].first??.contains("SameSite=None requires Secure") == true, "\(failures)")
        #expect(failures[3].first??.contains("does not domain-match") == true, "\(failures)")
    }

    /// `--format sarif` is SARIF 2.1.0 sarif-tools (PyPI) reads: a result per finding at the hop's URL, what
    /// browsers reject and the jar's refusals as errors.
    @Test func sarifIsAReportCodeScanningReads() throws {
        let upstream = try Upstream()
        let result = try run(Paths.binary, ["audit", "--format", "sarif", Self.chain(upstream)])
        #expect(result.status == 1, "\(result.stderr)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cp-sarif-\(getpid()).sarif").path
        try result.text.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let script = """
            import json, sys
            from sarif import loader
            print(json.dumps(sorted([r["Severity"], r["Code"], r["Location"].split("?")[0]]
                                    for r in loader.load_sarif_file(sys.argv[1]).get_records())))
            """
        let parsed = try run(Paths.root + "/.build/test-python/bin/python", ["-c", script, file])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let records = try #require(try JSONSerialization.jsonObject(with: parsed.stdout) as? [[String]])
        let codes = records.map { $0[1] }
        #expect(codes.contains("samesite-none-insecure") && codes.contains("jar-rejected"), "\(records)")
        #expect(records.filter { $0[1] == "samesite-none-insecure" }.allSatisfy { $0[0] == "error" }, "\(records)")
    }

    @Test func eachHopSendsTheCookiesTheJarHoldsForIt() throws {
        let upstream = try Upstream()
        let url =
            "http://127.0.0.1:\(upstream.port)/setcookie?c=\(Self.enc("sid=1; Path=/"))&location=\(Self.enc("/read"))"
        let result = try run(Paths.binary, ["audit", url, "-b", "pre=0"])
        #expect(result.status == 0)
        #expect(
            result.text.contains(
                "Cookie header a browser would send to http://127.0.0.1:\(upstream.port)/read:\n  pre=0; sid=1"))
        #expect(result.text.contains("Every cookie would be kept."))
    }

    @Test func rulesShowBeforeAndAfter() throws {
        let upstream = try Upstream()
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("audit-\(getpid()).rules").path
        try "rule \"fix\" {\n    where samesite-none\n    samesite lax\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let url = "http://127.0.0.1:\(upstream.port)/setcookie?c=\(Self.enc("x=1; SameSite=None"))"
        let result = try run(Paths.binary, ["audit", "--rules", rules, "--format", "json", url])
        #expect(result.status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        let cookie = try #require(((report["hops"] as? [[String: Any]])?[0]["cookies"] as? [[String: Any]])?[0])
        #expect(cookie["after"] as? String == "x=1; SameSite=Lax")
        #expect(cookie["rules"] as? [String] == ["fix"])
    }

    @Test func httpsWithATestCAAndAVerificationFailure() throws {
        let ca = try TestCA()
        defer { try? FileManager.default.removeItem(atPath: ca.dir) }
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let url = "https://localhost:\(upstream.port)/setcookie?c=\(Self.enc("s=1; Secure; SameSite=None; Path=/"))"
        let ok = try run(Paths.binary, ["audit", "--cacert", ca.caCert, url])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.text.contains("verdict:  stored"))
        let failed = try run(Paths.binary, ["audit", url])
        #expect(failed.status == 2)
        #expect(failed.stderr.hasPrefix("error: TLS verification failed for localhost:"))
        let insecure = try run(Paths.binary, ["audit", "-k", url])
        #expect(insecure.status == 0)
    }

    @Test(arguments: [
        (["--timeout", "1"], "/slow?t=3", "error: timed out after 1.0 s"),
        ([], "REFUSED", "error: cannot connect to 127.0.0.1:1"),
        ([], "DNS", "error: cannot resolve host 'no-such-host.invalid'"),
    ])
    func networkErrorsExitWith2AndOneClearLine(_ extra: [String], _ path: String, _ message: String) throws {
        let upstream = try Upstream()
        let url =
            path == "REFUSED"
            ? "http://127.0.0.1:1/" : path == "DNS" ? "http://no-such-host.invalid/" : upstream.base + path
        let result = try run(Paths.binary, ["audit"] + extra + [url])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }
}

extension AuditEndToEndTests {
    /// The JSON report, compared exactly (the port is the only thing that varies between runs).
    @Test func jsonOutputIsExactlyTheDocumentedShape() throws {
        let upstream = try Upstream()
        let url =
            "http://127.0.0.1:\(upstream.port)/setcookie?c=\(Self.enc("a=1; Path=/; HttpOnly"))&c=\(Self.enc("b=2; SameSite=None"))&location=\(Self.enc("http://localhost:\(upstream.port)/read"))"
        let result = try run(Paths.binary, ["audit", "--format", "json", url])
        #expect(result.status == 1)
        let text = result.text.replacingOccurrences(of: String(upstream.port), with: "PORT")
        let first =
            "http://127.0.0.1:PORT/setcookie?c=a%3D1%3B%20Path%3D%2F%3B%20HttpOnly&c=b%3D2%3B%20SameSite%3DNone&location=http%3A%2F%2Flocalhost%3APORT%2Fread"
        #expect(
            text
                == """
                {"hops":[{"url":"\(first)","method":"GET","status":302,"location":"http://localhost:PORT/read","cookies":[{"setCookie":"a=1; Path=/; HttpOnly","name":"a","after":null,"rules":[],"stored":true,"rejected":null,"findings":[],"engines":null},{"setCookie":"b=2; SameSite=None","name":"b","after":null,"rules":[],"stored":false,"rejected":"SameSite=None requires Secure (§5.7 step 19)","findings":["samesite-none-insecure","webkit-keeps-samesite-none-insecure"],"engines":"rejects: Chromium, Firefox; WebKit stores it"}]},{"url":"http://localhost:PORT/read","method":"GET","status":200,"location":null,"cookies":[]}],"finalUrl":"http://localhost:PORT/read","cookieHeader":"","jar":[{"name":"a","domain":"127.0.0.1","hostOnly":true,"path":"/","secure":false,"httpOnly":true,"sameSite":"Default","expires":null}],"dropped":[{"name":"b","url":"\(first)","reason":"SameSite=None requires Secure (§5.7 step 19)"}],"stopped":null,"failure":null}

                """)
    }
}
