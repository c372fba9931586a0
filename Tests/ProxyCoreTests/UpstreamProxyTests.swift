import HTTPHeads
import ProxyCore
import Testing

/// `--upstream-proxy`: its URL, which hosts bypass it, and what the machine sends through it.
@Suite struct UpstreamProxyTests {
    @Test(
        arguments: [
            ("http://proxy.corp:3128", "proxy.corp:3128", nil),
            ("http://PROXY.corp", "proxy.corp:80", nil),
            ("http://alice:s3cret@10.0.0.1:8080/", "10.0.0.1:8080", "Basic YWxpY2U6czNjcmV0"),
            // Percent-escapes in the user or password are decoded first (RFC 3986 §3.2.1): "a@b" / "p:w".
            ("http://a%40b:p%3Aw@[::1]:3128", "[::1]:3128", "Basic YUBiOnA6dw=="),
            ("http://bob@proxy:1", "proxy:1", "Basic Ym9i"),
        ] as [(String, String, String?)])
    func aProxyURLGivesItsAddressAndCredentials(_ url: String, _ address: String, _ authorization: String?) throws {
        let proxy = try UpstreamProxy.parse(url).get()
        #expect(proxy.address.description == address)
        #expect(proxy.authorization == authorization)
        // Its description, which messages use, never carries the password.
        #expect(proxy.description == address)
    }

    @Test(arguments: [
        ("https://proxy:3128", "must start with http://"), ("proxy:3128", "must start with http://"),
        ("http://proxy:3128/path", "must not have a path"), ("http://proxy:99999", "is not host[:port]"),
        ("http://a%zz@proxy:1", "bad percent-escape"), ("http://", "is not host[:port]"),
    ])
    func aURLThatIsNotAProxyIsRefusedWithAReason(_ url: String, _ reason: String) {
        guard case .failure(let error) = UpstreamProxy.parse(url) else {
            Issue.record("\(url) was accepted")
            return
        }
        #expect(error.description.contains(reason), "\(error)")
    }

    @Test(arguments: [
        ("example.com", ["example.com"], true), ("app.example.com", ["example.com"], true),
        ("app.example.com", [".example.com"], true), ("notexample.com", ["example.com"], false),
        ("example.org", ["example.com"], false), ("anything.test", ["*"], true), ("10.1.2.3", ["10.1.2.3"], true),
        ("[::1]", [], false), ("::1", [], true), ("localhost", [], true), ("api.localhost", [], true),
        ("127.0.0.5", [], true), ("128.0.0.1", [], false), ("EXAMPLE.com", ["Example.COM"], true),
        ("2001:db8::1", ["2001:db8::1"], true), ("2001:db8::1", ["[2001:db8::1]"], true),
        ("example.com", ["example.com:8080"], false),
    ])
    func bypassMatchesHostsAndTheirSubdomainsAndAlwaysLoopback(_ host: String, _ patterns: [String], _ bypass: Bool) {
        let proxy = UpstreamProxy(address: Origin(host: "proxy", port: 3128))
        let routes = UpstreamProxyRoutes(http: proxy, https: proxy, bypass: patterns)
        #expect(routes.bypasses(host) == bypass)
        #expect((routes.proxy(for: host, secure: false) == nil) == bypass)
    }

    @Test func theEnvironmentsTwoProxiesServeTheirOwnSchemes() {
        let http = UpstreamProxy(address: Origin(host: "web-proxy", port: 80))
        let routes = UpstreamProxyRoutes(http: http, https: nil)
        #expect(routes.proxy(for: "example.com", secure: false) == http)
        #expect(routes.proxy(for: "example.com", secure: true) == nil)
    }

    static let proxy = UpstreamProxy(address: Origin(host: "proxy.corp", port: 3128), authorization: "Basic eDp5")
    static func through(_ c: inout ProxyConfiguration) {
        c.upstreamProxies = UpstreamProxyRoutes(http: proxy, https: proxy, bypass: ["intranet.corp"])
    }

