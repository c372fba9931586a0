import Dispatch
import HTTPGrammar
import ProxyCore
import ProxyHTTP2
import ProxyTLS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The I/O shell around one ``ProxyConnectionMachine``: reads and writes the client socket and its
/// upstream socket, carries out the machine's commands, applies backpressure and deadlines.
///
/// With an HTTP/2 client (ClientConnection+HTTP2.swift) the connection holds the HTTP/2 session (``http2``), and
/// each stream's exchange is a connection of its own without a socket (``stream``): its machine's bytes for the
/// client go to the session, not a socket, and it reads its stream's body as the session hands it over.
final class ClientConnection: LoopHandler {
    let fd: Int32
    let address: String
    /// The client is not on loopback (admitted by --allow).
    let fromNetwork: Bool
    /// Its loop outlives it (the loop's tables hold it; the loop's thread holds the server and its loops), so
    /// no reference counting on the many accesses per request.
    unowned(unsafe) let loop: EventLoop
    var machine: ProxyConnectionMachine
    var io = ConnectionIO()
    /// Towards the client (the upstream direction is the upstream connection's ``UpstreamConnection/out``).
    var toClient = Outbound()
    var upstream: UpstreamConnection?
    /// The upstream of this client's last exchange, idle and kept for its next request (HAProxy's "http-reuse
    /// safe": a client's requests to one origin go over one upstream connection). A request for the same origin
    /// takes it back without going through the loop's pool (a hash of the origin and a list change, twice per
    /// exchange); a request for another origin, this client closing, or the loop draining gives it to the pool
    /// (or closes it). It is closed when the server closes it, and counts as pooled for the idle timeout. A loop
    /// keeps at most `poolPerOrigin` parked upstreams (then they go to the pool, whose cap is per origin).
    var parked: UpstreamConnection?
    var interest: UInt32 = Poller.readable
    var closeAfterFlush = false
    /// A lingering close began (the proxy's last bytes are sent and its side shut): what the client still sends is
    /// read and dropped until it closes too, or ``lingerTime`` passes.
    var lingeringSince: Int64? = nil
    /// The client closed its side: there is nothing to linger for.
    var clientEOF = false
    /// The socket has taken bytes before, and TCP_NODELAY is on. Linux's Nagle is Minshall's: a small segment
    /// waits only while an earlier small one is unacknowledged, so a connection's first write never waits, and
    /// NODELAY is set before the second (nginx sets it as late): a connection with one response (`Connection:
    /// close`) makes one syscall fewer, and every later write goes out at once, as with NODELAY from the start.
    private var wroteToClient = false
    private var noDelay = false
    /// Bytes for the upstream wait for the end of the loop's batch of events (``flushDeferred()``).
    var upstreamFlushDeferred = false
    /// False while ``flushDeferred()`` runs: then the upstream is written at once.
    var mayDeferUpstream = true
    var closed = false
    /// Its place in the loop's list of clients; -1 once removed.
    var listIndex = -1
    /// The upstream connection being made (ClientConnection+Connect.swift).
    var dial = Dial()
    var lastPhase: ProxyConnectionMachine.Phase = .idle
    var phaseStart: Int64
    var lastActivity: Int64
    /// Since when the upstream has sent nothing while it was being read (its last byte, or reading resumed):
    /// `--upstream-read-timeout`.
    var upstreamReadSince: Int64 = 0
    /// Since when bytes for the client have waited without the socket taking any (its last progress, or output
    /// began to wait): `--client-write-timeout`.
    var clientWriteSince: Int64 = 0
    var countedRequests = 0
    var countedUnexpected = 0
    /// TLS with the client after an intercepted CONNECT.
    var clientTLS: TLSEngine?
    /// The client speaks HTTP/2 on this connection: the session and its streams' exchanges.
    var http2: HTTP2Client?
    /// This is the exchange of one stream of an HTTP/2 client's connection: no socket of its own (`fd` is -1).
    var stream: StreamLink?
    /// Its stream on a shared HTTP/2 upstream (``upstream`` is that connection).
    var upstreamExchange: UpstreamExchange?
    /// Requests go to an https origin: those inside an intercepted tunnel (over HTTP/1.1 or HTTP/2). A flag beside
    /// the machine's origin: read on every connect, where reading the origin would copy its strings.
    var upstreamIsTLS: Bool

