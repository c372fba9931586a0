internal import CProxyShims
import Foundation
import HTTPGrammar
import HTTPHeads
import ProxyCore
import ProxyPlatform
import ProxyTLS

/// Settings of the server shell; every default is shown by `cookie-proxy run --help`.
public struct ServerConfiguration: Sendable {
    /// Numeric address to listen on (loopback by default: never an open proxy).
    public var listenHost = "127.0.0.1"
    public var listenPort = 8080
    /// The listener speaks TLS (`--listen https://…`): each connection's TLS ends here, with a leaf the local CA
    /// mints for the name the client asks for (SNI; the listen address without one), ALPN `h2` and `http/1.1`.
    public var listenTLS = false
    /// More listeners (`--listen` given more than once), plain or TLS.
    public var moreListeners: [Listen] = []
    public struct Listen: Sendable, Hashable {
        public var host: String
        public var port: Int
        public var tls: Bool
        public init(host: String, port: Int, tls: Bool) { (self.host, self.port, self.tls) = (host, port, tls) }
    }
    /// Every listener, the first one first.
    public var listeners: [Listen] { [Listen(host: listenHost, port: listenPort, tls: listenTLS)] + moreListeners }
    /// Clients allowed besides loopback (`--allow CIDR`).
    public var allowed: [CIDR] = []
    /// Whether a client from the network (admitted by `allowed`) may reach this machine's loopback addresses
    /// through the proxy (`--allow-loopback-upstream`). Off, services that listen on loopback only (the
    /// inspector, a dev server, a database) stay out of the devices' reach.
    public var allowLoopbackUpstream = false
    /// Event loops (threads); `cookie-proxy run` uses one per CPU the process may run on.
    public var loops = 1
    /// What waits for events (`COOKIE_PROXY_POLLER`): epoll or kqueue, or the portable poll(2).
    public var poller = PollerKind.native

    /// CPUs this process may run on: the affinity mask, so `taskset -c 0` or a cgroup cpuset means one loop
    /// rather than two threads taking turns on one CPU (as Go's `runtime.NumCPU` counts).
    public static var availableCPUs: Int { Int(CProxy_available_cpus()) }

    /// This machine's network addresses (not loopback): what to type on a device when listening on 0.0.0.0 or ::.
    public static func networkAddresses() -> [String] {
        var out = [CChar](repeating: 0, count: 64 * 32)
        let n = CProxy_interface_addresses(&out, 32)
        guard n > 0 else { return [] }
        return (0..<Int(n)).map { i in out.withUnsafeBufferPointer { String(cString: $0.baseAddress! + 64 * i) } }
    }
    public var maximumConnections = 4096
    /// Seconds to receive a whole request head once it has started (slowloris).
    public var headerTimeout: Double = 10
    /// Seconds an idle keep-alive client connection is kept.
    public var idleTimeout: Double = 60
    /// Seconds to connect to an upstream.
    public var connectTimeout: Double = 10
    /// Seconds to wait for an upstream's response head.
    public var responseTimeout: Double = 60
    /// Seconds the upstream may send nothing while its response body is read (nginx's `proxy_read_timeout`);
    /// then the client's connection closes, so that it sees the response is incomplete.
    public var upstreamReadTimeout: Double = 60
    /// Seconds bytes for the client may wait without the client taking any (nginx's `send_timeout`); then both
    /// sides close.
    public var clientWriteTimeout: Double = 60
    /// Seconds a body stream or tunnel may be silent.
    public var streamIdleTimeout: Double = 300
    /// Idle upstream connections kept per origin, and for how long.
    public var poolPerOrigin = 256
    public var poolIdleTimeout: Double = 30
    /// Bytes queued towards one side before reading from the other side pauses (backpressure).
    public var highWater = 256 * 1024
    /// Host names answered without DNS (`--resolve HOST:ADDRESS`, as curl's --resolve), for tests and dev hosts.
    public var resolveOverrides: [String: String] = [:]
    public var proxy = ProxyConfiguration()
    /// HTTP/2 with clients of intercepted TLS, by ALPN (`--http2`); h2c's preface is `proxy.acceptsHTTP2Preface`.
    public var http2 = HTTP2Mode.off
    /// Origins spoken to in HTTP/2 with prior knowledge, without TLS (`--reverse h2c://host:port`).
    public var h2cUpstreams: Set<Origin> = []
    /// Where the local service (the inspector) listens, when the server has one; port 0 picks one.
    public var localServiceAddress: (host: String, port: Int)? = nil
    /// When that port is taken, listen on any free one instead (the default address, not one the user gave).
    public var localServiceAnyPortIfTaken = false
    /// Requests through the proxy to this host (port 80) are sent to the local service: the onboarding pages
    /// (`http://cookie-proxy.local/`), which only the service's own Host routing decides to show.
    public var onboardingHost: String? = "cookie-proxy.local"
    public init() {}
}

