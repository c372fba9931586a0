import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// https interception with real clients (curl, Python, openssl s_client, Chromium) and an https upstream
/// whose certificate comes from a test CA.
@Suite(.serialized) struct InterceptionEndToEndTests {
    static func home() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cp-ca-home-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func remove(_ home: String, _ ca: TestCA) {
        try? FileManager.default.removeItem(atPath: home)
        try? FileManager.default.removeItem(atPath: ca.dir)
    }

    static func enc(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }

    @Test func rulesRewriteCookiesOnInterceptedHttpsAndTheLeafIsMintedForTheHost() throws {
        let (home, ca) = try (Self.home(), TestCA())
        defer { Self.remove(home, ca) }
        let rules = home + "/fix.rules"
        try "rule \"fix\" {\n    host localhost\n    where samesite-none\n    secure\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(
            ["--rules", rules, "--upstream-ca", ca.caCert, "--log", home + "/log.jsonl"],
            environment: ["COOKIE_PROXY_HOME": home])
        #expect(proxy.process.stderr.contains("created a local CA in \(home)"))
        #expect(proxy.process.stderr.contains("intercepting localhost (targeted by rules)"))
        // The CA private key is readable by its owner only.
        var info = stat()
        #expect(stat(home + "/ca-key.pem", &info) == 0 && info.st_mode & 0o777 == 0o600)
        let url = "https://localhost:\(upstream.port)/setcookie?c=\(Self.enc("x=1; SameSite=None"))"
        let result = try curl(["-D", "-", "-o", "/dev/null", "--cacert", home + "/ca-cert.pem", "-x", proxy.url, url])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.contains("\r\nSet-Cookie: x=1; SameSite=None; Secure\r\n"))
        // Python's client, trusting the CA through an SSL context.
        let python = """
            import ssl, urllib.request, sys
            ctx = ssl.create_default_context(cafile=sys.argv[1])
            ctx.verify_flags |= ssl.VERIFY_X509_STRICT
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": sys.argv[2]}), urllib.request.HTTPSHandler(context=ctx))
            print(opener.open(sys.argv[3]).headers.get_all("Set-Cookie"))
            """
        let py = try run(Paths.which("python3"), ["-c", python, home + "/ca-cert.pem", proxy.url, url])
        #expect(py.status == 0, "\(py.stderr)")
        #expect(py.text == "['x=1; SameSite=None; Secure']\n")
        // The log records it as for http.
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        let log = try String(contentsOfFile: home + "/log.jsonl", encoding: .utf8)
        #expect(log.contains("\"url\":\"https://localhost:\(upstream.port)/setcookie"))
    }

    /// openssl s_client through a proxy that intercepts `localhost`, to an https upstream, with `servername` as SNI
    /// and the request on its standard input.
    static func sClient(servername: String, _ extra: [String], request: String) throws -> CommandResult {
        let (home, ca) = try (Self.home(), TestCA())
        defer { Self.remove(home, ca) }
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(
            ["--intercept", "localhost", "--upstream-ca", ca.caCert], environment: ["COOKIE_PROXY_HOME": home])
        return try run(
            Paths.which("openssl"),
            [
                "s_client", "-proxy", "127.0.0.1:\(proxy.port)", "-connect", "localhost:\(upstream.port)",
                "-servername", servername, "-CAfile", home + "/ca-cert.pem", "-showcerts",
            ] + extra,
            stdin: Data(request.utf8))
    }

    @Test(arguments: [["-tls1_3"], ["-tls1_2"]])
    func opensslSeesAValidChainTheHostSANAndALPN(_ version: [String]) throws {
        let result = try Self.sClient(
            servername: "localhost",
            ["-verify_return_error", "-x509_strict", "-alpn", "http/1.1", "-ign_eof"] + version,
            request: "GET /path/tls HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        #expect(result.text.contains("Verify return code: 0 (ok)"), "\(result.text) \(result.stderr)")
        #expect(result.text.contains("ALPN protocol: http/1.1"))
        #expect(result.text.contains(version == ["-tls1_3"] ? "TLSv1.3" : "TLSv1.2"))
        #expect(result.text.contains("issuer=O = cookie-proxy"))
        #expect(result.text.contains("GET /path/tls"))
        let leaf = try run(Paths.which("openssl"), ["x509", "-noout", "-ext", "subjectAltName"], stdin: result.stdout)
        #expect(leaf.text.contains("DNS:localhost"))
    }

    /// A name goes into OpenSSL's SAN syntax only when it is a host name: an SNI with a comma would add names of
    /// the client's choosing to the leaf. Such a handshake fails, and no certificate is minted for it.
    @Test func anSNIThatIsNoHostNameGetsNoLeaf() throws {
        let result = try Self.sClient(
            servername: "localhost,DNS:evil.example", [], request: "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(!result.text.contains("BEGIN CERTIFICATE"), "\(result.text)")
        #expect(!result.text.contains("evil.example"))
        #expect(!result.text.contains("GET /"))
    }

    @Test func anIPTargetGetsAnIPSubjectAltName() throws {
        let (home, ca) = try (Self.home(), TestCA())
        defer { Self.remove(home, ca) }
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(
            ["--intercept", "127.0.0.1", "--upstream-ca", ca.caCert], environment: ["COOKIE_PROXY_HOME": home])
        let result = try curl([
            "--cacert", home + "/ca-cert.pem", "-x", proxy.url, "https://127.0.0.1:\(upstream.port)/path/ip",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text == "GET /path/ip")
    }

    @Test func upstreamVerificationFailureIsA502ThatSaysWhy() throws {
        let (home, ca) = try (Self.home(), TestCA())
        defer { Self.remove(home, ca) }
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(["--intercept", "localhost"], environment: ["COOKIE_PROXY_HOME": home])
        let result = try curl([
            "--cacert", home + "/ca-cert.pem", "-x", proxy.url, "-w", "%{http_code}",
            "https://localhost:\(upstream.port)/path/x",
        ])
        #expect(result.text.hasSuffix("502"))
        #expect(
            result.text.contains(
                "TLS: certificate verification failed: unable to get local issuer certificate (trust its issuer with --upstream-ca FILE, or skip verification for this host with --insecure-upstream localhost)"
            ), "\(result.text)")
        // --insecure-upstream skips verification for that host only, and says so loudly.
        let insecure = try Proxy(
            ["--intercept", "localhost", "--insecure-upstream", "localhost"], environment: ["COOKIE_PROXY_HOME": home])
        #expect(insecure.process.stderr.contains("WARNING: upstream certificates of localhost are NOT verified"))
        let ok = try curl([
            "--cacert", home + "/ca-cert.pem", "-x", insecure.url, "https://localhost:\(upstream.port)/path/y",
        ])
        #expect(ok.text == "GET /path/y")
    }

    @Test func hostsNobodyAskedForStayEndToEndEncrypted() throws {
        let (home, ca) = try (Self.home(), TestCA())
        defer { Self.remove(home, ca) }
        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(["--intercept", "example.com"], environment: ["COOKIE_PROXY_HOME": home])
        let result = try curl([
            "-v", "--cacert", ca.caCert, "-x", proxy.url, "https://localhost:\(upstream.port)/path/t",
        ])
        #expect(result.text == "GET /path/t")
        // The client saw the upstream's own certificate (issued by the test CA, not the proxy's).
        #expect(result.stderr.contains("issuer: CN=cookie-proxy test CA"))
    }

    @Test func caInitRefusesToOverwriteAndExportsPEMAndDER() throws {
        let home = try Self.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        func ca(_ args: [String]) throws -> CommandResult {
            let p = try TestProcess(Paths.binary, ["ca"] + args, environment: ["COOKIE_PROXY_HOME": home])
            let status = p.waitForExit() ?? -1
            usleep(50_000)
            return CommandResult(status: status, stdout: Data(p.stdout.utf8), stderr: p.stderr)
        }
        #expect(try ca(["init"]).status == 0)
        let again = try ca(["init"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("a CA already exists in \(home); pass --force"))
        #expect(try ca(["path"]).text == home + "/ca-cert.pem\n")
        let pem = try ca(["export"])
        #expect(pem.text.hasPrefix("-----BEGIN CERTIFICATE-----"))
        let der = try run(
            "/usr/bin/env", ["COOKIE_PROXY_HOME=" + home, Paths.binary, "ca", "export", "--format", "der"])
        let parsed = try run(
            Paths.which("openssl"), ["x509", "-inform", "der", "-noout", "-subject"], stdin: der.stdout)
        #expect(parsed.text.contains("O = cookie-proxy"))
        #expect(try ca(["init", "--force"]).status == 0)
    }

    /// Chromium trusts the CA through an NSS database; a cookie it rejects (SameSite=None without Secure) is
    /// accepted once a rule adds Secure. With `--http2 on` Chromium speaks HTTP/2 with the proxy (the log's record
    /// of the exchange says so), with `off` HTTP/1.1: the same cookie either way.
    @Test(arguments: ["on", "off"])
    func chromiumAcceptsACookieOnceARuleAddsSecure(_ http2: String) throws {
        let browser = try #require(
            BrowserEndToEndTests.chromium(), "chromium is not installed (scripts/setup.sh installs it)")
        let (home, ca) = try (Self.home(), TestCA())
        defer { Self.remove(home, ca) }
        // A CA for the proxy, and an NSS database (in a HOME of the test's own) that trusts it.
        let caHome = home + "/cp"
        let initCA = try TestProcess(Paths.binary, ["ca", "init"], environment: ["COOKIE_PROXY_HOME": caHome])
        #expect(initCA.waitForExit() == 0)
        let nss = home + "/.pki/nssdb"
        try FileManager.default.createDirectory(atPath: nss, withIntermediateDirectories: true)
        #expect(try run(Paths.which("certutil"), ["-d", "sql:" + nss, "-N", "--empty-password"]).status == 0)
        #expect(
            try run(
                Paths.which("certutil"),
                ["-d", "sql:" + nss, "-A", "-t", "C,,", "-n", "cookie-proxy", "-i", caHome + "/ca-cert.pem"]
            ).status == 0)

        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let rules = home + "/secure.rules"
        try "rule \"add Secure\" {\n    host a.site.test\n    where samesite-none\n    secure\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let common = [
            "--resolve", "a.site.test:127.0.0.1", "--insecure-upstream", "a.site.test", "--http2", http2,
        ]
        let plain = try Proxy(common + ["--intercept", "a.site.test"], environment: ["COOKIE_PROXY_HOME": caHome])
        let log = home + "/log.jsonl"
        let fixing = try Proxy(common + ["--rules", rules, "--log", log], environment: ["COOKIE_PROXY_HOME": caHome])
        let base = "https://a.site.test:\(upstream.port)"
        let url = "\(base)/setcookie?c=\(Self.enc("x=1; SameSite=None; Path=/"))&location=\(Self.enc(base + "/read"))"
        func load(_ proxy: Proxy) throws -> String {
            let profile = home + "/profile-\(proxy.port)"
            let p = try TestProcess(
                browser,
                [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile)",
                    "--proxy-server=\(proxy.url)", "--dump-dom", url,
                ], environment: ["HOME": home])
            _ = p.waitForExit(timeout: 60)
            usleep(100_000)
            return p.stdout
        }
        let without = try load(plain)
        #expect(without.contains("COOKIE[]"), "\(without)")
        let with = try load(fixing)
        #expect(with.contains("COOKIE[x=1]"), "\(with)")
        fixing.process.signal(SIGTERM)
        _ = fixing.process.waitForExit()
        let record = try String(contentsOfFile: log, encoding: .utf8)
        #expect(record.contains("\"cookie\":\"x\""), "\(record)")
        #expect(record.contains("\"protocol\":\"HTTP/2\"") == (http2 == "on"), "\(record)")
    }
}
