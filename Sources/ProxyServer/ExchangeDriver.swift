import ExchangeFacts
import HTTPHeads
import ProxyCore
import ProxyHTTP2
import ProxyPlatform

/// What faces an exchange's client: where the driver sends what its machine has for the client, and what it asks
/// of the client's side. A client's socket (``ClientConnection``, for the HTTP/1.1 exchanges it carries one after
/// another) or an HTTP/2 client's session (``HTTP2Client``, for each of its streams' exchanges).
protocol ClientPort: AnyObject {
    /// Bytes for `driver`'s client not yet taken by it.
    func pending(_ driver: ExchangeDriver) -> Int
    /// Sends what the machine has for the client; closes the exchange when the client is gone.
    func flush(_ driver: ExchangeDriver)
    /// The client's side is read (`Poller.readable`) and written (`Poller.writable`) as `wanted` says.
    func setInterest(_ wanted: UInt32, _ driver: ExchangeDriver)
    /// A command about the client's side: a TLS or HTTP/2 start, a half-close.
    func execute(_ command: ConnectionIO.Command, _ driver: ExchangeDriver)
    /// Everything for the client is out and the exchange is to close: at once, or in stages (a socket's lingering
    /// close).
    func closeWhenFlushed(_ driver: ExchangeDriver)
    /// The exchange closed: its side of the client's connection closes (the socket, or the stream; `reset`: with a
    /// reset).
    func exchangeClosed(_ driver: ExchangeDriver, reset: Bool)
    /// What the machine wrote for the client that waits no more, given back when idle.
    func shrinkOutput(_ driver: ExchangeDriver)
    /// The client speaks TLS with the proxy (upstream writes then go at once: TLS records batch them already).
    var isTLS: Bool { get }
}

/// The I/O shell around one ``ProxyConnectionMachine``: carries out the machine's commands, makes and reads its
/// upstream connections (ExchangeDriver+Connect.swift, +Upstream.swift, +HTTP2.swift), applies backpressure and
/// the deadlines of each phase. What faces the client is its ``client``: a client's socket (whose machine reads
/// HTTP/1.1) or an HTTP/2 client's session (``stream`` is its exchange's stream; the machine takes typed messages).
/// The machine, its upstream and the flow-control invariant are the same for both.
final class ExchangeDriver {
    let address: String
    /// The client is not on loopback (admitted by --allow).
    let fromNetwork: Bool
    /// Its loop outlives it (the loop's tables hold it; the loop's thread holds the server and its loops), so
    /// no reference counting on the many accesses per request.
    unowned(unsafe) let loop: EventLoop
    /// Its client's side, which holds this driver too (the socket's connection, or the session's table of streams)
    /// until the exchange closes and lets go of it: a strong `let`, so that the calls on it, several per event, are
    /// made without reference counting.
    let client: any ClientPort
    /// Its stream, on an HTTP/2 client's connection (-1 on a socket).
    let stream: Int32
    var machine: ProxyConnectionMachine
    var io = ConnectionIO()
    var upstream: UpstreamConnection?
    /// The upstream of this client's last exchange, idle and kept for its next request (HAProxy's "http-reuse
    /// safe": a client's requests to one origin go over one upstream connection). A request for the same origin
    /// takes it back without going through the loop's pool (a hash of the origin and a list change, twice per
    /// exchange); a request for another origin, this client closing, or the loop draining gives it to the pool
    /// (or closes it). It is closed when the server closes it, and counts as pooled for the idle timeout. A loop
    /// keeps at most `poolPerOrigin` parked upstreams (then they go to the pool, whose cap is per origin).
    var parked: UpstreamConnection?
    /// What the client side is read and written for (``Poller`` bits): a socket's poller interest, a stream's
    /// window given back.
    var interest: UInt32 = Poller.readable
    var closeAfterFlush = false
    /// Bytes for the upstream wait for the end of the loop's batch of events (``flushDeferred()``).
    var upstreamFlushDeferred = false
    /// False while ``flushDeferred()`` runs: then the upstream is written at once.
    var mayDeferUpstream = true
    var closed = false
    /// A deadline closed this exchange and was noted (``note(_:_:)``): its cut is that note, not another.
    var deadlineNoted = false
    /// The upstream connection being made (ExchangeDriver+Connect.swift).
    var dial = Dial()
    var lastPhase: ProxyConnectionMachine.Phase = .idle
    var phaseStart: Int64
    var lastActivity: Int64
    /// Since when the upstream has sent nothing while it was being read (its last byte, or reading resumed):
    /// `--upstream-read-timeout`.
    var upstreamReadSince: Int64 = 0
    /// Since when bytes for the client have waited without the client taking any (its last progress, or output
    /// began to wait): `--client-write-timeout`.
    var clientWriteSince: Int64 = 0
    var countedRequests = 0
    var countedUnexpected = 0
    /// Its stream on a shared HTTP/2 upstream (``upstream`` is that connection).
    var upstreamExchange: UpstreamExchange?
    /// Requests go to an https origin: those inside an intercepted tunnel (over HTTP/1.1 or HTTP/2). A flag beside
    /// the machine's origin: read on every connect, where reading the origin would copy its strings.
    var upstreamIsTLS: Bool

