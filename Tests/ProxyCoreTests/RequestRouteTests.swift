import HTTPHeads
import Testing

@testable import ProxyCore

/// The routing decision as a pure function of a request head and the proxy's configuration (RFC 9112 §3.2–3.3).
@Suite struct RequestRouteTests {
    enum Mode: Sendable, CustomStringConvertible {
        case forward
        case reverse
        case intercepted
        var description: String {
            switch self {
            case .forward: "forward"
            case .reverse: "reverse"
            case .intercepted: "intercepted"
            }
        }
    }

    struct Expected: Sendable, CustomStringConvertible {
        var origin: String
        var addressed: String
        var scheme: String
        var target: String
        var description: String { "\(origin) \(addressed) \(scheme) \(target)" }
    }

    static func route(_ head: String, _ mode: Mode) throws -> Result<RequestRoute, RequestRoute.Refusal> {
        let request = try HTTPHeadParser(limits: HTTPParserLimits()).parseRequest(Array(head.utf8))
        return Result { () throws(RequestRoute.Refusal) -> RequestRoute in try route(request, mode) }
    }

    static func route(_ request: RequestHead, _ mode: Mode) throws(RequestRoute.Refusal) -> RequestRoute {
        var configuration = ProxyConfiguration()
        configuration.ownPorts = [8080]
        configuration.ownHosts = ["192.0.2.7"]
        if mode == .reverse { configuration.reverseUpstream = Origin(host: "127.0.0.1", port: 3000) }
        return try RequestRoute.route(
            request, configuration: configuration,
            interceptedOrigin: mode == .intercepted ? Origin(host: "secure.example", port: 443) : nil)
    }

