import Dispatch
import ExchangeFacts
import HTTPGrammar
import HTTPHeads
import Locking
import ProxyCore
import ProxyPlatform

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Milliseconds on the monotonic clock.
func monotonicMilliseconds() -> Int64 { monotonicMicroseconds() / 1000 }

/// Microseconds on the monotonic clock.
func monotonicMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// Something registered with the loop's poller under a slot number. Loop-confined: only its loop's thread
/// touches it; another thread can only hold it in a ``LoopBound`` and hand it back to the loop.
class LoopHandler {
    var slot = -1
    func handle(_ events: UInt32) {}
}

/// One event loop: a thread, a poller, its own listening socket (SO_REUSEPORT) or descriptor of a shared one, the client
/// connections it accepted and their upstream connections, an upstream pool, and coarse timers.
/// Everything here is touched only by the loop's thread, except `post`, which any thread may call. `@unchecked`:
/// that confinement is the loop's design, which the compiler cannot see (the posted work crosses through a lock).
final class EventLoop: @unchecked Sendable {
    unowned(unsafe) let server: ProxyServer
    let poller: Poller
    var configuration: ServerConfiguration { server.configuration }
    private var handlers: [LoopHandler?] = []
    private var freeSlots: [Int] = []
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// Idle upstream connections per origin; plain and TLS (intercepted) ones are kept apart. Each origin's list
    /// is an object, so taking and giving change it in place after a plain lookup: mutating an array inside the
    /// dictionary goes through its `_modify` accessor, whose coroutine frame was a malloc and a free per call.
    var pool: [PoolKey: PoolList] = [:]
    /// The origin looked up last, and its list: consecutive exchanges with one origin (the common case) skip
    /// the hashing. Cleared whenever a list leaves the pool.
    private var lastPooled: (key: PoolKey, list: PoolList)? = nil
    /// Idle upstreams kept by their exchanges (``ExchangeDriver/parked``), at most `parkLimit`.
    var parkedCount = 0
    let parkLimit: Int
    /// Upstream connections that speak HTTP/2, by origin: an exchange whose client speaks HTTP/2 (or to an h2c
    /// origin) takes a stream on one rather than a connection of its own (UpstreamConnection+HTTP2.swift).
    var http2Upstreams: [PoolKey: UpstreamConnection] = [:]
    /// Exchanges whose upstream bytes wait for the end of the current batch of events.
    var deferredFlushes: [ExchangeDriver] = []
    /// HTTP/2 client connections whose frames wait for the end of the current batch of events.
    var deferredSessions: [ClientConnection] = []
    /// Closed connections' buffers, emptied, for the next connections accepted (``keepBuffers(_:_:)``).
    var spareBuffers: [SpareBuffers] = []
    /// Where this loop's connections parse and rewrite heads, one head at a time.
    let headStorage = HeadStorage()
    struct SpareBuffers {
        var machine: ProxyConnectionMachine.Buffers
        var io: ConnectionIO
    }
    /// How many closed connections' buffers are kept (each buffer at most 16 KiB: ``ProxyConnectionMachine/keep(_:as:)``).
    static let spareBufferLimit = 16

    struct PoolKey: Hashable {
        var origin: Origin
        var tls: Bool

        /// One word for the hasher: the host's bytes folded with FNV-1a, the port and the scheme (hashing the
        /// string itself cost most of taking an upstream from the pool and giving it back).
        func hash(into hasher: inout Hasher) {
            let fold = { (bytes: UnsafeBufferPointer<UInt8>) -> UInt64 in
                var h: UInt64 = 0xCBF2_9CE4_8422_2325
                for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
                return h
            }
            let h =
                origin.host.utf8.withContiguousStorageIfAvailable(fold)
                ?? Array(origin.host.utf8).withUnsafeBufferPointer(fold)
            hasher.combine(h ^ UInt64(truncatingIfNeeded: origin.port) << 1 ^ (tls ? 1 : 0))
        }
    }
    final class PoolList {
        var upstreams: [UpstreamConnection] = []
    }

    /// The loop's client connections, each at its ``ClientConnection/listIndex`` (removed by moving the last one
    /// into its place: no hashing per connection).
    private var clientList: [ClientConnection] = []
    private var localList: [ObjectIdentifier: LocalConnection] = [:]
    private var localListener: Listener?
    private let inbox = Locked<[@Sendable () -> Void]>([])
    private var listeners: [Listener] = []
    var draining = false
    /// Rounds of events so far (one `wait` and what follows it).
    private(set) var rounds = 0
    /// Milliseconds on the monotonic clock when the loop last read it (once per event: ``readClock()``), for
    /// deadlines; the same reading in microseconds is the head storage's (``HeadStorage/now``), for exchanges' times.
    private(set) var now: Int64 = monotonicMilliseconds()
    private var lastTick: Int64 = 0

