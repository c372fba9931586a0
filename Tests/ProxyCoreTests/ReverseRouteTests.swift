import Testing
import ExchangeFacts

@testable import ProxyCore

/// Reverse routes (`--route [HOST]/PREFIX=URL`): how a route is read, which one a request takes, what crosses it
/// (the target, Host, X-Forwarded-*), and redirects pointed back at the client's origin.
@Suite struct ReverseRouteTests {
    /// (the option's text, the route as the banner and a 404 describe it; nil: refused, with this in the reason)
    @Test(
        arguments: [
            ("/=http://localhost:5173", "/ → http://localhost:5173", nil),
            ("/api/=https://api.staging.example/", "/api/ → https://api.staging.example/", nil),
            ("app.test/=h2c://127.0.0.1:50051", "app.test/ → h2c://127.0.0.1:50051", nil),
            (
                "/v1/=https://API.example:8443/base/,preserve-host",
                "/v1/ → https://api.example:8443/base/ (Host kept)", nil
            ),
            ("/=http://[::1]:3000", "/ → http://[::1]:3000", nil),
            ("=http://x", nil, "the prefix must start with '/'"),
            ("api/=http://x", "api/ → http://x", nil),
            ("/api", nil, "must be [HOST]/PREFIX=URL"),
            ("/=ftp://x", nil, "must be an http://, https:// or h2c:// URL"),
            ("/=http://user@x/", nil, "is not host[:port]"),
            ("/=http://x/?q=1", nil, "no query or fragment"),
            ("bad_host!/=http://x", nil, "is not a host name"),
            ("/a b/=http://x", nil, "may not hold spaces"),
            ("/=http://x/,keep-host", nil, "unknown route option 'keep-host'; the options are: preserve-host"),
            ("/=http://x/,preserve-host,", nil, "unknown route option ''"),
            ("/=http://x/a,b", nil, "unknown route option 'b'"),
        ] as [(String, String?, String?)])
    func aRouteIsReadOrRefusedWithAReason(_ text: String, _ description: String?, _ refusal: String?) {
        switch ReverseRoute.parse(text) {
        case .success(let route): #expect(route.description == description, "\(route)")
        case .failure(let error):
            #expect(description == nil)
            #expect(refusal.map { error.description.contains($0) } == true, "\(error)")
        }
    }

    /// nginx's slash trap: a prefix and a path that disagree on their last `/` (the path a request would be sent
    /// as, and the fix); agreeing ones, and routes without a path, say nothing.
    @Test(
        arguments: [
            ("/=http://x:3000/api", "/x goes upstream as /apix", "did you mean /=http://x:3000/api/?"),
            (
                "/v1=http://x/v2/", "/v1/x goes upstream as /v2//x",
                "did you mean /v1/=http://x/v2/, or /v1=http://x/v2?"
            ),
            ("/api/=http://x/", nil, nil), ("/api=http://x/v1", nil, nil), ("/api=http://x", nil, nil),
        ] as [(String, String?, String?)])
    func aSlashMismatchIsNamedWithItsFix(_ text: String, _ sent: String?, _ fix: String?) throws {
        let warning = try ReverseRoute.parse(text).get().slashWarning
        #expect(warning.map { $0.contains(sent!) && $0.hasSuffix(fix!) } ?? (sent == nil), "\(warning ?? "none")")
    }

    static let table = RouteTable(
        [
            "/=http://127.0.0.1:3000", "/api/=https://api.staging.example/", "/api/v2/=http://127.0.0.1:4000",
            "admin.test/=http://127.0.0.1:5000/admin/", "/static=http://127.0.0.1:6000/assets",
        ].map { try! ReverseRoute.parse($0).get() })

    /// (Host, target, the upstream and target sent; nil: no route)
    @Test(
        arguments: [
            ("app.test", "/", "127.0.0.1:3000 /"),
            ("app.test", "/api/users?x=1", "api.staging.example:443 /users?x=1"),
            ("app.test", "/api/", "api.staging.example:443 /"),
            ("app.test", "/api", "127.0.0.1:3000 /api"),  // the prefix is /api/: /api is the catch-all's
            ("app.test", "/api/v2/x", "127.0.0.1:4000 /api/v2/x"),  // the longest prefix; no path: kept
            ("admin.test", "/api/users", "127.0.0.1:5000 /admin/api/users"),  // a host's routes first
            ("app.test", "/static/app.js", "127.0.0.1:6000 /assets/app.js"),
            ("app.test", "*", "127.0.0.1:3000 *"),
        ] as [(String, String, String?)])
    func theLongestPrefixForTheHostWins(_ host: String, _ target: String, _ expected: String?) {
        let match = Self.table.match(host: host, target: target)
        #expect(match.map { "\(Self.table.routes[$0].upstream) \(Self.table.upstreamTarget($0, target))" } == expected)
    }

    @Test func withoutACatchAllAnUnmatchedRequestIsA404NamingTheRoutes() {
        var t = Self.transcript(["/api/=http://127.0.0.1:4000/"])
        t.client("GET /other HTTP/1.1\r\nHost: app.test\r\n\r\n")
        #expect(t.toClient.hasPrefix("HTTP/1.1 404 Not Found\r\n"), "\(t.toClient)")
        #expect(t.toClient.contains("no route for app.test/other; the routes: /api/ → http://127.0.0.1:4000/"))
    }

