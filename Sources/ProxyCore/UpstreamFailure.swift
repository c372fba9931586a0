import HTTPGrammar
import HTTPHeads

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why an upstream could not be used; turned into a `502` or `504` that names the host.
public enum UpstreamFailure: Sendable, Hashable {
    case resolve(host: String, reason: String)
    case refused(Origin)
    case connectTimeout(Origin)
    case responseTimeout(Origin)
    case failed(Origin, reason: String)
    /// The upstream's certificate did not verify (intercepted https): the reason, and the two ways past it.
    case certificate(Origin, reason: String)
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
        case .certificate(let o, let reason):
            return
                "upstream \(o) failed: TLS: \(reason) (trust its issuer with --upstream-ca FILE, or skip verification for this host with --insecure-upstream \(o.host))"
        case .proxy(let p, let o, let reason): return "upstream proxy \(p) (on the way to \(o)) \(reason)"
        case .loopbackFromNetwork(let o):
            return
                "upstream \(o) is on this machine's loopback, which a client from the network may not reach through the proxy (start it with --allow-loopback-upstream to let it)"
        }
    }
}