    init(server: ProxyServer) {
        self.server = server
        poller = Poller(kind: server.configuration.poller)
        parkLimit = server.configuration.poolPerOrigin
        headStorage.stage = server.hooks.makeStage()
        readClock()
    }

    /// Reads the clock: ``now`` and ``HeadStorage/now`` from one reading.
    @inline(__always)
    func readClock() {
        let micros = monotonicMicroseconds()
        headStorage.now = micros
        now = micros / 1000
    }

    // MARK: Slots

    func register(_ handler: LoopHandler, fd: Int32, events: UInt32) {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            handlers[slot] = handler
        } else {
            slot = handlers.count
            handlers.append(handler)
        }
        handler.slot = slot
        poller.add(fd, events, token: UInt64(slot))
    }

    /// Forgets `handler` and closes `fd`. Closing the descriptor takes it out of an epoll set (nothing else refers
    /// to its socket: no dup, no fork) or a kqueue, so only the poll poller's table needs the `remove` (one system
    /// call less per connection with the others).
    func unregisterAndClose(_ handler: LoopHandler, fd: Int32) {
        poller.remove(fd)
        if handler.slot >= 0 {
            handlers[handler.slot] = nil
            freeSlots.append(handler.slot)
            handler.slot = -1
        }
        Sys.close(fd)
    }

    /// Runs `work` on the loop's thread soon (from any thread).
    func post(_ work: @escaping @Sendable () -> Void) {
        inbox.withLock { $0.append(work) }
        poller.wake()
    }

    // MARK: Running

    /// `tlsHost`: a TLS listener's, the name its leaf is minted for when a client sends no SNI.
    func start(listenFD: Int32, tlsHost: String? = nil) {
        let listener = Listener(fd: listenFD, loop: self, local: false, tlsHost: tlsHost)
        listeners.append(listener)
        register(listener, fd: listenFD, events: Poller.readable)
    }

    /// Also serve the local service (the inspector) on this listening socket.
    func startLocal(listenFD: Int32) {
        let listener = Listener(fd: listenFD, loop: self, local: true)
        localListener = listener
        register(listener, fd: listenFD, events: Poller.readable)
    }

    func run() {
        while true {
            poller.wait(timeoutMilliseconds: 250) { token, events in
                if token == Poller.wakeToken {
                    poller.drainWake()
                    let work = inbox.withLock { items -> [@Sendable () -> Void] in
                        let taken = items
                        items.removeAll()
                        return taken
                    }
                    readClock()
                    for item in work { item() }
                    return
                }
                readClock()
                handlers[Int(token)]?.handle(events)
            }
            // Until none is left: a flush can add one (a stream's response for its HTTP/2 connection's frames).
            while !deferredFlushes.isEmpty || !deferredSessions.isEmpty {
                var batch: [ExchangeDriver] = []
                swap(&batch, &deferredFlushes)
                for exchange in batch { exchange.flushDeferred() }
                if deferredFlushes.isEmpty {
                    batch.removeAll(keepingCapacity: true)
                    deferredFlushes = batch
                }
                if !deferredSessions.isEmpty {
                    var sessions: [ClientConnection] = []
                    swap(&sessions, &deferredSessions)
                    for connection in sessions { connection.sendDeferred() }
                }
            }
            readClock()
            if now - lastTick >= 250 {
                lastTick = now
                tick()
            }
            rounds &+= 1
            if draining && clientList.isEmpty && localList.isEmpty { break }
        }
        for (_, list) in pool { for upstream in list.upstreams { upstream.close() } }
        pool.removeAll()
        lastPooled = nil
    }

    /// Timers: per-phase deadlines of client connections, idle pooled upstreams.
    private func tick() {
        for client in clientList { client.checkDeadline() }
        for local in Array(localList.values) { local.checkDeadline() }
        let limit = Int64(configuration.poolIdleTimeout * 1000)
        var emptied: [PoolKey] = []
        for shared in Array(http2Upstreams.values)
        where (shared.shared?.users.isEmpty ?? true) && now - shared.pooledAt >= limit {
            shared.close()
        }
        for (origin, list) in pool {
            let upstreams = list.upstreams
            guard upstreams.contains(where: { now - $0.pooledAt >= limit }) || upstreams.isEmpty else { continue }
            list.upstreams = upstreams.filter { now - $0.pooledAt < limit }
            for stale in upstreams where now - stale.pooledAt >= limit { stale.close() }
            if list.upstreams.isEmpty { emptied.append(origin) }
        }
        for origin in emptied { pool[origin] = nil }
        if !emptied.isEmpty { lastPooled = nil }
    }

    /// Stop accepting; let connections finish their exchange in flight.
    func beginDrain() {
        draining = true
        for listener in listeners { unregisterAndClose(listener, fd: listener.fd) }
        listeners.removeAll()
        if let localListener {
            unregisterAndClose(localListener, fd: localListener.fd)
            self.localListener = nil
        }
        for local in Array(localList.values) { local.close() }
        for client in clientList { client.drain() }
    }

    /// Closes everything at once (the drain deadline passed).
    func closeAll() {
        for local in Array(localList.values) { local.close() }
        for client in clientList { client.closeNow() }
        for shared in Array(http2Upstreams.values) { shared.close() }
    }

    // MARK: Clients

    func accepted(fd: Int32, address: String, loopback: Bool, tlsHost: String? = nil) {
        let allowed = loopback || configuration.allowed.contains { $0.contains(address) }
        if !allowed || draining || server.activeConnections.load() >= configuration.maximumConnections {
            let (status, reason) =
                !allowed
                ? (403, "client \(address) is not allowed; start the proxy with --allow CIDR to admit it")
                : (503, "too many connections")
            let proxy = configuration.proxy
            let answer = ProxyAnswer(
                status: status, reason: reason, via: proxy.addVia ? proxy.viaPseudonym : nil, close: true)
            var bytes = answer.bytes
            _ = bytes.withUnsafeMutableBytes { Sys.send(fd, UnsafeRawBufferPointer($0)) }
            Sys.close(fd)
            reportOwnAnswer(
                client: address, status: status, bodyBytes: answer.body.count, read: [], https: tlsHost != nil)
            return
        }
        let client = ClientConnection(fd: fd, address: address, fromNetwork: !loopback, loop: self)
        client.listIndex = clientList.count
        clientList.append(client)
        server.activeConnections.add(1)
        register(client, fd: fd, events: Poller.readable)
        if let tlsHost { client.startListenerTLS(fallbackHost: tlsHost) }
    }

    /// An answer the loop gave outside any exchange (a client refused at accept, plain HTTP to the TLS listener):
    /// told to the stage as an exchange of its own, so that its observers (the access log) have a line for it, with
    /// what of the request was read.
    func reportOwnAnswer(client: String, status: Int, bodyBytes: Int, read: ArraySlice<UInt8>, https: Bool) {
        guard let stage = headStorage.stage else { return }
        let echo = RequestEcho(scanning: read)
        let context = ExchangeContext(
            requestID: server.nextRequestID(), clientAddress: client, method: echo.method ?? "-",
            scheme: https ? "https" : "http", host: "", port: 0, target: echo.target ?? "-", status: status)
        var times = ExchangeTimes()
        (times.accepted, times.ended) = (headStorage.now, headStorage.now)
        stage.exchangeEnded(context, ExchangeEnd(ending: .answered, bodyBytes: bodyBytes, times: times, request: echo))
    }

    /// A connection to the local service: the same admission as the proxy's (loopback, `--allow`).
    func acceptedLocal(fd: Int32, address: String, loopback: Bool) {
        guard let service = server.localService, !draining,
            loopback || configuration.allowed.contains(where: { $0.contains(address) })
        else {
            Sys.close(fd)
            return
        }
        let connection = LocalConnection(fd: fd, address: address, loop: self, service: service)
        localList[ObjectIdentifier(connection)] = connection
        register(connection, fd: fd, events: Poller.readable)
    }

    func localClosed(_ connection: LocalConnection) { localList.removeValue(forKey: ObjectIdentifier(connection)) }

    func removed(_ client: ClientConnection) {
        let index = client.listIndex
        guard index >= 0 else { return }
        client.listIndex = -1
        let last = clientList.removeLast()
        if last !== client {
            clientList[index] = last
            last.listIndex = index
        }
        server.activeConnections.subtract(1)
    }

    /// Keeps a closed connection's buffers for the next connection (a connection per request then allocates
    /// none of them): emptied, and only those a large message did not grow.
    func keepBuffers(_ machine: ProxyConnectionMachine.Buffers, _ io: inout ConnectionIO) {
        guard spareBuffers.count < Self.spareBufferLimit else { return }
        var kept = ConnectionIO()
        ProxyConnectionMachine.keep(&io.toClient, as: &kept.toClient)
        ProxyConnectionMachine.keep(&io.toUpstream, as: &kept.toUpstream)
        io.commands.removeAll(keepingCapacity: true)
        swap(&kept.commands, &io.commands)
        spareBuffers.append(SpareBuffers(machine: machine, io: kept))
    }

    // MARK: Pool

    // An origin's empty list stays until the idle timer sweeps it.
    func takePooled(_ origin: Origin, tls: Bool) -> UpstreamConnection? {
        poolList(PoolKey(origin: origin, tls: tls), create: false)?.upstreams.popLast()
    }

    /// The pool's list for `key` (made, when `create`, if the origin has none).
    private func poolList(_ key: PoolKey, create: Bool) -> PoolList? {
        if let last = lastPooled, last.key == key { return last.list }
        if let list = pool[key] {
            lastPooled = (key, list)
            return list
        }
        guard create else { return nil }
        let list = PoolList()
        pool[key] = list
        lastPooled = (key, list)
        return list
    }

    /// Makes `upstream` idle in the pool; `idleSince`, when it was already idle (parked with a client).
    func givePooled(_ upstream: UpstreamConnection, idleSince: Int64? = nil) {
        if draining {
            upstream.close()
            return
        }
        let list = poolList(PoolKey(origin: upstream.origin, tls: upstream.tls != nil), create: true)!
        guard list.upstreams.count < configuration.poolPerOrigin else {
            upstream.close()
            return
        }
        list.upstreams.append(upstream)
        upstream.setOwner(nil)
        upstream.pooledAt = idleSince ?? now
        upstream.setInterest(Poller.readable)
    }

    func dropPooled(_ upstream: UpstreamConnection) {
        let key = PoolKey(origin: upstream.origin, tls: upstream.tls != nil)
        if let list = poolList(key, create: false) {
            list.upstreams.removeAll { $0 === upstream }
            if list.upstreams.isEmpty {
                pool[key] = nil
                lastPooled = nil
            }
        }
        upstream.close()
    }
}

