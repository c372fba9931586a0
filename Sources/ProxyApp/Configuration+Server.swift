import HTTPHeads
import ProxyCore
import ProxyServer
import ProxyTLS

/// The server's part of a ``ProxyApp/Configuration``, in its own values: where it listens, where requests go, who may
/// connect, its limits and its deadlines. ``ProxyApp/start(_:)`` makes the server's configuration from them
/// (``ProxyApp/Configuration/serverConfiguration``); a caller never builds ProxyServer's.
extension ProxyApp.Configuration {
    /// A network a client may connect from besides loopback (`--allow`): `CIDR("192.168.1.0/24")`, nil when not one.
    public typealias Network = CIDR
    /// Whether clients may speak HTTP/2 (`--http2`: off, offered by ALPN after HTTP/1.1, or preferred).
    public typealias HTTP2 = HTTP2Mode
    /// How the event loops wait for sockets (`COOKIE_PROXY_POLLER`).
    public typealias Poller = PollerKind

    /// A listening socket: `host:port`, TLS from the first byte (`https://`) or plain.
    public struct Listener: Sendable, Hashable {
        public var host: String
        public var port: Int
        public var tls: Bool
        public init(host: String, port: Int, tls: Bool = false) { (self.host, self.port, self.tls) = (host, port, tls) }
    }

    /// What one connection and the whole proxy may hold.
    public struct Limits: Sendable, Hashable {
        /// Client connections open at once; the next is answered `503`.
        public var connections = serverDefaults.maximumConnections
        /// Largest request or response head (`431`, `414` or `502` past it).
        public var headBytes = serverDefaults.proxy.parserLimits.maximumHeadBytes
        /// Most field lines in one head.
        public var fields = serverDefaults.proxy.parserLimits.maximumFieldCount
        public init() {}
    }

    /// How long each phase of an exchange may take, in seconds (each an option of `cookie-proxy run`).
    public struct Deadlines: Sendable, Hashable {
        /// A request head, from its first byte (slowloris).
        public var header = serverDefaults.headerTimeout
        /// A keep-alive connection between requests.
        public var idle = serverDefaults.idleTimeout
        /// Making the upstream connection.
        public var connect = serverDefaults.connectTimeout
        /// The response's head, once the request is sent.
        public var response = serverDefaults.responseTimeout
        /// A response body the upstream stops sending.
        public var upstreamRead = serverDefaults.upstreamReadTimeout
        /// Bytes the client does not take.
        public var clientWrite = serverDefaults.clientWriteTimeout
        /// A body or a tunnel with nothing moving.
        public var streamIdle = serverDefaults.streamIdleTimeout
        public init() {}
    }

    /// The first listener (the one the banner names).
    public var listener: Listener { listeners.first ?? Listener(host: "127.0.0.1", port: 8080) }

    /// Reverse mode: requests go by ``routes``.
    public var isReverse: Bool { !routes.isEmpty }

    /// The server's configuration these values make.
    var serverConfiguration: ServerConfiguration {
        var server = ServerConfiguration()
        let first = listener
        (server.listenHost, server.listenPort, server.listenTLS) = (first.host, first.port, first.tls)
        server.moreListeners = listeners.dropFirst().map { .init(host: $0.host, port: $0.port, tls: $0.tls) }
        server.proxy.routes = RouteTable(routes)
        for route in routes where route.scheme == .h2c { server.h2cUpstreams.insert(route.upstream) }
        server.proxy.addForwarded = forwardedHeaders
        server.proxy.upstreamProxies = upstreamProxies
        server.proxy.addVia = via
        server.allowed = allowed
        server.allowLoopbackUpstream = allowLoopbackUpstream
        server.resolveOverrides = resolve
        server.maximumConnections = limits.connections
        server.proxy.parserLimits = HTTPParserLimits(
            maximumHeadBytes: limits.headBytes, maximumFieldCount: limits.fields)
        server.headerTimeout = deadlines.header
        server.idleTimeout = deadlines.idle
        server.connectTimeout = deadlines.connect
        server.responseTimeout = deadlines.response
        server.upstreamReadTimeout = deadlines.upstreamRead
        server.clientWriteTimeout = deadlines.clientWrite
        server.streamIdleTimeout = deadlines.streamIdle
        server.http2 = http2
        server.proxy.acceptsHTTP2Preface = http2 != .off
        server.loops = threads
        server.poller = poller
        return server
    }

    /// This machine's CPUs (the default number of event loops).
    public static var availableCPUs: Int { ServerConfiguration.availableCPUs }
}

/// The server's own defaults, which ``ProxyApp/Configuration/Limits`` and ``ProxyApp/Configuration/Deadlines``
/// start from (one place for each value).
private let serverDefaults = ServerConfiguration()
