import HTTPGrammar
import HTTPHeads

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Settings of one proxy connection's state machine. All limits are documented with their defaults in
/// `cookie-proxy run --help`.
public struct ProxyConfiguration: Sendable {
    public var parserLimits = HTTPParserLimits()
    /// Add `Via: 1.1 cookie-proxy` to requests and responses (RFC 9110 §7.6.3).
    public var addVia = true
    public var viaPseudonym = "cookie-proxy"
    /// Reverse mode (`--route`, `--reverse`): requests go by these routes; empty: a forward proxy.
    public var routes = RouteTable([])
    /// Reverse mode with one route, everything to `upstream`, the client's Host kept.
    public var reverseUpstream: Origin? {
        get { routes.routes.first?.upstream }
        set { routes = RouteTable(newValue.map { [ReverseRoute(upstream: $0, preserveHost: true)] } ?? []) }
    }
    public var isReverse: Bool { !routes.isEmpty }
    /// Towards a route's upstream, `X-Forwarded-For`, `-Proto` and `-Host` say who asked for what (the client's own
    /// ones are replaced: a client cannot pass itself off as another).
    public var addForwarded = true
    /// Upstream proxies to go through (`--upstream-proxy`), and the hosts that bypass them.
    public var upstreamProxies: UpstreamProxyRoutes? = nil
    /// The proxy's own listening ports; requests addressed to them on a local address are refused.
    public var ownPorts: Set<Int> = []
    /// Hosts (besides loopback names) that address the proxy itself, e.g. its listen address.
    public var ownHosts: Set<String> = []
    /// Whether the shell can terminate TLS (a CA is loaded); without it every CONNECT is tunnelled.
    public var interceptionAvailable = false
    /// Whether a connection may open with HTTP/2's connection preface (RFC 9113 §3.3, "prior knowledge": h2c on a
    /// plain listener, h2 inside TLS): the shell then speaks HTTP/2 with the client (``ConnectionIO/Command/startHTTP2(leftover:)``).
    public var acceptsHTTP2Preface = false
    /// What a browser that opens the forward proxy's own URL gets (`GET /` in origin form, accepting `text/html`):
    /// an HTML page saying what this is and where the inspector and the onboarding pages are, with `200`. Nil, or
    /// another client: the `400` that says to send an absolute URL.
    public var forwardProxyPage: String? = nil
    public init() {}
}