    /// `client`: its client's side; `stream`: its stream there, or -1 for a socket. `speaking`: the protocol the
    /// client speaks (its codec's form towards the machine). `fromNetwork`: the peer is not a loopback address (the
    /// accept decided it). `interceptedOrigin`: requests inside an intercepted tunnel go there.
    init(
        client: any ClientPort, stream: Int32 = -1, speaking: HTTPProtocol = .http1, address: String,
        fromNetwork: Bool, loop: EventLoop, interceptedOrigin: Origin? = nil
    ) {
        self.client = client
        self.stream = stream
        self.address = address
        self.fromNetwork = fromNetwork
        self.loop = loop
        self.upstreamIsTLS = interceptedOrigin != nil
        let server = loop.server
        self.machine = ProxyConnectionMachine(
            configuration: loop.configuration.proxy, hooks: server.hooks, clientAddress: address,
            requestIDs: { server.nextRequestID() }, headStorage: loop.headStorage, interceptedOrigin: interceptedOrigin,
            client: speaking)
        phaseStart = loop.now
        lastActivity = loop.now
        if var spare = loop.spareBuffers.popLast() {
            machine.adopt(&spare.machine)
            io = spare.io
        }
    }

    // MARK: The client's side

    /// Bytes for the client not yet taken by it.
    var pendingToClient: Int {
        @inline(__always) get { client.pending(self) }
    }

    var pendingToUpstream: Int {
        guard let upstream else { return io.toUpstream.count }
        if upstream.isShared { return pendingThroughHTTP2() }
        return upstream.out.pending(io.toUpstream)
    }

    // MARK: Applying the machine's output

    func apply() {
        if closed { return }
        while !io.commands.isEmpty {
            // Swapped out (commands may add commands), then given back empty so its storage is reused.
            var commands: [ConnectionIO.Command] = []
            swap(&commands, &io.commands)
            for command in commands { execute(command) }
            if closed { return }
            if io.commands.isEmpty {
                commands.removeAll(keepingCapacity: true)
                io.commands = commands
            }
        }
        flush()
        if closed { return }
        if closeAfterFlush && pendingToClient == 0 { return client.closeWhenFlushed(self) }
        let status = machine.status()
        let requests = status.requestCount
        if requests > countedRequests {
            loop.server.totalRequests.add(requests - countedRequests)
            countedRequests = requests
        }
        if status.unexpectedEvents > countedUnexpected {
            loop.server.unexpectedEvents.add(status.unexpectedEvents - countedUnexpected)
            countedUnexpected = status.unexpectedEvents
        }
        let phase = status.phase
        if phase != lastPhase {
            lastPhase = phase
            phaseStart = loop.now
            if phase == .idle {
                machine.shrinkBuffers()
                client.shrinkOutput(self)
            }
        }
        updateInterest(status)
    }

    @inline(__always)
    private func execute(_ command: ConnectionIO.Command) {
        switch command {
        case .connect(let origin, let fresh, let via):
            // Per exchange: a route may go to an https upstream, the next one to an http one.
            upstreamIsTLS = machine.upstreamTLS
            startConnect(origin, fresh: fresh, via: via)
        case .releaseUpstream(let reusable):
            detachUpstream(reusable: reusable)
        case .resetUpstream:
            resetUpstream()
        case .shutdownUpstreamWrite:
            upstream?.out.shutdownPending = true
        case .closeClient:
            closeAfterFlush = true
        case .refusedHTTP2Preface:
            loop.server.noteHTTP2Refusal(
                "connection from \(address): HTTP/2 with prior knowledge, but HTTP/2 is off (--http2 off): told so"
                    + " (GOAWAY HTTP_1_1_REQUIRED) and closed")
        case .shutdownClientWrite, .startTLS, .startHTTP2:
            client.execute(command, self)
        }
    }

