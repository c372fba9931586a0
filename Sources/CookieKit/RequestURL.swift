import ExchangeFacts
import HTTPGrammar

/// The parts of a request URL that cookies care about: scheme, canonical host, port and path
/// (RFC 6265bis §5.1.2, §5.1.4). Parsed by hand, leniently; the host is lowercased.
public struct RequestURL: Sendable, Hashable, CustomStringConvertible {
    /// Lowercased scheme, e.g. `https`.
    public var scheme: String
    /// Canonicalised host: lowercased, without brackets for IPv6, without a trailing dot.
    public var host: String
    /// The port, if written.
    public var port: Int?
    /// The path (no query or fragment); may be empty.
    public var path: String

    /// Parses `scheme://[userinfo@]host[:port][/path][?query][#fragment]`; nil if there is no host.
    public init?(_ string: String) {
        let s = Substring(string)
        guard let colon = s.firstIndex(of: ":"), s[colon...].hasPrefix("://") else { return nil }
        scheme = String(s[..<colon]).asciiLowercased
        var rest = s[s.index(colon, offsetBy: 3)...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard let (hostPart, portText) = HostPort.split(authority) else { return nil }
        port = portText.flatMap { Int($0) }
        var h = String(hostPart).asciiLowercased
        if h.hasSuffix(".") && h.count > 1 { h.removeLast() }
        guard !h.isEmpty else { return nil }
        // IP hosts in their serialised form (URL Standard host parsing: `0:0::1` is `::1`, `0x7f.1` is 127.0.0.1);
        // a host that fails host parsing is no URL.
        guard let canonical = Self.canonicalHost(h) else { return nil }
        host = canonical
        let pathEnd = rest.firstIndex { $0 == "?" || $0 == "#" } ?? rest.endIndex
        path = String(rest[..<pathEnd])
    }

    public init(scheme: String, host: String, port: Int? = nil, path: String) {
        self.scheme = scheme.asciiLowercased
        let lowered = host.asciiLowercased
        self.host = Self.canonicalHost(lowered) ?? lowered
        self.port = port
        self.path = path
    }

    /// The host as URL host parsing serialises it; only IP hosts can change (a cheap test first: the proxy's
    /// per-message contexts pass here).
    static func canonicalHost(_ host: String) -> String? {
        guard let last = host.utf8.last, host.utf8.contains(0x3A) || last &- 0x30 < 10 || (last | 0x20) &- 0x61 < 6
        else { return host }
        return IPHost.canonicalRequestHost(host)
    }

    public var description: String {
        let h = HostPort.bracketed(host)
        return "\(scheme)://\(h)\(port.map { ":\($0)" } ?? "")\(path.isEmpty ? "/" : path)"
    }

    /// A "secure" origin for cookies: https/wss, or a loopback host (RFC 6265bis §5.7 step 13 leaves
    /// "secure" to the user agent; browsers treat `localhost` and loopback addresses as secure contexts).
    public var isSecure: Bool {
        scheme == "https" || scheme == "wss" || HostName.isLoopback(host)
    }

    /// The default-path of a cookie set from this URL (RFC 6265bis §5.1.4).
    public var defaultPath: String {
        guard path.first == "/" else { return "/" }
        guard let lastSlash = path.lastIndex(of: "/"), lastSlash != path.startIndex else { return "/" }
        return String(path[..<lastSlash])
    }
}

extension ExchangeContext {
    /// The exchange's URL as cookies see it (RFC 6265bis §5.1.4's request-uri: no query or fragment): the one
    /// conversion from the proxy's facts to the jar's URL.
    public var requestURL: RequestURL { RequestURL(scheme: scheme, host: host, port: port, path: path) }
}