    @Test(arguments: [
        (
            "GET http://example.com/p?q HTTP/1.1\r\nHost: example.com\r\n\r\n", Mode.forward,
            Expected(origin: "example.com:80", addressed: "example.com:80", scheme: "http", target: "/p?q")
        ),
        (
            "GET http://Example.COM.:8081?q#f HTTP/1.1\r\nHost: x\r\n\r\n", .forward,
            Expected(origin: "example.com:8081", addressed: "example.com:8081", scheme: "http", target: "/?q")
        ),
        (
            "OPTIONS http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", .forward,
            Expected(origin: "example.com:80", addressed: "example.com:80", scheme: "http", target: "*")
        ),
        (
            "GET http://[::1]:9/ HTTP/1.0\r\n\r\n", .forward,
            Expected(origin: "[::1]:9", addressed: "[::1]:9", scheme: "http", target: "/")
        ),
        (
            "CONNECT example.com:443 HTTP/1.1\r\n\r\n", .forward,
            Expected(origin: "example.com:443", addressed: "example.com:443", scheme: "https", target: "")
        ),
        // Towards a fixed upstream the client's Host is what it addressed.
        (
            "GET /a HTTP/1.1\r\nHost: app.local:5173\r\n\r\n", .reverse,
            Expected(origin: "127.0.0.1:3000", addressed: "app.local:5173", scheme: "http", target: "/a")
        ),
        (
            "GET http://other.example/b HTTP/1.1\r\nHost: app.local\r\n\r\n", .reverse,
            Expected(origin: "127.0.0.1:3000", addressed: "other.example:80", scheme: "http", target: "/b")
        ),
        (
            "OPTIONS * HTTP/1.1\r\nHost: app.local\r\n\r\n", .reverse,
            Expected(origin: "127.0.0.1:3000", addressed: "app.local:80", scheme: "http", target: "*")
        ),
        (
            "GET /c HTTP/1.1\r\nHost: secure.example\r\n\r\n", .intercepted,
            Expected(origin: "secure.example:443", addressed: "secure.example:443", scheme: "https", target: "/c")
        ),
        (
            "GET https://secure.example/d HTTP/1.1\r\nHost: secure.example\r\n\r\n", .intercepted,
            Expected(origin: "secure.example:443", addressed: "secure.example:443", scheme: "https", target: "/d")
        ),
        // The proxy's own port on another host is just another origin.
        (
            "GET http://example.com:8080/ HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", .forward,
            Expected(origin: "example.com:8080", addressed: "example.com:8080", scheme: "http", target: "/")
        ),
    ])
    func requestsAreRoutedByTheirTargetAndMode(_ head: String, _ mode: Mode, _ expected: Expected) throws {
        let route = try #require(try? Self.route(head, mode).get())
        #expect(route.origin.description == expected.origin)
        #expect(route.addressed.description == expected.addressed)
        #expect(route.scheme == expected.scheme)
        #expect(route.target == expected.target)
        #expect(route.isConnect == head.hasPrefix("CONNECT"))
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", Mode.forward, 400, "this is a forward proxy"),
        ("GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", .forward, 400, "go through CONNECT"),
        ("GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", .forward, 400, "absolute http:// URL"),
        ("GET http://u:p@example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", .forward, 400, "userinfo"),
        ("GET http://exa_mple..com/ HTTP/1.1\r\nHost: x\r\n\r\n", .forward, 400, "invalid host in request URL"),
        ("GET http://0x7f.1/ HTTP/1.1\r\nHost: x\r\n\r\n", .forward, 400, "invalid host in request URL"),
        ("GET http://example.com:0/ HTTP/1.1\r\nHost: x\r\n\r\n", .forward, 400, "invalid host in request URL"),
        ("GET * HTTP/1.1\r\nHost: x\r\n\r\n", .forward, 400, "only OPTIONS"),
        ("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", .forward, 400, "send OPTIONS with an absolute URL"),
        ("GET /#f HTTP/1.1\r\nHost: x\r\n\r\n", .reverse, 400, "fragment"),
        ("CONNECT example.com HTTP/1.1\r\n\r\n", .forward, 400, "host:port"),
        ("CONNECT [::1] HTTP/1.1\r\n\r\n", .forward, 400, "host:port"),
        ("CONNECT example.com:443 HTTP/1.1\r\n\r\n", .reverse, 405, "reverse proxy"),
        ("GET http://other.example/ HTTP/1.1\r\nHost: other.example\r\n\r\n", .intercepted, 400, "another origin"),
        ("GET http://secure.example/ HTTP/1.1\r\nHost: secure.example\r\n\r\n", .intercepted, 400, "another origin"),
        // RFC 9112 §3.2: Host.
        ("GET http://example.com/ HTTP/1.1\r\n\r\n", .forward, 400, "without a Host"),
        ("GET http://example.com/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", .forward, 400, "more than one Host"),
        ("GET http://example.com/ HTTP/1.1\r\nHost: a b\r\n\r\n", .forward, 400, "invalid Host"),
        ("GET /x HTTP/1.1\r\nHost: \r\n\r\n", .reverse, 400, "invalid Host"),
        ("CONNECT example.com:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .forward, 400, "more than one Host"),
        // The proxy itself, by any of its names.
        ("GET http://127.0.0.1:8080/ HTTP/1.0\r\n\r\n", .forward, 400, "addressed to the proxy itself"),
        ("GET http://127.9.9.9:8080/ HTTP/1.0\r\n\r\n", .forward, 400, "addressed to the proxy itself"),
        ("GET http://app.localhost:8080/ HTTP/1.0\r\n\r\n", .forward, 400, "addressed to the proxy itself"),
        ("GET http://[::1]:8080/ HTTP/1.0\r\n\r\n", .forward, 400, "addressed to the proxy itself"),
        ("GET http://[::ffff:127.0.0.1]:8080/ HTTP/1.0\r\n\r\n", .forward, 400, "addressed to the proxy itself"),
        ("GET http://192.0.2.7:8080/ HTTP/1.0\r\n\r\n", .forward, 400, "addressed to the proxy itself"),
        ("CONNECT localhost:8080 HTTP/1.1\r\n\r\n", .forward, 400, "addressed to the proxy itself"),
    ])
    func requestsThatCannotBeRoutedAreRefusedWithAReason(_ head: String, _ mode: Mode, _ status: Int, _ reason: String)
        throws
    {
        switch try Self.route(head, mode) {
        case .success(let route): Issue.record("routed to \(route.origin)")
        case .failure(let refusal):
            #expect(refusal.status == status)
            #expect(refusal.reason.contains(reason), "\(refusal.reason)")
            #expect(refusal.fields.map(\.name) == (status == 405 ? ["Allow"] : []))
        }
    }

    @Test(arguments: [
        (
            ProxyAnswer(status: 400, reason: "bad", close: true),
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbad\n"
        ),
        (
            ProxyAnswer(status: 502, reason: "upstream x:80 refused", via: "cookie-proxy", close: false),
            "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 22\r\nVia: 1.1 cookie-proxy\r\n\r\nupstream x:80 refused\n"
        ),
        (
            ProxyAnswer(status: 405, reason: "no", fields: [.init("Allow", "GET")], close: true),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\nAllow: GET\r\nConnection: close\r\n\r\nno\n"
        ),
    ])
    func theProxysOwnAnswersAreOneLineOfPlainText(_ answer: ProxyAnswer, _ expected: String) {
        #expect(String(decoding: answer.bytes, as: UTF8.self) == expected)
    }
}