    func flush() {
        client.flush(self)
        if closed { return }
        // A request for the upstream goes out after the rest of this batch of events has been read: the origin,
        // woken by it, then finds the batch's requests together instead of preempting the loop once per request.
        if !client.isTLS, mayDeferUpstream, let upstream, !upstream.connecting, upstream.tunnelAnswer == nil,
            upstream.tls == nil, !upstream.out.shutdownPending, upstream.out.sent < io.toUpstream.count
        {
            if !upstreamFlushDeferred {
                upstreamFlushDeferred = true
                loop.deferredFlushes.append(self)
            }
            return
        }
        flushUpstream()
    }

    /// Sends what waited for the end of the batch (see ``flush()``); a failed send gets the whole round of
    /// ``apply()``, any other outcome a new reading of the interests.
    func flushDeferred() {
        upstreamFlushDeferred = false
        guard !closed else { return }
        flushUpstream()
        if !io.commands.isEmpty || pendingToClient > 0 {
            // A failed send gave the machine something to do (an answer, a close): the whole round.
            mayDeferUpstream = false
            apply()
            mayDeferUpstream = true
        } else if pendingToUpstream > 0 || interest & Poller.readable == 0 {
            // The flow-control invariant: a send is followed by ``updateInterest(_:)`` whenever that can change
            // anything. The round that deferred this send may have paused reading from the client while the bytes
            // waited: a send that drained them must resume it (nothing else will: the upstream's write interest
            // was off while deferred), and a partial one waits for the upstream to be writable. A whole send with
            // the client still read (a request's head, the usual case) leaves every interest as it is.
            updateInterest(machine.status())
        }
    }

    func flushUpstream() {
        guard let upstream, !upstream.connecting, upstream.tunnelAnswer == nil else { return }
        if upstream.isShared, let shared = upstream.shared { return flushHTTP2Upstream(upstream, shared.session) }
        var progress = false
        let error = upstream.out.flush(&io.toUpstream, to: upstream.fd, tls: upstream.tls, progress: &progress)
        if progress { lastActivity = loop.now }
        if let error {
            machine.upstreamFailed(.failed(upstream.origin, reason: Sys.errorText(-Int32(error))), &io)
        }
    }

    /// Sets what is read and written on both sides from what is pending. Flow control is this one function: a
    /// direction reads its input while its output holds less than `highWater` bytes, and it is called after every
    /// read and every send that can change its answer (``apply()``, ``flushDeferred()``), so output that drains
    /// always resumes its input.
    /// Nothing is held back elsewhere: TLS engines are read to the end of their plaintext on every event
    /// (``TLSEngine/readPlaintext(into:)``), so no bytes wait inside OpenSSL for a readiness that never comes.
    func updateInterest(_ status: ProxyConnectionMachine.Status) {
        let highWater = loop.configuration.highWater
        var wanted: UInt32 = 0
        if status.wantsClientData && !closeAfterFlush && pendingToUpstream < highWater
            && status.bufferedClientBytes < highWater
        {
            wanted |= Poller.readable
        }
        if pendingToClient > 0 { wanted |= Poller.writable }
        if wanted & ~interest & Poller.writable != 0 { clientWriteSince = loop.now }
        client.setInterest(wanted, self)
        if let upstream, upstream.isShared {
            http2UpstreamInterest(upstream)
        } else if let upstream {
            var up: UInt32 = 0
            if upstream.connecting {
                up = Poller.writable
            } else if upstream.tunnelAnswer != nil {
                up = Poller.readable
            } else {
                if !upstream.readClosed && pendingToClient < highWater { up |= Poller.readable }
                if pendingToUpstream > 0 && !upstreamFlushDeferred { up |= Poller.writable }
            }
            if up & ~upstream.interest & Poller.readable != 0 { upstreamReadSince = loop.now }
            upstream.setInterest(up)
        }
    }

    // MARK: Deadlines and closing

