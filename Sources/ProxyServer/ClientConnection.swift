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

/// A client's connection: its socket (and TLS), read and written here. Over HTTP/1.1 its own machine drives the
/// exchanges (``ExchangeDriver``); once the client speaks HTTP/2 (ClientConnection+HTTP2.swift) the connection holds
/// the session (``http2``), and each stream's exchange is a ``StreamExchange`` of its own, the connection's machine
/// hearing nothing more.
final class ClientConnection: ExchangeDriver {
    let fd: Int32
    /// Towards the client (the upstream direction is the upstream connection's ``UpstreamConnection/out``).
    var toClient = Outbound()
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
    /// Its place in the loop's list of clients; -1 once removed.
    var listIndex = -1
    /// TLS with the client after an intercepted CONNECT, or from the first byte on a TLS listener.
    var clientTLS: TLSEngine?
    /// A TLS listener's connection that has read nothing yet: its first bytes tell TLS from plain HTTP.
    private var listenerFirstRead = false
    /// The client speaks HTTP/2 on this connection: the session and its streams' exchanges.
    var http2: HTTP2Client?

    /// `fromNetwork`: the peer is not a loopback address (the accept decided it).
    init(fd: Int32, address: String, fromNetwork: Bool, loop: EventLoop) {
        self.fd = fd
        super.init(address: address, fromNetwork: fromNetwork, loop: loop)
    }

    override var pendingToClient: Int {
        @inline(__always) get { toClient.pending(io.toClient) }
    }

    override var clientIsTLS: Bool { clientTLS != nil }

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
            if listenerFirstRead {
                listenerFirstRead = false
                if PlainHTTPOnTLSPort.isPlainHTTP(loop.readBuffer[0]) { return answerPlainHTTP(n) }
            }
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
            listenerFirstRead = true
        } catch {
            loop.server.noteTLSFailure("client TLS on the https listener: \(error)")
            closeNow()
        }
    }

    /// Plain HTTP (the first `count` bytes of the read buffer) came to the TLS listener: a `400` in plain text that
    /// names the https URL, then the connection closes once it is out; noted for the person running the proxy.
    private func answerPlainHTTP(_ count: Int) {
        let host = clientTLS?.fallbackHost ?? "127.0.0.1"
        let listener = Origin(host: host, port: Sys.localPort(fd))
        io.toClient += PlainHTTPOnTLSPort.response(to: loop.readBuffer[0..<count], fallback: listener)
        clientTLS = nil
        loop.server.noteTLSFailure(
            "plain HTTP from \(address) to the https listener \(HostPort.format(host, listener.port)): answered 400"
                + " naming its https:// URL")
        closeAfterFlush = true
    }

    /// Advances the client-side TLS engine: handshake, then decrypted bytes into the machine.
    private func clientTLSProgress(_ tls: TLSEngine) {
        if !tls.handshakeComplete {
            let status = tls.handshake()
            tls.drainCiphertext(into: &toClient.records)
            if case .failed(let reason) = status {
                loop.server.noteTLSFailure(
                    "client TLS for \(tls.fallbackHost): \(reason) (does the client trust the CA? cookie-proxy ca path)"
                )
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

    // MARK: The client side of the machine's output

    override func executeClient(_ command: ConnectionIO.Command) {
        switch command {
        case .shutdownClientWrite:
            toClient.shutdownPending = true
        case .startTLS(let host, let leftover):
            guard let setup = loop.server.interception else {
                closeAfterFlush = true
                return
            }
            let tls: TLSEngine
            do {
                tls = try TLSEngine(server: setup.server, connectHost: host)
            } catch {
                loop.server.noteTLSFailure(
                    "client TLS for \(host): \(error) (does the client trust the CA? cookie-proxy ca path)")
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
        default:
            closeAfterFlush = true
        }
    }

    override func flushClient() {
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
        }
    }

    override func shrinkClientOutput() {
        if io.toClient.capacity > 4096 && pendingToClient == 0 {
            io.toClient = []
            toClient.sent = 0
        }
    }

    override func flushDeferred() {
        if let http2 {
            // An HTTP/2 connection is here for its frames (``scheduleHTTP2Send()``); it has no upstream.
            http2.sendScheduled = false
            return sendHTTP2()
        }
        super.flushDeferred()
    }

    /// An HTTP/2 session reads its client all the time (its streams' windows hold each stream back).
    override func readsClient(_ status: ProxyConnectionMachine.Status) -> Bool {
        http2 != nil || status.wantsClientData
    }

    override func setClientInterest(_ wanted: UInt32) {
        guard wanted != interest else { return }
        interest = wanted
        loop.poller.modify(fd, wanted, token: UInt64(slot))
    }

    // MARK: Deadlines and closing

    /// The connection's deadlines: a lingering close's, then over HTTP/2 each stream's exchange's and the idle
    /// connection's (its own machine hears nothing), else the machine's (``checkExchangeDeadlines()``).
    func checkDeadline() {
        if closed { return }
        let now = loop.now
        if let lingeringSince {
            if now - lingeringSince >= Self.lingerTime { closeNow() }
            return
        }
        guard let http2 else { return checkExchangeDeadlines() }
        for exchange in Array(http2.exchanges.values) { exchange.checkExchangeDeadlines() }
        if closedForClientWriteTimeout() { return }
        if http2.exchanges.isEmpty && now - lastActivity >= Self.milliseconds(loop.configuration.idleTimeout) {
            closeNow()
        }
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
    /// session or an HTTP/2 session closes at once.
    private func lingerOrClose() {
        guard http2 == nil, clientTLS == nil, upstream == nil, parked == nil, !clientEOF else {
            return closeNow()
        }
        lingeringSince = loop.now
        Sys.shutdownWrite(fd)
        interest = Poller.readable
        loop.poller.modify(fd, Poller.readable, token: UInt64(slot))
    }

    override func closeWhenFlushed() {
        if lingeringSince == nil { lingerOrClose() }
    }

    override func closeClient(socketError: Int32?, reset: Bool) {
        if let http2 {
            for exchange in Array(http2.exchanges.values) { exchange.closeNow() }
            http2.exchanges.removeAll()
        }
        if reset { Sys.resetOnClose(fd) }
        loop.unregisterAndClose(self, fd: fd)
        loop.removed(self)
    }
}