/// The loop's listening socket.
final class Listener: LoopHandler {
    let fd: Int32
    unowned(unsafe) let loop: EventLoop
    /// The local service's socket rather than the proxy's.
    let local: Bool
    /// A TLS listener's (`--listen https://…`): the name its leaf is minted for when a client sends no SNI.
    let tlsHost: String?
    init(fd: Int32, loop: EventLoop, local: Bool, tlsHost: String? = nil) {
        self.fd = fd
        self.loop = loop
        self.local = local
        self.tlsHost = tlsHost
    }
    /// The loop's round when the socket was last readable.
    private var lastRound = -2

    /// Accepts one connection, or (when the socket was readable in the previous round too: connections arrive
    /// faster than rounds go by) up to 64. A lone connection so costs one accept instead of a second one that only
    /// says "none left" (nginx accepts one per event the same way); the socket is level-triggered, so one still
    /// waiting is reported again in the next round.
    override func handle(_ events: UInt32) {
        let round = loop.rounds
        let burst = round &- lastRound == 1
        lastRound = round
        for _ in 0..<(burst ? 64 : 1) {
            let (c, address, loopback) = Sys.accept(fd)
            if c < 0 { return }
            if local {
                loop.acceptedLocal(fd: c, address: address, loopback: loopback)
            } else {
                loop.accepted(fd: c, address: address, loopback: loopback, tlsHost: tlsHost)
            }
        }
    }
}

/// A loop-confined object's reference carried through another thread (a resolver's answer, a stream's wake-up)
/// and used only back on its loop's thread: the one place where the shell vouches for confinement instead of
/// the compiler checking it. Weak: an object closed in the meantime is not kept alive, and `post` does nothing.
struct LoopBound<Value: AnyObject>: @unchecked Sendable {
    private weak var value: Value?
    private let loop: EventLoop

    init(_ value: Value, on loop: EventLoop) {
        self.value = value
        self.loop = loop
    }

    /// Runs `work` with the value on its loop's thread, if it is still alive then.
    func post(_ work: @escaping @Sendable (Value) -> Void) {
        let bound = self
        loop.post {
            if let value = bound.value { work(value) }
        }
    }
}