    static func transcript(_ routes: [String], forwarded: Bool = true, tls: Bool = false)
        -> ProxyConnectionMachineTests.Transcript
    {
        var t = ProxyConnectionMachineTests.Transcript {
            $0.routes = RouteTable(routes.map { try! ReverseRoute.parse($0).get() })
            $0.addVia = false
            $0.addForwarded = forwarded
        }
        t.machine.listenerTLS = tls
        return t
    }

    /// What crosses a route: the path, Host (the upstream's unless kept), X-Forwarded-* (the client's own
    /// replaced), and the upstream TLS the shell is to speak.
    @Test(
        arguments: [
            (
                "/api/=https://api.staging.example/", false,
                "GET /users HTTP/1.1\r\nHost: api.staging.example\r\nX-Forwarded-For: 127.0.0.1\r\n"
                    + "X-Forwarded-Proto: https\r\nX-Forwarded-Host: app.localhost:8443\r\n\r\n", true
            ),
            (
                "/api/=http://127.0.0.1:4000/,preserve-host", false,
                "GET /users HTTP/1.1\r\nHost: app.localhost:8443\r\nX-Forwarded-For: 127.0.0.1\r\n"
                    + "X-Forwarded-Proto: https\r\nX-Forwarded-Host: app.localhost:8443\r\n\r\n", false
            ),
            (
                "/api/=http://127.0.0.1:4000", true,
                "GET /api/users HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n", false
            ),
        ] as [(String, Bool, String, Bool)])
    func theRequestCrossesTheRouteAsNginxAndCaddySendIt(
        _ route: String, _ noForwarded: Bool, _ sent: String, _ tls: Bool
    ) {
        var t = Self.transcript([route], forwarded: !noForwarded, tls: true)
        t.client("GET /api/users HTTP/1.1\r\nHost: app.localhost:8443\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n")
        t.connected()
        #expect(t.toUpstream == sent)
        #expect(t.machine.upstreamTLS == tls)
    }

    /// nginx's `proxy_redirect default`: redirects to the upstream's URL, or to an absolute path on it, come back as
    /// the client's.
    @Test(arguments: [
        ("Location: https://api.staging.example/login?next=/", "Location: http://app.test:8080/api/login?next=/"),
        ("Location: HTTPS://API.staging.example/", "Location: http://app.test:8080/api/"),
        ("Location: https://api.staging.example", "Location: http://app.test:8080/api"),
        ("Content-Location: https://api.staging.example/doc", "Content-Location: http://app.test:8080/api/doc"),
        ("Refresh: 0; url=https://api.staging.example/x", "Refresh: 0; url=http://app.test:8080/api/x"),
        ("Location: https://elsewhere.example/login", "Location: https://elsewhere.example/login"),
        // A relative redirect resolves against the client's URL: the upstream's path goes back under the prefix.
        ("Location: /login", "Location: /api/login"),
        ("Refresh: 0; url=/x", "Refresh: 0; url=/api/x"),
        ("Location: //elsewhere.example/x", "Location: //elsewhere.example/x"),
        ("Location: login", "Location: login"),
        ("Location: https://api.staging.example.evil/", "Location: https://api.staging.example.evil/"),
    ])
    func redirectsToTheUpstreamArePointedBackAtTheClientsOrigin(_ field: String, _ forwarded: String) {
        var t = Self.transcript(["/api/=https://api.staging.example/"], forwarded: false)
        t.client("GET /api/ HTTP/1.1\r\nHost: app.test:8080\r\n\r\n")
        t.connected()
        t.upstream("HTTP/1.1 302 Found\r\n\(field)\r\nContent-Length: 0\r\n\r\n")
        #expect(t.toClient == "HTTP/1.1 302 Found\r\n\(forwarded)\r\nContent-Length: 0\r\n\r\n")
    }
}

@Suite struct RouteCookiePathTests {
    /// A cookie's Path under the upstream's mount maps under the route's prefix (nginx's `proxy_cookie_path`);
    /// anything else stays. (upstream path, prefix, the cookie's Path, what it becomes)
    @Test(
        arguments: [
            ("/v1/", "/api/", "/v1", "/api"), ("/v1/", "/api/", "/v1/", "/api/"),
            ("/v1/", "/api/", "/v1/x/y", "/api/x/y"),
            ("/v1/", "/api/", "/", nil), ("/v1/", "/api/", "/v10", nil), ("/v1/", "/api/", "/other", nil),
            ("/", "/api/", "/", nil), ("/", "/api/", "/x", "/api/x"), ("/v1/", "/", "/v1/x", "/x"),
            ("/v1/", "/", "/v1", "/"),
        ] as [(String, String, String, String?)])
    func aPathUnderTheMountMapsUnderThePrefix(_ upstream: String, _ prefix: String, _ path: String, _ mapped: String?) {
        let facts = RouteFacts(name: "r", upstreamHost: "h", pathMap: (upstream, prefix))
        #expect(facts.clientPath(path) == mapped, "\(path)")
    }
}
