import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--upstream-proxy` through a real squid (Debian's), which requires a user and password and resolves the test's
/// host names to 127.0.0.1 from a hosts file of its own (loopback names and addresses never go through an upstream
/// proxy, so the origins have names).
@Suite(.serialized) struct UpstreamProxyEndToEndTests {
    static let names = ["app.test", "tunnel.test", "direct.test"]

    /// A proxy in the environment is followed only when asked (`--upstream-proxy env`); the banner says it is set
    /// and not used, naming the variable and never its value (which may hold a password).
    @Test func aProxyVariableInTheEnvironmentIsNamedAndNotUsed() throws {
        let proxy = try Proxy(
            ["--log", "none"],
            environment: ["COOKIE_PROXY_HOME": Proxy.defaultHome, "HTTPS_PROXY": "http://alice:s3cret@10.9.9.9:3128"])
        let banner = proxy.process.stderr
        #expect(
            banner.contains(
                "  upstream:     direct; HTTPS_PROXY is set here and not used (--upstream-proxy env uses it)"),
            "\(banner)")
        #expect(!banner.contains("s3cret") && !banner.contains("10.9.9.9"), "\(banner)")
    }

    @Test func plainHttpTunnelledAndInterceptedHttpsGoThroughSquidAndBypassedHostsDoNot() throws {
        let home = try InterceptionEndToEndTests.home()
        let ca = try TestCA(names: Self.names)
        defer { InterceptionEndToEndTests.remove(home, ca) }
        let squid = try Squid(user: ("alice", "s3cret"), hosts: Self.names)
        let plain = try Upstream()
        let secure = try Upstream(tls: (ca.cert, ca.key))
        let rules = home + "/fix.rules"
        // The rule targets app.test, so its https is intercepted; tunnel.test's is tunnelled untouched.
        try "rule \"fix\" {\n    host app.test\n    where samesite-none\n    secure\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let proxy = try Proxy(
            [
                "--rules", rules, "--upstream-ca", ca.caCert, "--log", "none",
                "--upstream-proxy", "http://alice:s3cret@127.0.0.1:\(squid.port)",
                "--no-upstream-proxy", "direct.test", "--resolve", "direct.test:127.0.0.1",
            ],
            environment: ["COOKIE_PROXY_HOME": home])
        #expect(
            proxy.process.stderr.contains(
                "  upstream:     through proxy 127.0.0.1:\(squid.port); direct to direct.test"))
        #expect(!(proxy.process.stdout + proxy.process.stderr).contains("s3cret"))
        let setCookie = "/setcookie?c=\(InterceptionEndToEndTests.enc("x=1; SameSite=None"))"

        let http = try curl(["-D", "-", "-x", proxy.url, "http://app.test:\(plain.port)\(setCookie)"])
        #expect(http.text.contains("\r\nSet-Cookie: x=1; SameSite=None; Secure\r\n"), "\(http.text) \(http.stderr)")

        let tunnelled = try curl(
            ["--cacert", ca.caCert, "-x", proxy.url, "https://tunnel.test:\(secure.port)/path/tunnelled"])
        #expect(tunnelled.text == "GET /path/tunnelled", "\(tunnelled.stderr)")

        let intercepted = try curl([
            "-D", "-", "-o", "/dev/null", "--cacert", home + "/ca-cert.pem", "-x", proxy.url,
            "https://app.test:\(secure.port)\(setCookie)",
        ])
        #expect(intercepted.status == 0, "\(intercepted.stderr)")
        #expect(intercepted.text.contains("\r\nSet-Cookie: x=1; SameSite=None; Secure\r\n"), "\(intercepted.text)")

        let direct = try curl(["-x", proxy.url, "http://direct.test:\(plain.port)/path/direct"])
        #expect(direct.text == "GET /path/direct", "\(direct.stderr)")

        // Squid logs a tunnel when it closes: the proxy's pooled connections close when it stops.
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        let log = squid.waitForLog(containing: "CONNECT app.test:\(secure.port)")
        #expect(log.contains("GET http://app.test:\(plain.port)/setcookie"), "\(log)")
        #expect(log.contains("CONNECT tunnel.test:\(secure.port) alice"), "\(log)")
        #expect(log.contains("CONNECT app.test:\(secure.port) alice"), "\(log)")
        #expect(!log.contains("direct.test"), "\(log)")
        #expect(!log.contains("TCP_DENIED"), "\(log)")
    }

    @Test func aProxyThatRefusesOrIsDownGivesA502ThatNamesIt() throws {
        let squid = try Squid(user: ("alice", "s3cret"), hosts: Self.names)
        let plain = try Upstream()
        let wrong = try Proxy(["--log", "none", "--upstream-proxy", "http://alice:wrong@127.0.0.1:\(squid.port)"])
        let denied = try curl(["-w", "\n%{http_code}", "-x", wrong.url, "http://app.test:\(plain.port)/path/x"])
        #expect(denied.text.hasSuffix("\n502"), "\(denied.text)")
        #expect(
            denied.text.contains(
                "upstream proxy 127.0.0.1:\(squid.port) asks for credentials (407); the user and password in --upstream-proxy were refused"
            ), "\(denied.text)")
        let tunnel = try RawClient.exchange(
            port: wrong.port, "CONNECT tunnel.test:443 HTTP/1.1\r\nHost: tunnel.test:443\r\n\r\n")
        #expect(tunnel.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"), "\(tunnel)")
        #expect(
            tunnel.contains(
                "upstream proxy 127.0.0.1:\(squid.port) (on the way to tunnel.test:443) answered CONNECT with 'HTTP/1.1 407 Proxy Authentication Required'"
            ), "\(tunnel)")

        let closedPort = try freeLoopbackPort()
        let down = try Proxy(["--log", "none", "--upstream-proxy", "http://127.0.0.1:\(closedPort)"])
        for target in ["http://app.test:\(plain.port)/path/x", "https://tunnel.test:443/"] {
            let result = try curl(["-w", "\n%{http_code}", "-x", down.url, target])
            let message = "upstream proxy 127.0.0.1:\(closedPort) (on the way to"
            #expect(result.text.contains(message) || result.stderr.contains("502"), "\(target): \(result.text)")
        }
        let raw = try RawClient.exchange(
            port: down.port,
            "GET http://app.test:\(plain.port)/ HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n")
        #expect(raw.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(
            raw.contains(
                "upstream proxy 127.0.0.1:\(closedPort) (on the way to app.test:\(plain.port)) refused the connection"))
    }

    @Test func theEnvironmentsProxyIsUsedOnlyWhenAskedFor() throws {
        let squid = try Squid(user: nil, hosts: Self.names)
        let plain = try Upstream()
        let environment = [
            "COOKIE_PROXY_HOME": Proxy.defaultHome, "HTTP_PROXY": "http://127.0.0.1:\(squid.port)",
            "http_proxy": "http://127.0.0.1:\(squid.port)",
        ]
        let ignoring = try Proxy(
            ["--log", "none", "--resolve", "app.test:127.0.0.1"], environment: environment)
        let direct = try curl(["-x", ignoring.url, "http://app.test:\(plain.port)/path/ignored"])
        #expect(direct.text == "GET /path/ignored", "\(direct.stderr)")
        let using = try Proxy(["--log", "none", "--upstream-proxy", "env"], environment: environment)
        #expect(using.process.stderr.contains("http 127.0.0.1:\(squid.port), https direct"), "\(using.process.stderr)")
        let proxied = try curl(["-x", using.url, "http://app.test:\(plain.port)/path/from-env"])
        #expect(proxied.text == "GET /path/from-env", "\(proxied.stderr)")
        let log = squid.waitForLog(containing: "/path/from-env")
        #expect(log.contains("GET http://app.test:\(plain.port)/path/from-env"), "\(log)")
        #expect(!log.contains("/path/ignored"), "\(log)")
    }
}

/// Debian's squid on a free loopback port, in a folder of its own, in the foreground (-N).
final class Squid: Sendable {
    let dir: String
    let port: Int
    let process: TestProcess

    /// `user`: the one user and password it accepts (Basic), or nil to accept everyone on loopback. `hosts`: names
    /// it resolves to 127.0.0.1.
    init(user: (String, String)?, hosts: [String]) throws {
        dir =
            FileManager.default.temporaryDirectory.appendingPathComponent("cp-squid-\(UUID().uuidString.prefix(8))")
            .path
        // Squid drops to the proxy user: the folder must be its to write.
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        port = try freeLoopbackPort()
        var conf = """
            http_port 127.0.0.1:\(port)
            pid_filename \(dir)/squid.pid
            access_log stdio:\(dir)/access.log
            cache_log \(dir)/cache.log
            coredump_dir \(dir)
            cache deny all
            shutdown_lifetime 0 seconds
            hosts_file \(dir)/hosts
            """
        if let (name, password) = user {
            let hash = try run(Paths.which("openssl"), ["passwd", "-apr1", password])
            try "\(name):\(hash.text)".write(toFile: dir + "/passwd", atomically: true, encoding: .utf8)
            conf += """

                auth_param basic program /usr/lib/squid/basic_ncsa_auth \(dir)/passwd
                acl authed proxy_auth REQUIRED
                http_access allow authed
                http_access deny all

                """
        } else {
            conf += "\nhttp_access allow localhost\nhttp_access deny all\n"
        }
        try conf.write(toFile: dir + "/squid.conf", atomically: true, encoding: .utf8)
        try hosts.map { "127.0.0.1 \($0)\n" }.joined().write(toFile: dir + "/hosts", atomically: true, encoding: .utf8)
        for file in ["squid.conf", "hosts", "passwd"] {
            try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dir + "/" + file)
        }
        process = try TestProcess(Paths.which("squid"), ["-N", "-f", dir + "/squid.conf"])
        guard waitUntilListening(port: port, timeout: 30) else {
            let log = (try? String(contentsOfFile: dir + "/cache.log", encoding: .utf8)) ?? ""
            throw HarnessError("squid did not start: \(process.stderr) \(log.suffix(2000))")
        }
    }

    var accessLog: String { (try? String(contentsOfFile: dir + "/access.log", encoding: .utf8)) ?? "" }

    /// The access log once it contains `text` (squid writes an entry when a request or tunnel ends), or after 10 s.
    func waitForLog(containing text: String) -> String {
        for _ in 0..<200 {
            let log = accessLog
            if log.contains(text) { return log }
            usleep(50_000)
        }
        return accessLog
    }

    deinit {
        process.signal(SIGTERM)
        if process.waitForExit(timeout: 10) == nil { process.signal(SIGKILL) }
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// A loopback port nothing listens on (bound, read and released: for servers that need a port given).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw HarnessError("bind: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
