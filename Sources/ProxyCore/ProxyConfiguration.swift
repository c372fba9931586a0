import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a request goes.
public struct Origin: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
    /// `host:port`, IPv6 in brackets.
    public var description: String { HostPort.format(host, port) }

    /// Whether `value` is exactly ``hostFieldValue(defaultPort:)``, compared without building it (a request whose
    /// Host already names its URL's authority, the usual case, costs no allocation).
    public func isHostFieldValue(_ value: ArraySlice<UInt8>, defaultPort: Int) -> Bool {
        var host = self.host
        return host.withUTF8 { h in
            value.withUnsafeBufferPointer { v in
                let v6 = h.contains(0x3A)
                var i = 0
                let end = v.count
                if v6 {
                    guard i < end, v[i] == 0x5B else { return false }
                    i += 1
                }
                guard end - i >= h.count, h.isEmpty || memcmp(v.baseAddress! + i, h.baseAddress!, h.count) == 0 else {
                    return false
                }
                i += h.count
                if v6 {
                    guard i < end, v[i] == 0x5D else { return false }
                    i += 1
                }
                if port == defaultPort { return i == end }
                guard i < end, v[i] == 0x3A else { return false }
                i += 1
                // The port in decimal, as written by hostFieldValue: no sign, no leading zero.
                let digits = i
                var n = 0
                while i < end, v[i] &- 0x30 < 10, n <= 65535 {
                    n = n * 10 + Int(v[i] &- 0x30)
                    i += 1
                }
                return i == end && i > digits && v[digits] != 0x30 && n == port
            }
        }
    }

    /// The authority as a Host field value (RFC 9110 §7.2): `host`, or `host:port` when the port is not
    /// `defaultPort`; IPv6 in brackets. Written as bytes, without string interpolation.
    public func hostFieldValue(defaultPort: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(host.utf8.count + 8)
        let v6 = host.utf8.contains(0x3A)
        if v6 { out.append(0x5B) }
        out.append(contentsOf: host.utf8)
        if v6 { out.append(0x5D) }
        if port != defaultPort {
            out.append(0x3A)
            var divisor = 1
            while divisor * 10 <= port { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(truncatingIfNeeded: 0x30 + (port / divisor) % 10))
                divisor /= 10
            }
        }
        return out
    }
}

/// Settings of one proxy connection's state machine. All limits are documented with their defaults in
/// `cookie-proxy run --help`.
public struct ProxyConfiguration: Sendable {
    public var parserLimits = HTTPParserLimits()
    /// Add `Via: 1.1 cookie-proxy` to requests and responses (RFC 9110 §7.6.3).
    public var addVia = true
    public var viaPseudonym = "cookie-proxy"
    /// Reverse mode: origin-form requests all go here (`--reverse http://localhost:3000`).
    public var reverseUpstream: Origin? = nil
    /// Upstream proxies to go through (`--upstream-proxy`), and the hosts that bypass them.
    public var upstreamProxies: UpstreamProxyRoutes? = nil
    /// The proxy's own listening ports; requests addressed to them on a local address are refused.
    public var ownPorts: Set<Int> = []
    /// Hosts (besides loopback names) that address the proxy itself, e.g. its listen address.
    public var ownHosts: Set<String> = []
    /// Whether the shell can terminate TLS (a CA is loaded); without it every CONNECT is tunnelled.
    public var interceptionAvailable = false
    public init() {}
}

/// Why an upstream could not be used; turned into a `502` or `504` that names the host.
public enum UpstreamFailure: Sendable, Hashable {
    case resolve(host: String, reason: String)
    case refused(Origin)
    case connectTimeout(Origin)
    case responseTimeout(Origin)
    case failed(Origin, reason: String)
    /// The upstream proxy could not be reached, or would not open a tunnel.
    case proxy(UpstreamProxy, for: Origin, reason: String)
    /// The host resolves only to this machine's loopback (or unspecified) addresses, and the client is not local.
    case loopbackFromNetwork(Origin)

    var status: Int {
        switch self {
        case .connectTimeout, .responseTimeout: return 504
        case .loopbackFromNetwork: return 403
        default: return 502
        }
    }

    public var message: String {
        switch self {
        case .resolve(let host, let reason): return "cannot resolve upstream host '\(host)': \(reason)"
        case .refused(let o): return "upstream \(o) refused the connection"
        case .connectTimeout(let o): return "timed out connecting to upstream \(o)"
        case .responseTimeout(let o): return "upstream \(o) did not answer in time"
        case .failed(let o, let reason): return "upstream \(o) failed: \(reason)"
        case .proxy(let p, let o, let reason): return "upstream proxy \(p) (on the way to \(o)) \(reason)"
        case .loopbackFromNetwork(let o):
            return
                "upstream \(o) is on this machine's loopback, which a client from the network may not reach through the proxy (start it with --allow-loopback-upstream to let it)"
        }
    }
}

