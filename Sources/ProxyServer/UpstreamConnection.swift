import Dispatch
import HTTPGrammar
import HTTPHeads
import ProxyCore
import ProxyHTTP2
import ProxyPlatform
import ProxyTLS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A connection to an upstream: its socket, its TLS, what waits to be sent; and what it is to the exchanges
/// (``role``): one exchange's at a time, or idle in the pool; or, once it speaks HTTP/2, shared by the exchanges
/// with a stream on it.
final class UpstreamConnection: LoopHandler {
    /// What the connection is to the exchanges.
    enum Role {
        /// One exchange at a time: the one it works for, or nobody (idle in the pool, or being connected for the
        /// exchange that holds it).
        case pooled(Owner)
        /// HTTP/2 (ALPN chose `h2`, or an h2c origin): the session, and the exchanges with a stream on it
        /// (UpstreamConnection+HTTP2.swift).
        case shared(SharedSession)
    }

    /// The exchange a pooled connection works for: set by ``ExchangeDriver/attach(_:)``, cleared by ``close()`` and
    /// by the pool (``EventLoop/givePooled(_:idleSince:)``). While it is set the exchange holds this connection (as
    /// its `upstream` or `parked`) and its client is in its loop's table, and an exchange lets go of both before it
    /// closes (``ExchangeDriver/closeNow(socketError:reset:)``), so it outlives the reference. Not `weak`: a weak
    /// reference gives every exchange a side table, allocated on its first upstream and freed with it.
    struct Owner {
        unowned(unsafe) var driver: ExchangeDriver?
    }

    let fd: Int32
    let origin: Origin
    unowned(unsafe) let loop: EventLoop
    var role = Role.pooled(Owner(driver: nil))
    var connecting = false
    var remainingAddresses: [String] = []
    var interest: UInt32 = 0
    var readClosed = false
    /// Since when it has been idle: in the pool, parked with a client, or (through HTTP/2) without a stream.
    var pooledAt: Int64 = 0
    var isClosed = false
    /// TLS towards an intercepted host's upstream.
    var tls: TLSEngine?
    /// Towards the upstream: what of the client's ``ConnectionIO/toUpstream`` it has taken, its TLS records.
    var out = Outbound()
    /// What an upstream proxy has answered to CONNECT so far; nil when no answer is awaited.
    var tunnelAnswer: [UInt8]?

    init(fd: Int32, origin: Origin, loop: EventLoop) {
        self.fd = fd
        self.origin = origin
        self.loop = loop
    }

    /// The exchange a pooled connection works for (nil when shared).
    var owner: ExchangeDriver? {
        @inline(__always) get {
            guard case .pooled(let owner) = role else { return nil }
            return owner.driver
        }
    }

    /// A pooled connection now works for `driver` (nil: for nobody).
    func setOwner(_ driver: ExchangeDriver?) { role = .pooled(Owner(driver: driver)) }

    /// Whether it is shared (HTTP/2): read on the per-request paths without touching the session's reference count.
    var isShared: Bool {
        @inline(__always) get {
            if case .shared = role { return true }
            return false
        }
    }

    /// The HTTP/2 session and its users, when shared.
    var shared: SharedSession? {
        guard case .shared(let shared) = role else { return nil }
        return shared
    }

    func setInterest(_ events: UInt32) {
        guard !isClosed, slot >= 0, events != interest else { return }
        interest = events
        loop.poller.modify(fd, events, token: UInt64(slot))
    }

    override func handle(_ events: UInt32) {
        guard case .pooled(let pooled) = role else { return handleShared(events) }
        guard let owner = pooled.driver else {
            // Idle in the pool: any event means the server closed it or sent garbage.
            loop.dropPooled(self)
            return
        }
        if owner.parked === self {
            owner.dropParked()
            return
        }
        if connecting {
            if events & (Poller.writable | Poller.hangup) != 0 {
                owner.upstreamConnectFinished(self, error: Sys.socketError(fd))
            }
            return
        }
        if events & (Poller.readable | Poller.hangup) != 0 && interest & Poller.readable != 0 {
            owner.upstreamReadable(self)
            return
        }
        if events & Poller.writable != 0 { owner.apply() }
    }

    func close() {
        if isClosed { return }
        isClosed = true
        if isShared {
            let key = EventLoop.PoolKey(origin: origin, tls: tls != nil)
            if loop.http2Upstreams[key] === self { loop.http2Upstreams[key] = nil }
        } else {
            setOwner(nil)
        }
        loop.unregisterAndClose(self, fd: fd)
    }
}