    /// `fromNetwork`: the peer is not a loopback address (the accept decided it).
    /// `interceptedOrigin`: the exchange of a stream inside an intercepted tunnel.
    init(fd: Int32, address: String, fromNetwork: Bool, loop: EventLoop, interceptedOrigin: Origin? = nil) {
        self.fd = fd
        self.address = address
        self.fromNetwork = fromNetwork
        self.loop = loop
        self.upstreamIsTLS = interceptedOrigin != nil
        let server = loop.server
        self.machine = ProxyConnectionMachine(
            configuration: loop.configuration.proxy, hooks: server.hooks, clientAddress: address,
            requestIDs: { server.nextRequestID() }, headStorage: loop.headStorage, interceptedOrigin: interceptedOrigin)
        phaseStart = loop.now
        lastActivity = loop.now
        if var spare = loop.spareBuffers.popLast() {
            machine.adopt(&spare.machine)
            io = spare.io
        }
    }

    var pendingToClient: Int {
        @inline(__always) get {
            if stream != nil { return pendingInStream() }
            return toClient.pending(io.toClient)
        }
    }

    /// What a stream's exchange has given its HTTP/2 session that waits for the client's window.
    @inline(never)
    func pendingInStream() -> Int {
        guard let stream else { return 0 }
        return stream.connection.http2?.session.buffered(stream.id) ?? 0
    }
    var pendingToUpstream: Int {
        guard let upstream else { return io.toUpstream.count }
        if upstream.isHTTP2 { return pendingThroughHTTP2() }
        return upstream.out.pending(io.toUpstream)
    }

    // MARK: Events

    override func handle(_ events: UInt32) {
        if closed { return }
        if events & (Poller.readable | Poller.hangup) != 0 && interest & Poller.readable != 0 {
            readClient()
        }
        if events & Poller.writable != 0 { flush() }
        apply()
    }

    private func readClient() {
        let n = loop.readBuffer.withUnsafeMutableBytes { Sys.recv(fd, $0) }
        if lingeringSince != nil {
            // Lingering: what comes is dropped; the client's close (or an error) ends it.
            if n == 0 || (n < 0 && Int32(-n) != Sys.EAGAIN && Int32(-n) != Sys.EINTR) { closeNow() }
            return
        }
        if n > 0 {
            lastActivity = loop.now
            if let tls = clientTLS {
                tls.feed(loop.readBuffer[0..<n])
                clientTLSProgress(tls)
            } else if let http2 {
                http2Received(http2, loop.readBuffer[0..<n])
            } else {
                machine.clientData(loop.readBuffer[0..<n], &io)
            }
        } else if n == 0 {
            clientEOF = true
            if http2 != nil { closeNow() } else { machine.clientClosed(&io) }
        } else if Int32(-n) != Sys.EAGAIN && Int32(-n) != Sys.EINTR {
            // Reset by peer or similar: nothing can be delivered any more.
            closeNow(socketError: Int32(-n))
        }
    }

    /// A TLS listener's connection (`--listen https://…`): TLS from the first byte, ended here with a leaf the local
    /// CA mints for the name the client asks for (SNI), `fallbackHost` without one; its requests are https URLs.
    func startListenerTLS(fallbackHost: String) {
        machine.listenerTLS = true
        guard let setup = loop.server.interception else {
            closeNow()
            return
        }
        do {
            clientTLS = try TLSEngine(server: setup.listener, connectHost: fallbackHost)
        } catch {
            loop.server.noteTLSFailure("client TLS on the https listener: \(error)")
            closeNow()
        }
    }