/// What the hooks (rules, log) learn about an exchange.
public struct ExchangeContext: Sendable {
    public var requestID: UInt64
    public var clientAddress: String
    public var method: String
    /// `http` or `https` (intercepted).
    public var scheme: String
    public var host: String
    public var port: Int
    /// Path and query as requested.
    public var target: String
    /// The response status, once known.
    public var status: Int?

    public init(
        requestID: UInt64, clientAddress: String, method: String, scheme: String, host: String, port: Int,
        target: String, status: Int?
    ) {
        (self.requestID, self.clientAddress, self.method, self.scheme) = (requestID, clientAddress, method, scheme)
        (self.host, self.port, self.target, self.status) = (host, port, target, status)
    }

    /// A context with nothing in it, for a machine without an exchange (empty strings: making one retains nothing).
    static var empty: ExchangeContext {
        ExchangeContext(
            requestID: 0, clientAddress: "", method: "", scheme: "", host: "", port: 0, target: "", status: nil)
    }

    /// `scheme://host:port/path` (the port always written, as the log wants it).
    public var url: String {
        var url = ""
        withURL { url = String(decoding: $0, as: UTF8.self) }
        return url
    }

    /// ``url``'s bytes, in temporary memory for the duration of `body` (the log writes them as they are: no string
    /// is made per logged response). Written byte by byte: string interpolation costs thousands of instructions.
    /// Not generic, so that callers in other modules get it specialised.
    public func withURL(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        var (scheme, host, target) = (self.scheme, self.host, self.target)
        return scheme.withUTF8 { s in
            host.withUTF8 { h in
                target.withUTF8 { t in
                    let v6 = h.contains(0x3A)
                    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: s.count + h.count + t.count + 11) {
                        out in
                        var i = 0
                        func put(_ b: UnsafeBufferPointer<UInt8>) {
                            guard let from = b.baseAddress, b.count > 0 else { return }
                            (out.baseAddress! + i).initialize(from: from, count: b.count)
                            i += b.count
                        }
                        func put(_ byte: UInt8) {
                            out[i] = byte
                            i += 1
                        }
                        put(s)
                        put(0x3A)
                        put(0x2F)
                        put(0x2F)
                        if v6 { put(0x5B) }
                        put(h)
                        if v6 { put(0x5D) }
                        put(0x3A)
                        var divisor = 10000
                        while divisor > 1 && port / divisor == 0 { divisor /= 10 }
                        while divisor > 0 {
                            put(UInt8(truncatingIfNeeded: 0x30 + (port / divisor) % 10))
                            divisor /= 10
                        }
                        put(t)
                        return body(UnsafeBufferPointer(rebasing: out[0..<i]))
                    }
                }
            }
        }
    }
    public var path: String {
        let u = target.utf8
        // A target without a query is its own path: no new string.
        guard let end = u.firstIndex(where: { $0 == 0x3F || $0 == 0x23 }) else { return target }
        return String(target[..<end])
    }
}

/// Points where the rules layer changes messages. The default changes nothing.
public protocol ProxyHooks: Sendable {
    /// Whether a CONNECT to this host is intercepted (TLS terminated with a minted leaf) instead of tunnelled.
    func shouldIntercept(host: String, port: Int) -> Bool
    /// The request head as it will go upstream (hop-by-hop fields already removed).
    func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext)
    /// The response head as it will go to the client (hop-by-hop fields already removed).
    func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext)
    /// The response head as it was written for the client: the head after every edit, and its bytes.
    func didForwardResponse(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext)
}

extension ProxyHooks {
    public func didForwardResponse(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {}
}

public struct NoHooks: ProxyHooks {
    public init() {}
    public func shouldIntercept(host: String, port: Int) -> Bool { false }
    public func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) {}
    public func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext) {}
}

/// Host name patterns for `--intercept`: `example.com` (exactly), `*.example.com` (any subdomain), `*` (all).
public struct HostPatternList: Sendable, Hashable {
    public var exact: Set<String> = []
    public var suffixes: [String] = []
    public var all = false
    public init() {}

    /// Adds `pattern`; false when it is not a host name or `*.suffix`.
    public mutating func add(_ pattern: String) -> Bool {
        let p = pattern.lowercased()
        if p == "*" {
            all = true
        } else if p.hasPrefix("*.") && p.count > 2 {
            // Once each: several rules may name the same pattern, and the banner lists them.
            let suffix = String(p.dropFirst(1))
            if !suffixes.contains(suffix) { suffixes.append(suffix) }
        } else if !p.isEmpty && !p.contains("/") && !p.contains("*") {
            exact.insert(p)
        } else {
            return false
        }
        return true
    }

    public func matches(_ host: String) -> Bool {
        all || exact.contains(host) || suffixes.contains { host.hasSuffix($0) }
    }

    public var isEmpty: Bool { !all && exact.isEmpty && suffixes.isEmpty }
    public var description: String {
        all ? "every host" : (exact.sorted() + suffixes.map { "*" + $0 }).joined(separator: ", ")
    }
}
