import Dispatch
import HTTPGrammar
import ProxyCore
import ProxyHTTP2
import ProxyPlatform
import ProxyTLS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A connection to an upstream: owned by one client connection, or idle in the pool.
final class UpstreamConnection: LoopHandler {
    let fd: Int32
    let origin: Origin
    unowned(unsafe) let loop: EventLoop
    /// The client it works for: set by ``ClientConnection/attach(_:)``, cleared by ``close()`` and by the pool
    /// (``EventLoop/givePooled(_:idleSince:)``). While it is set the client holds this connection (as its
    /// `upstream` or `parked`) and is in its loop's table, and a client lets go of both before it leaves the table
    /// (``ClientConnection/closeNow(socketError:)``), so the client outlives the reference. Not `weak`: a weak
    /// reference gives every client a side table, allocated on its first upstream and freed with it.
    unowned(unsafe) var owner: ExchangeDriver?
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
    /// The upstream speaks HTTP/2 (ALPN chose `h2`, or an h2c origin): the session between the machine's HTTP/1.1
    /// and the wire, and its frames not yet sent (``out`` indexes them instead of the machine's buffer).
    var http2: HTTP2ClientSession? { didSet { isHTTP2 = http2 != nil } }
    /// Through HTTP/2: the exchanges with a stream on it, by their ``UpstreamExchange`` (none since ``pooledAt``).
    var users: [ObjectIdentifier: ExchangeDriver] = [:]
    /// ``flushShared()`` is running (it wakes users, who may flush again).
    var flushingShared = false
    /// ``http2`` is set: a flag the per-request paths read without touching the session's reference count.
    private(set) var isHTTP2 = false
    var frames: [UInt8] = []

    init(fd: Int32, origin: Origin, loop: EventLoop) {
        self.fd = fd
        self.origin = origin
        self.loop = loop
    }

    func setInterest(_ events: UInt32) {
        guard !isClosed, slot >= 0, events != interest else { return }
        interest = events
        loop.poller.modify(fd, events, token: UInt64(slot))
    }

    override func handle(_ events: UInt32) {
        if isHTTP2 { return handleShared(events) }
        guard let owner else {
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
        owner = nil
        if isHTTP2 {
            let key = EventLoop.PoolKey(origin: origin, tls: tls != nil)
            if loop.http2Upstreams[key] === self { loop.http2Upstreams[key] = nil }
        }
        loop.unregisterAndClose(self, fd: fd)
    }
}
