import HTTPGrammar
import HTTPHeads

/// Another HTTP proxy between this one and the origins (`--upstream-proxy http://[user:pass@]host:port`), as offices
/// put one between developers and the internet.
public struct UpstreamProxy: Sendable, Hashable, CustomStringConvertible {
    public var address: Origin
    /// `Basic …` (RFC 9110 §11.7.1, RFC 7617), sent as Proxy-Authorization; nil when no user was given.
    public var authorization: String?

    public init(address: Origin, authorization: String? = nil) {
        self.address = address
        self.authorization = authorization
    }

    /// Its address only: a password never goes into a message or a log.
    public var description: String { address.description }

    /// `http://[user[:password]@]host[:port][/]`; the port defaults to 80 (as curl's). Percent-escapes in the
    /// user and password are decoded. Nil with a reason when the URL is not one.
    public static func parse(_ text: String) -> Result<UpstreamProxy, UpstreamProxyError> {
        var rest = Substring(text)
        guard rest.lowercased().hasPrefix("http://") else {
            return .failure(
                UpstreamProxyError("'\(text)' must start with http:// (the proxy is spoken to in plain HTTP)"))
        }
        rest = rest.dropFirst(7)
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...] == "/" else {
                return .failure(UpstreamProxyError("'\(text)' must not have a path"))
            }
            rest = rest[..<slash]
        }
        var authorization: String? = nil
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let decoded = percentDecoded(credentials) else {
                return .failure(UpstreamProxyError("'\(text)': a bad percent-escape in the user or password"))
            }
            authorization = "Basic " + Base64.encode(decoded)
        }
        guard let address = Authority.parse(rest, defaultPort: 80) else {
            return .failure(UpstreamProxyError("'\(text)': '\(rest)' is not host[:port]"))
        }
        return .success(UpstreamProxy(address: address, authorization: authorization))
    }

    static func percentDecoded(_ s: Substring) -> [UInt8]? { PercentEncoding.decode(s.utf8, invalid: .refuse) }
}

public struct UpstreamProxyError: Error, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

/// Which requests go through which upstream proxy: one for plain http, one for https (CONNECT, tunnelled or
/// intercepted) — the same one unless taken from the environment — except hosts that bypass it.
public struct UpstreamProxyRoutes: Sendable, Hashable {
    public var http: UpstreamProxy?
    public var https: UpstreamProxy?
    /// `NO_PROXY`-style patterns: `example.com` and `.example.com` match that host and its subdomains, `*` every
    /// host, an IP address itself. Loopback (localhost, 127.0.0.0/8, ::1) always bypasses: a proxy elsewhere cannot
    /// reach this machine's loopback.
    public var bypass: [String]

    /// `--upstream-proxy VALUE` and `--no-upstream-proxy HOSTS`: nil without a value (direct); a proxy URL for both
    /// schemes; or `env`, the environment's `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` (lowercase first, as curl
    /// reads them), only when asked: a proxy that silently chains itself to whatever the shell exported is a trap.
    public static func configured(
        _ value: String?, bypass: [String], environment: (String) -> String?
    ) -> Result<UpstreamProxyRoutes?, UpstreamProxyError> {
        guard let value else {
            return bypass.isEmpty
                ? .success(nil) : .failure(UpstreamProxyError("--no-upstream-proxy needs --upstream-proxy"))
        }
        func variable(_ name: String) -> (name: String, value: String)? {
            for n in [name.lowercased(), name] {
                if let v = environment(n), !v.isEmpty { return (n, v) }
            }
            return nil
        }
        func parse(_ text: String, from source: String) -> Result<UpstreamProxy, UpstreamProxyError> {
            UpstreamProxy.parse(text).mapError { UpstreamProxyError("\(source): \($0)") }
        }
        guard value == "env" else {
            return parse(value, from: "--upstream-proxy").map {
                UpstreamProxyRoutes(http: $0, https: $0, bypass: bypass)
            }
        }
        let http: UpstreamProxy?
        let https: UpstreamProxy?
        do throws(UpstreamProxyError) {
            func proxy(_ name: String) throws(UpstreamProxyError) -> UpstreamProxy? {
                guard let v = variable(name) else { return nil }
                return try parse(v.value, from: v.name).get()
            }
            (http, https) = (try proxy("HTTP_PROXY"), try proxy("HTTPS_PROXY"))
        } catch {
            return .failure(error)
        }
        guard http != nil || https != nil else {
            return .failure(UpstreamProxyError("--upstream-proxy env: neither HTTP_PROXY nor HTTPS_PROXY is set"))
        }
        let noProxy = variable("NO_PROXY").map { $0.value.split(separator: ",").map(String.init) } ?? []
        let all = (noProxy + bypass).map {
            String($0.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        }
        return .success(UpstreamProxyRoutes(http: http, https: https, bypass: all))
    }

    public init(http: UpstreamProxy?, https: UpstreamProxy?, bypass: [String] = []) {
        self.http = http
        self.https = https
        self.bypass = bypass.map { $0.lowercased() }.filter { !$0.isEmpty }
    }

    /// The proxy for a connection to `host`: `secure` for a CONNECT tunnel or an intercepted https origin.
    public func proxy(for host: String, secure: Bool) -> UpstreamProxy? {
        guard let proxy = secure ? https : http, !bypasses(host) else { return nil }
        return proxy
    }

    public func bypasses(_ host: String) -> Bool {
        let host = host.lowercased()
        if HostName.isLoopback(host) { return true }
        for pattern in bypass {
            if pattern == "*" { return true }
            let bare = pattern.hasPrefix(".") ? String(pattern.dropFirst()) : pattern
            // A bracketed IPv6 address is compared without its brackets; nothing else is split (a pattern is a
            // host, and an unbracketed IPv6 address has colons of its own).
            let unbracketed = bare.hasPrefix("[") && bare.hasSuffix("]") ? bare.dropFirst().dropLast() : bare[...]
            if host == unbracketed || host.hasSuffix("." + unbracketed) { return true }
        }
        return false
    }
}

/// How the shell reaches an origin through an upstream proxy: connect to the proxy, then either send the request
/// in absolute form (plain http), or first ask it for a tunnel with CONNECT (RFC 9110 §9.3.6) and speak to the
/// origin inside it (a client's CONNECT, or TLS to an intercepted origin).
public struct UpstreamHop: Sendable, Hashable {
    public var proxy: UpstreamProxy
    public var tunnel: Bool

    public init(proxy: UpstreamProxy, tunnel: Bool) {
        self.proxy = proxy
        self.tunnel = tunnel
    }

    /// The CONNECT request for `origin` (its authority in Host too, RFC 9112 §3.2.3), with Proxy-Authorization.
    public func connectRequest(to origin: Origin) -> [UInt8] {
        var text = "CONNECT \(origin) HTTP/1.1\r\nHost: \(origin)\r\n"
        if let authorization = proxy.authorization { text += "Proxy-Authorization: \(authorization)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}