    @Test(arguments: [
        // The absolute form, with the proxy's credentials instead of the client's.
        (
            "GET http://example.com/p?q=1 HTTP/1.1\r\nHost: example.com\r\nProxy-Authorization: Basic client\r\n\r\n",
            Origin(host: "example.com", port: 80), true,
            "GET http://example.com/p?q=1 HTTP/1.1\r\nHost: example.com\r\nProxy-Authorization: Basic eDp5\r\nVia: 1.1 cookie-proxy\r\n\r\n"
        ),
        (
            "GET http://[2001:db8::1]:8080/ HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n",
            Origin(host: "2001:db8::1", port: 8080), true,
            "GET http://[2001:db8::1]:8080/ HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\nProxy-Authorization: Basic eDp5\r\nVia: 1.1 cookie-proxy\r\n\r\n"
        ),
        // A host that bypasses the proxy: the origin form, straight to it.
        (
            "GET http://intranet.corp/a HTTP/1.1\r\nHost: intranet.corp\r\n\r\n",
            Origin(host: "intranet.corp", port: 80),
            false, "GET /a HTTP/1.1\r\nHost: intranet.corp\r\nVia: 1.1 cookie-proxy\r\n\r\n"
        ),
    ])
    func plainRequestsGoToTheProxyInAbsoluteForm(_ request: String, _ origin: Origin, _ proxied: Bool, _ sent: String) {
        var t = ProxyConnectionMachineTests.Transcript(Self.through)
        t.client(request)
        let via = proxied ? UpstreamHop(proxy: Self.proxy, tunnel: false) : nil
        #expect(t.commands == [.connect(origin, fresh: false, via: via)])
        t.connected()
        #expect(t.toUpstream == sent)
    }

    @Test func aConnectIsTunnelledThroughTheProxy() {
        var t = ProxyConnectionMachineTests.Transcript(Self.through)
        t.client("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        #expect(
            t.commands == [
                .connect(
                    Origin(host: "example.com", port: 443), fresh: true,
                    via: UpstreamHop(proxy: Self.proxy, tunnel: true))
            ])
        let hop = UpstreamHop(proxy: Self.proxy, tunnel: true)
        #expect(
            String(decoding: hop.connectRequest(to: Origin(host: "example.com", port: 443)), as: UTF8.self)
                == "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic eDp5\r\n\r\n"
        )
    }

    @Test func theProxysOwnChallengeBecomesA502ThatNamesIt() {
        var t = ProxyConnectionMachineTests.Transcript(Self.through)
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.connected()
        t.upstream(
            "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=x\r\nContent-Length: 0\r\n\r\n"
        )
        #expect(t.toClient.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(t.toClient.contains("upstream proxy proxy.corp:3128 asks for credentials (407)"))
        #expect(!t.toClient.contains("Proxy-Authenticate"))
    }

    @Test func aConnectTimeoutThroughTheProxyNamesIt() {
        var t = ProxyConnectionMachineTests.Transcript(Self.through)
        t.client("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        t.timedOut()
        #expect(t.toClient.hasPrefix("HTTP/1.1 504 "))
        #expect(t.toClient.contains("through upstream proxy proxy.corp:3128"))
    }
}

/// `--upstream-proxy` and `--no-upstream-proxy` read without the executable: the environment only with `env`
/// (lowercase first, as curl reads it). (value, bypass, environment, the routes' http and https and bypass, or the
/// refusal)
@Suite struct UpstreamProxyConfigurationTests {
    @Test(
        arguments: [
            (nil, [], [:], nil, nil),
            (nil, ["a.test"], [:], nil, "--no-upstream-proxy needs --upstream-proxy"),
            ("http://p:3128", ["a.test"], ["HTTP_PROXY": "http://ignored:1"], "p:3128 p:3128 [a.test]", nil),
            (
                "env", [], ["http_proxy": "http://low:1", "HTTP_PROXY": "http://up:2", "NO_PROXY": " b.test, c.test"],
                "low:1 - [b.test, c.test]", nil
            ),
            ("env", [], [:], nil, "neither HTTP_PROXY nor HTTPS_PROXY is set"),
            ("env", [], ["HTTPS_PROXY": "ftp://x"], nil, "HTTPS_PROXY: "),
        ] as [(String?, [String], [String: String], String?, String?)])
    func theProxiesComeFromTheOptionOrTheEnvironmentWhenAskedFor(
        _ value: String?, _ bypass: [String], _ environment: [String: String], _ routes: String?, _ refusal: String?
    ) {
        switch UpstreamProxyRoutes.configured(value, bypass: bypass, environment: { environment[$0] }) {
        case .success(let got):
            #expect(refusal == nil)
            let text = got.map {
                "\($0.http.map { "\($0.address.host):\($0.address.port)" } ?? "-") "
                    + "\($0.https.map { "\($0.address.host):\($0.address.port)" } ?? "-") [\($0.bypass.joined(separator: ", "))]"
            }
            #expect(text == routes)
        case .failure(let error):
            #expect(refusal.map { error.description.contains($0) } == true, "\(error)")
        }
    }
}
