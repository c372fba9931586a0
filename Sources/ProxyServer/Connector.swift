import HTTPGrammar
import HTTPHeads
import ProxyCore
import ProxyPlatform

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The decisions of connecting to an upstream, apart from the sockets that carry them out: which addresses a host
/// has without asking DNS, which of them a client from the network may be sent to, and what a failed attempt is
/// called. Pure: the connection (``ClientConnection``) does the I/O and asks these.
enum Connector {
    /// Where the addresses of a host come from.
    enum Addresses: Equatable, Sendable {
        /// Known without DNS: `--resolve`, an IP literal, a `localhost` name (RFC 6761 §6.3: both loopback
        /// addresses, since development servers often listen on only one of them).
        case known([String])
        /// The resolver's (its cache first).
        case lookUp
    }

    static func addresses(of host: String, overrides: [String: String]) -> Addresses {
        if let mapped = overrides[host] { return .known([mapped]) }
        if HostName.isIPLiteral(host) { return .known([host]) }
        if host == "localhost" || host.hasSuffix(".localhost") { return .known(["127.0.0.1", "::1"]) }
        return .lookUp
    }

    /// The addresses a client may be connected to: a client from the network is never sent to this machine's
    /// loopback or unspecified addresses (it would reach services bound there for this machine only) unless
    /// `--allow-loopback-upstream`. Nil when that leaves none of a non-empty list (the refusal is then the answer).
    static func permitted(_ addresses: [String], fromNetwork: Bool, allowLoopbackUpstream: Bool) -> [String]? {
        guard fromNetwork && !allowLoopbackUpstream else { return addresses }
        let remaining = addresses.filter { !LocalAddress.reachesThisMachineOnly($0) }
        return remaining.isEmpty && !addresses.isEmpty ? nil : remaining
    }

    /// What the last failed attempt was, for the client's answer: `error` is its errno (0: no address to try).
    static func failure(_ error: Int32, origin: Origin, through hop: UpstreamHop?) -> UpstreamFailure {
        if let hop {
            let reason =
                error == ECONNREFUSED
                ? "refused the connection" : error == 0 ? "has no address" : "failed: \(Sys.errorText(-error))"
            return .proxy(hop.proxy, for: origin, reason: reason)
        }
        switch error {
        case ECONNREFUSED: return .refused(origin)
        case ETIMEDOUT: return .connectTimeout(origin)
        case 0: return .failed(origin, reason: "no address")
        default: return .failed(origin, reason: Sys.errorText(-error))
        }
    }
}