    /// Advances the client-side TLS engine: handshake, then decrypted bytes into the machine.
    private func clientTLSProgress(_ tls: TLSEngine) {
        if !tls.handshakeComplete {
            let status = tls.handshake()
            tls.drainCiphertext(into: &toClient.records)
            if case .failed(let reason) = status {
                loop.server.noteTLSFailure("client TLS for \(tls.fallbackHost): \(reason)")
                closeAfterFlush = true
                return
            }
            if !tls.handshakeComplete { return }
            // ALPN chose h2 (`--http2`, RFC 9113 §3.2): from the first byte on, this connection is HTTP/2.
            if tls.negotiatedProtocol == "h2" { startHTTP2(leftover: []) }
        }
        var plain: [UInt8] = []
        let status = tls.readPlaintext(into: &plain)
        tls.drainCiphertext(into: &toClient.records)
        if !plain.isEmpty {
            if let http2 { http2Received(http2, plain[...]) } else { machine.clientData(plain[...], &io) }
        }
        switch status {
        case .ok: break
        case .closed: if http2 != nil { closeNow() } else { machine.clientClosed(&io) }
        case .failed: closeAfterFlush = true
        }
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
        if closeAfterFlush && pendingToClient == 0 {
            if lingeringSince == nil { lingerOrClose() }
            return
        }
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
                if io.toClient.capacity > 4096 && pendingToClient == 0 {
                    io.toClient = []
                    toClient.sent = 0
                }
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
        case .shutdownClientWrite:
            toClient.shutdownPending = true
        case .closeClient:
            closeAfterFlush = true
        case .startTLS(let host, let leftover):
            guard let setup = loop.server.interception else {
                closeAfterFlush = true
                return
            }
            let tls: TLSEngine
            do {
                tls = try TLSEngine(server: setup.server, connectHost: host)
            } catch {
                loop.server.noteTLSFailure("client TLS for \(host): \(error)")
                closeAfterFlush = true
                return
            }
            // The cleartext "200 Connection Established" goes out first, then only TLS records.
            toClient.records.append(contentsOf: io.toClient[toClient.sent...])
            io.toClient.removeAll(keepingCapacity: true)
            toClient.sent = 0
            clientTLS = tls
            upstreamIsTLS = true
            loop.server.interceptedConnections.add(1)
            if !leftover.isEmpty {
                tls.feed(leftover[...])
                clientTLSProgress(tls)
            }
        case .startHTTP2(let leftover):
            startHTTP2(leftover: leftover)
        }
    }

    func flush() {
        if let stream {
            passToStream(stream)
        } else {
            var progress = false
            if wroteToClient && !noDelay && pendingToClient > 0 {
                Sys.setNoDelay(fd)
                noDelay = true
            }
            let error = toClient.flush(&io.toClient, to: fd, tls: clientTLS, progress: &progress)
            if progress {
                lastActivity = loop.now
                clientWriteSince = loop.now
                wroteToClient = true
            }
            if let error {
                // The client is gone (a reset, a broken pipe): nobody is left to tell.
                closeNow(socketError: error)
                return
            }
        }
        // A request for the upstream goes out after the rest of this batch of events has been read: the origin,
        // woken by it, then finds the batch's requests together instead of preempting the loop once per request.
        if clientTLS == nil, mayDeferUpstream, let upstream, !upstream.connecting, upstream.tunnelAnswer == nil,
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
        if let http2 {
            // An HTTP/2 connection is here for its frames (``scheduleHTTP2Send()``); it has no upstream.
            http2.sendScheduled = false
            return sendHTTP2()
        }
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
        if upstream.isHTTP2, let http2 = upstream.http2 { return flushHTTP2Upstream(upstream, http2) }
        var progress = false
        let error = upstream.out.flush(&io.toUpstream, to: upstream.fd, tls: upstream.tls, progress: &progress)
        if progress { lastActivity = loop.now }
        if let error {
            machine.upstreamFailed(.failed(upstream.origin, reason: Sys.errorText(-Int32(error))), &io)
        }
    }

    /// Sets what the poller reports for both sockets from what is pending. Flow control is this one function: a
    /// direction reads its input while its output holds less than `highWater` bytes, and it is called after every
    /// read and every send that can change its answer (``apply()``, ``flushDeferred()``), so output that drains
    /// always resumes its input.
    /// Nothing is held back elsewhere: TLS engines are read to the end of their plaintext on every event
    /// (``TLSEngine/readPlaintext(into:)``), so no bytes wait inside OpenSSL for a readiness that never comes.
    func updateInterest(_ status: ProxyConnectionMachine.Status) {
        let highWater = loop.configuration.highWater
        var wanted: UInt32 = 0
        if (http2 != nil || status.wantsClientData) && !closeAfterFlush && pendingToUpstream < highWater
            && status.bufferedClientBytes < highWater
        {
            wanted |= Poller.readable
        }
        if pendingToClient > 0 { wanted |= Poller.writable }
        if wanted & ~interest & Poller.writable != 0 { clientWriteSince = loop.now }
        if let stream {
            // No socket: reading the stream is its flow-control window, given back as the machine takes bytes.
            interest = wanted
            if wanted & Poller.readable != 0 && stream.unconsumed > 0 { giveBackWindow(stream) }
        } else if wanted != interest {
            interest = wanted
            loop.poller.modify(fd, wanted, token: UInt64(slot))
        }
        if let upstream, upstream.isHTTP2 {
            http2UpstreamInterest(upstream)
        } else if let upstream {
            var up: UInt32 = 0
            if upstream.connecting {
                up = Poller.writable
            } else if upstream.tunnelAnswer != nil {
                up = Poller.readable
            } else {
                if !upstream.readClosed && pendingToClient < highWater { up |= Poller.readable }
                // (Through HTTP/2 only frames ready to go: a body waiting for the upstream's window is no reason.)
                let unsent = !upstream.isHTTP2 ? pendingToUpstream : upstream.out.pending(upstream.frames)
                if unsent > 0 && !upstreamFlushDeferred { up |= Poller.writable }
            }
            if up & ~upstream.interest & Poller.readable != 0 { upstreamReadSince = loop.now }
            upstream.setInterest(up)
        }
    }

    // MARK: Deadlines and closing

    /// The deadlines of every phase (each an option of `cookie-proxy run`), checked by the loop's timer. Two hold
    /// whatever the phase: bytes for the client that it does not take (`--client-write-timeout`: both sides close,
    /// so that clients that never read cannot hold every connection slot), and a response body the upstream stops
    /// sending while it is read (`--upstream-read-timeout`: the client's connection closes, so it sees the response
    /// is incomplete). A deadline that closes an exchange is counted and noted with it (``ProxyServer/noteClosing(_:_:)``).
    func checkDeadline() {
        if closed { return }
        let c = loop.configuration
        let now = loop.now
        if let lingeringSince {
            if now - lingeringSince >= Self.lingerTime { closeNow() }
            return
        }
        if let parked, now - parked.pooledAt >= Self.milliseconds(c.poolIdleTimeout) { dropParked() }
        let phase = http2 == nil ? machine.phase : http2!.exchanges.isEmpty ? .idle : .streaming
        if let http2 {
            // The streams' exchanges have the deadlines of exchanges; the connection, the idle one once none is left.
            for exchange in Array(http2.exchanges.values) { exchange.checkDeadline() }
        }
        if interest & Poller.writable != 0 && now - clientWriteSince >= Self.milliseconds(c.clientWriteTimeout) {
            note(
                .clientWriteTimeout,
                "the client took no byte for \(Self.seconds(c.clientWriteTimeout)); both sides closed")
            // With a reset (nginx's `reset_timedout_connection`): an orderly close would leave the unsent bytes in
            // the kernel until the client reads them, which it does not.
            closeNow(reset: true)
            return
        }
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
        case .streaming, .tunnel:
            // An HTTP/2 connection with streams open: each stream's exchange keeps its own deadlines.
            if http2 != nil { return }
            (start, seconds, closing) = (lastActivity, c.streamIdleTimeout, .streamIdleTimeout)
        case .closed: (start, seconds, closing) = (phaseStart, 5, nil)
        }
        if now - start >= Self.milliseconds(seconds) {
            if phase == .closed {
                closeNow()
                return
            }
            if let closing { note(closing, "nothing happened for \(Self.seconds(seconds))") }
            if http2 != nil { return closeNow() }
            machine.timedOut(&io)
            apply()
        }
    }

    private static func milliseconds(_ seconds: Double) -> Int64 { Int64(seconds * 1000) }
    private static func seconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }

    /// Counts a deadline that closed something and notes it with the exchange it closed.
    private func note(_ closing: ProxyServer.Closing, _ what: String) {
        loop.server.noteClosing(
            closing,
            ProxyServer.ClosingNote(closing: closing, exchange: machine.exchangeSummary, client: address, detail: what))
    }

    func drain() {
        dropParked()
        if let http2 {
            // GOAWAY (RFC 9113 §6.8): the streams taken finish, the connection closes when they have.
            http2.session.goAway()
            sendHTTP2()
            return
        }
        machine.drain(&io)
        apply()
    }

    /// How long a lingering close waits for the client to close its side (nginx's `lingering_timeout` is 5 s).
    static let lingerTime: Int64 = 2000

    /// Closes the connection after the proxy's last bytes went out. A plain client connection that may still be
    /// sending (a request the proxy refused before reading it all, a pipelined one, an HTTP/2 client's frames
    /// after a GOAWAY) is closed in two steps, as nginx's lingering close does: the proxy's side is shut (the
    /// client reads the end of the answer) and what the client still sends is read and dropped until it closes
    /// or ``lingerTime`` passes. Closing with unread bytes in the socket would send a reset instead (RFC 9112
    /// §9.6), which can destroy the answer before the client has read it. A connection with an upstream, a TLS
    /// session, an HTTP/2 session or a stream closes at once, as before.
    private func lingerOrClose() {
        guard stream == nil, http2 == nil, clientTLS == nil, upstream == nil, parked == nil, !clientEOF else {
            return closeNow()
        }
        lingeringSince = loop.now
        Sys.shutdownWrite(fd)
        interest = Poller.readable
        loop.poller.modify(fd, Poller.readable, token: UInt64(slot))
    }

    /// Closes at once. A socket error that ended the connection is counted by the server (the client is gone:
    /// nobody is left to tell), so that the exit message can say how connections ended.
    /// `reset`: the client's socket closes with a reset (SO_LINGER 0), dropping what it has not taken.
    func closeNow(socketError: Int32? = nil, reset: Bool = false) {
        if closed { return }
        if let socketError { loop.server.noteClientSocketError(socketError) }
        closed = true
        if let http2 {
            for exchange in Array(http2.exchanges.values) { exchange.closeNow() }
            http2.exchanges.removeAll()
        }
        // The client is gone (or a deadline ended it) with its request unfinished: the upstream must not see an
        // orderly end of it, as when the machine asks for that (``ConnectionIO/Command/resetUpstream``).
        if upstream != nil && machine.upstreamHasPartialRequest { resetUpstream() }
        if let upstream {
            if upstream.isHTTP2 {
                leaveHTTP2(upstream)
            } else {
                self.upstream = nil
                upstream.close()
            }
        }
        releaseParked()
        if let stream {
            stream.connection.exchangeEnded(stream.id, reset: reset)
        } else {
            if reset { Sys.resetOnClose(fd) }
            loop.unregisterAndClose(self, fd: fd)
        }
        loop.removed(self)
        loop.keepBuffers(machine.takeBuffers(), &io)
    }
}