/// Addresses that reach this machine itself.
enum LocalAddress {
    /// Loopback and unspecified networks.
    private static let thisMachine = [CIDR("127.0.0.0/8")!, CIDR("::1/128")!, CIDR("0.0.0.0/8")!, CIDR("::/128")!]

    /// Loopback, or an unspecified address (a connect to 0.0.0.0 or :: reaches this machine too). Resolver output
    /// and literals from requests come in any spelling, so these are parsed.
    static func reachesThisMachineOnly(_ numeric: String) -> Bool {
        thisMachine.contains { $0.contains(numeric) }
    }
}

/// An IPv4 or IPv6 network in CIDR notation, e.g. `192.168.1.0/24`.
public struct CIDR: Sendable, Hashable, CustomStringConvertible {
    let bytes: [UInt8]
    let prefix: Int
    public let description: String

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, !first.isEmpty, let address = CIDR.parseAddress(String(first)) else {
            return nil
        }
        let maxPrefix = address.count * 8
        let prefix = parts.count == 2 ? Int(parts[1]) : maxPrefix
        guard let prefix, (0...maxPrefix).contains(prefix) else { return nil }
        self.bytes = address
        self.prefix = prefix
        self.description = text
    }

    public func contains(_ address: String) -> Bool {
        guard var a = CIDR.parseAddress(address) else { return false }
        // IPv4-mapped IPv6 (::ffff:a.b.c.d) against an IPv4 network.
        if a.count == 16 && bytes.count == 4 && a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xFF && a[11] == 0xFF {
            a = Array(a[12...])
        }
        guard a.count == bytes.count else { return false }
        var bits = prefix
        for i in 0..<bytes.count where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : UInt8(0xFF << (8 - bits))
            if a[i] & mask != bytes[i] & mask { return false }
            bits -= 8
        }
        return true
    }

    static func parseAddress(_ s: String) -> [UInt8]? {
        if !s.contains(":") {
            let parts = s.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var out: [UInt8] = []
            for p in parts {
                guard let v = UInt8(p) else { return nil }
                out.append(v)
            }
            return out
        }
        // IPv6, with :: and an optional dotted IPv4 tail.
        var head: [UInt16] = []
        var tail: [UInt16] = []
        let halves = s.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            for g in part.split(separator: ":", omittingEmptySubsequences: false) {
                if g.contains(".") {
                    guard let v4 = parseAddress(String(g)) else { return nil }
                    result.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    result.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                } else {
                    guard let v = UInt16(g, radix: 16), g.count <= 4 else { return nil }
                    result.append(v)
                }
            }
            return result
        }
        guard let h = groups(halves[0]) else { return nil }
        head = h
        if halves.count == 2 {
            guard let t = groups(halves[1]) else { return nil }
            tail = t
            guard head.count + tail.count < 8 else { return nil }
        } else {
            guard head.count == 8 else { return nil }
        }
        let all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}