    /// The deadlines of every phase of the machine (each an option of `cookie-proxy run`), checked by the loop's
    /// timer. Two hold whatever the phase: bytes for the client that it does not take (`--client-write-timeout`:
    /// both sides close, so that clients that never read cannot hold every connection slot), and a response body the
    /// upstream stops sending while it is read (`--upstream-read-timeout`: the client's side closes, so it sees the
    /// response is incomplete). A deadline that closes an exchange is counted and noted with it
    /// (``ProxyServer/noteClosing(_:_:)``).
    func checkExchangeDeadlines() {
        if closed { return }
        let c = loop.configuration
        let now = loop.now
        if let parked, now - parked.pooledAt >= Self.milliseconds(c.poolIdleTimeout) { dropParked() }
        let phase = machine.phase
        if closedForClientWriteTimeout() { return }
        if phase == .streaming, let upstream, upstream.interest & Poller.readable != 0,
            now - max(upstreamReadSince, phaseStart) >= Self.milliseconds(c.upstreamReadTimeout)
        {
            note(
                .upstreamReadTimeout,
                "no byte from upstream \(upstream.origin) for \(Self.seconds(c.upstreamReadTimeout)) while relaying its"
                    + " response; the client's connection was closed (its response is incomplete)")
            machine.timedOut(&io)
            apply()
            return
        }
        let (start, seconds, closing): (Int64, Double, ProxyServer.Closing?)
        switch phase {
        case .idle: (start, seconds, closing) = (lastActivity, c.idleTimeout, nil)
        case .readingHead: (start, seconds, closing) = (phaseStart, c.headerTimeout, .headerTimeout)
        case .connecting: (start, seconds, closing) = (phaseStart, c.connectTimeout, .connectTimeout)
        case .awaitingResponse:
            (start, seconds, closing) = (max(phaseStart, lastActivity), c.responseTimeout, .responseTimeout)
        case .streaming, .tunnel: (start, seconds, closing) = (lastActivity, c.streamIdleTimeout, .streamIdleTimeout)
        case .closed: (start, seconds, closing) = (phaseStart, 5, nil)
        }
        if now - start >= Self.milliseconds(seconds) {
            if phase == .closed {
                closeNow()
                return
            }
            if let closing { note(closing, "nothing happened for \(Self.seconds(seconds))") }
            machine.timedOut(&io)
            apply()
        }
    }

    /// Bytes for the client have waited longer than `--client-write-timeout`: noted, and closed with a reset
    /// (nginx's `reset_timedout_connection`: an orderly close would leave the unsent bytes in the kernel until the
    /// client reads them, which it does not). True when it closed.
    func closedForClientWriteTimeout() -> Bool {
        guard let detail = Self.clientWriteTimedOut(interest: interest, since: clientWriteSince, loop: loop) else {
            return false
        }
        note(.clientWriteTimeout, detail)
        closeNow(reset: true)
        return true
    }

    /// Whether bytes for a client side polled for `interest` have waited since `since` past
    /// `--client-write-timeout`: the closing note's detail when they have (an exchange's side, or an HTTP/2
    /// connection's frames).
    static func clientWriteTimedOut(interest: UInt32, since: Int64, loop: EventLoop) -> String? {
        let timeout = loop.configuration.clientWriteTimeout
        guard interest & Poller.writable != 0 && loop.now - since >= milliseconds(timeout) else { return nil }
        return "the client took no byte for \(seconds(timeout)); both sides closed"
    }

    static func milliseconds(_ seconds: Double) -> Int64 { Int64(seconds * 1000) }
    static func seconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }

    /// Counts a deadline that closed something and notes it with the exchange it closed.
    func note(_ closing: ProxyServer.Closing, _ what: String) {
        deadlineNoted = true
        loop.server.noteClosing(
            closing,
            ProxyServer.ClosingNote(
                closing: closing, exchange: machine.exchangeSummary, requestID: machine.exchangeRequestID,
                client: address, detail: what))
    }

    /// Closes at once. A socket error that ended the client's connection is counted by the server (the client is
    /// gone: nobody is left to tell), so that the exit message can say how connections ended. `reset`: the client's
    /// side closes with a reset (SO_LINGER 0 for a socket, RST_STREAM for a stream), dropping what it has not taken.
    /// `cut`: why an exchange in flight ends here (default: the client's connection closed, or failed with
    /// `socketError`).
    func closeNow(socketError: Int32? = nil, reset: Bool = false, cut: String? = nil) {
        // Its client's side lets go of it as it closes (the socket's connection, the session's table): it stays
        // alive until this returns.
        withExtendedLifetime(self) {
            if closed { return }
            if let socketError { loop.server.noteClientSocketError(socketError) }
            closed = true
            // An exchange still in flight ends here, cut short (told once: one the machine ended is not told again).
            let why =
                cut ?? socketError.map { "the client's connection failed: \(Sys.errorText(-$0))" }
                ?? "the client's connection closed before the response was whole"
            machine.abandon(cut: deadlineNoted ? nil : why)
            // The client is gone (or a deadline ended it) with its request unfinished: the upstream must not see an
            // orderly end of it, as when the machine asks for that (``ConnectionIO/Command/resetUpstream``).
            if upstream != nil && machine.upstreamHasPartialRequest { resetUpstream() }
            if let upstream {
                if upstream.isShared {
                    leaveHTTP2(upstream)
                } else {
                    self.upstream = nil
                    upstream.close()
                }
            }
            releaseParked()
            loop.keepBuffers(machine.takeBuffers(), &io)
            client.exchangeClosed(self, reset: reset)
        }
    }
}
