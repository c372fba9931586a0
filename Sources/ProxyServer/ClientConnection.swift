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

/// A client's connection: its socket, its TLS, what waits to be sent and the lingering close; and the one protocol
/// it speaks (``speaking``): HTTP/1.1, whose exchanges one ``ExchangeDriver`` carries one after another, or HTTP/2,
/// whose session gives each stream an exchange driver of its own (ClientConnection+HTTP2.swift). For its HTTP/1.1
/// driver it is the ``ClientPort``: the driver's machine writes into the driver's `io.toClient`, which ``toClient``
/// sends from.
final class ClientConnection: LoopHandler, ClientPort {
    /// The protocol the connection speaks, and what carries it.
    enum Speaking {
        /// HTTP/1.x: the driver of its exchanges (the first bytes are read this way too: a CONNECT, a TLS
        /// listener's plain HTTP, HTTP/2's preface).
        case http1(ExchangeDriver)
        /// HTTP/2 (after ALPN chose `h2`, or the client's preface): the session and its streams' exchanges.
        case http2(HTTP2Client)
        /// Closed: nothing more is read or written.
        case closed
    }

    let fd: Int32
    let address: String
    /// The client is not on loopback (admitted by --allow).
    let fromNetwork: Bool
    /// Its loop outlives it (the loop's tables hold it; the loop's thread holds the server and its loops).
    unowned(unsafe) let loop: EventLoop
    var speaking: Speaking = .closed
    /// Towards the client: what of the bytes for it (its HTTP/1.1 driver's `io.toClient`, or ``frames``) it has
    /// taken, its TLS records.
    var toClient = Outbound()
    /// HTTP/2's frames for the client (its HTTP/1.1 bytes are its driver's).
    var frames: [UInt8] = []
    /// What the socket is polled for.
    var interest: UInt32 = Poller.readable
    var lastActivity: Int64
    /// Since when bytes for the client have waited without the client taking any (over HTTP/2; an HTTP/1.1
    /// driver keeps its own).
    var clientWriteSince: Int64 = 0
    /// Over HTTP/2: the connection closes once its frames are out (a connection error's GOAWAY).
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
    /// Its place in the loop's list of clients; -1 once removed.
    var listIndex = -1
    /// TLS with the client after an intercepted CONNECT, or from the first byte on a TLS listener.
    var clientTLS: TLSEngine?
    /// A TLS listener's connection that has read nothing yet: its first bytes tell TLS from plain HTTP.
    private var listenerFirstRead = false
    var closed = false

    /// `fromNetwork`: the peer is not a loopback address (the accept decided it).
    init(fd: Int32, address: String, fromNetwork: Bool, loop: EventLoop) {
        self.fd = fd
        self.address = address
        self.fromNetwork = fromNetwork
        self.loop = loop
        lastActivity = loop.now
        super.init()
        speaking = .http1(ExchangeDriver(client: self, address: address, fromNetwork: fromNetwork, loop: loop))
    }

    // MARK: Events

    override func handle(_ events: UInt32) {
        if closed { return }
        if events & (Poller.readable | Poller.hangup) != 0 && interest & Poller.readable != 0 {
            readClient()
        }
        switch speaking {
        case .http1(let driver):
            if events & Poller.writable != 0 { driver.flush() }
            driver.apply()
        case .http2(let http2):
            if events & Poller.writable != 0 { flushFrames() }
            sendHTTP2(http2)
        case .closed: break
        }
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
            } else {
                received(loop.readBuffer[0..<n])
            }
        } else if n == 0 {
            clientEOF = true
            clientClosed()
        } else if Int32(-n) != Sys.EAGAIN && Int32(-n) != Sys.EINTR {
            // Reset by peer or similar: nothing can be delivered any more.
            closeNow(socketError: Int32(-n))
        }
    }

    /// Bytes the client sent (decrypted, over TLS), to its protocol.
    private func received(_ bytes: ArraySlice<UInt8>) {
        switch speaking {
        case .http1(let driver):
            driver.lastActivity = loop.now
            driver.machine.clientData(bytes, &driver.io)
        case .http2(let http2): http2Received(http2, bytes)
        case .closed: break
        }
    }

    /// The client closed its sending side.
    private func clientClosed() {
        switch speaking {
        case .http1(let driver): driver.machine.clientClosed(&driver.io)
        case .http2, .closed: closeNow()
        }
    }

    /// A TLS listener's connection (`--listen https://…`): TLS from the first byte, ended here with a leaf the local
    /// CA mints for the name the client asks for (SNI), `fallbackHost` without one; its requests are https URLs.
    func startListenerTLS(fallbackHost: String) {
        if case .http1(let driver) = speaking { driver.machine.listenerTLS = true }
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
        guard case .http1(let driver) = speaking else { return closeNow() }
        let host = clientTLS?.fallbackHost ?? "127.0.0.1"
        let listener = Origin(host: host, port: Sys.localPort(fd))
        let response = PlainHTTPOnTLSPort.response(to: loop.readBuffer[0..<count], fallback: listener)
        driver.io.toClient += response
        let headEnd = response.firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A])?.upperBound ?? response.count
        loop.reportOwnAnswer(
            client: address, status: 400, bodyBytes: response.count - headEnd, read: loop.readBuffer[0..<count],
            https: false)
        clientTLS = nil
        loop.server.noteTLSFailure(
            "plain HTTP from \(address) to the https listener \(HostPort.format(host, listener.port)): answered 400"
                + " naming its https:// URL")
        driver.closeAfterFlush = true
    }

    /// Advances the client-side TLS engine: handshake, then decrypted bytes to the protocol.
    private func clientTLSProgress(_ tls: TLSEngine) {
        if !tls.handshakeComplete {
            let status = tls.handshake()
            tls.drainCiphertext(into: &toClient.records)
            if case .failed(let reason) = status {
                loop.server.noteTLSFailure(
                    "client TLS for \(tls.fallbackHost): \(reason) (does the client trust the CA? cookie-proxy ca path)"
                )
                closeAfterTLSFailure()
                return
            }
            if !tls.handshakeComplete { return }
            // ALPN chose h2 (`--http2`, RFC 9113 §3.2): from the first byte on, this connection is HTTP/2.
            if tls.negotiatedProtocol == "h2" { startHTTP2(leftover: []) }
        }
        var plain: [UInt8] = []
        let status = tls.readPlaintext(into: &plain)
        tls.drainCiphertext(into: &toClient.records)
        if !plain.isEmpty { received(plain[...]) }
        switch status {
        case .ok: break
        case .closed: clientClosed()
        case .failed: closeAfterTLSFailure()
        }
    }

    /// The TLS session failed: the connection closes once what is queued (the alert) is out.
    private func closeAfterTLSFailure() {
        switch speaking {
        case .http1(let driver): driver.closeAfterFlush = true
        case .http2: closeAfterFlush = true
        case .closed: break
        }
    }

    // MARK: The client port of its HTTP/1.1 driver

    func pending(_ driver: ExchangeDriver) -> Int { toClient.pending(driver.io.toClient) }

    var isTLS: Bool { clientTLS != nil }

    func execute(_ command: ConnectionIO.Command, _ driver: ExchangeDriver) {
        switch command {
        case .shutdownClientWrite:
            toClient.shutdownPending = true
        case .startTLS(let host, let leftover):
            guard let setup = loop.server.interception else {
                driver.closeAfterFlush = true
                return
            }
            let tls: TLSEngine
            do {
                tls = try TLSEngine(server: setup.server, connectHost: host)
            } catch {
                loop.server.noteTLSFailure(
                    "client TLS for \(host): \(error) (does the client trust the CA? cookie-proxy ca path)")
                driver.closeAfterFlush = true
                return
            }
            // The cleartext "200 Connection Established" goes out first, then only TLS records.
            toClient.records.append(contentsOf: driver.io.toClient[toClient.sent...])
            driver.io.toClient.removeAll(keepingCapacity: true)
            toClient.sent = 0
            clientTLS = tls
            driver.upstreamIsTLS = true
            loop.server.interceptedConnections.add(1)
            if !leftover.isEmpty {
                tls.feed(leftover[...])
                clientTLSProgress(tls)
            }
        case .startHTTP2(let leftover):
            startHTTP2(leftover: leftover)
        default:
            driver.closeAfterFlush = true
        }
    }

    func flush(_ driver: ExchangeDriver) {
        if wroteToClient && !noDelay && pending(driver) > 0 {
            Sys.setNoDelay(fd)
            noDelay = true
        }
        var progress = false
        let error = toClient.flush(&driver.io.toClient, to: fd, tls: clientTLS, progress: &progress)
        if progress {
            driver.lastActivity = loop.now
            driver.clientWriteSince = loop.now
            wroteToClient = true
        }
        if let error {
            // The client is gone (a reset, a broken pipe): nobody is left to tell.
            driver.closeNow(socketError: error)
        }
    }

    func shrinkOutput(_ driver: ExchangeDriver) {
        if driver.io.toClient.capacity > 4096 && pending(driver) == 0 {
            driver.io.toClient = []
            toClient.sent = 0
        }
    }

    func setInterest(_ wanted: UInt32, _ driver: ExchangeDriver) {
        driver.interest = wanted
        setSocketInterest(wanted)
    }

    func setSocketInterest(_ wanted: UInt32) {
        guard wanted != interest, !closed else { return }
        interest = wanted
        loop.poller.modify(fd, wanted, token: UInt64(slot))
    }

    func closeWhenFlushed(_ driver: ExchangeDriver) {
        if lingeringSince == nil { lingerOrClose(driver) }
    }

    func exchangeClosed(_ driver: ExchangeDriver, reset: Bool) { closeSocket(reset: reset) }

    // MARK: Deadlines and closing

    /// The connection's deadlines: a lingering close's, then its protocol's (the HTTP/1.1 driver's phases; each
    /// HTTP/2 stream's exchange's and the idle connection's).
    func checkDeadline() {
        if closed { return }
        let now = loop.now
        if let lingeringSince {
            if now - lingeringSince >= Self.lingerTime { closeNow() }
            return
        }
        switch speaking {
        case .http1(let driver): driver.checkExchangeDeadlines()
        case .http2(let http2): checkHTTP2Deadlines(http2)
        case .closed: break
        }
    }

    func drain() {
        switch speaking {
        case .http1(let driver):
            driver.dropParked()
            driver.machine.drain(&driver.io)
            driver.apply()
        case .http2(let http2):
            // GOAWAY (RFC 9113 §6.8): the streams taken finish, the connection closes when they have.
            http2.session.goAway()
            sendHTTP2(http2)
        case .closed: break
        }
    }

    /// How long a lingering close waits for the client to close its side (nginx's `lingering_timeout` is 5 s).
    static let lingerTime: Int64 = 2000

    /// Closes the connection after the proxy's last bytes went out. A plain client connection that may still be
    /// sending (a request the proxy refused before reading it all, a pipelined one) is closed in two steps, as
    /// nginx's lingering close does: the proxy's side is shut (the client reads the end of the answer) and what the
    /// client still sends is read and dropped until it closes or ``lingerTime`` passes. Closing with unread bytes
    /// in the socket would send a reset instead (RFC 9112 §9.6), which can destroy the answer before the client has
    /// read it. A connection with an upstream, a TLS session or an HTTP/2 session closes at once.
    private func lingerOrClose(_ driver: ExchangeDriver) {
        guard clientTLS == nil, driver.upstream == nil, driver.parked == nil, !clientEOF else {
            return driver.closeNow()
        }
        lingeringSince = loop.now
        Sys.shutdownWrite(fd)
        setSocketInterest(Poller.readable)
    }

    /// Closes at once, with whatever it carries. A socket error that ended it is counted by the server
    /// (``ExchangeDriver/closeNow(socketError:reset:)``); `reset`: with SO_LINGER 0.
    func closeNow(socketError: Int32? = nil, reset: Bool = false) {
        switch speaking {
        case .http1(let driver): driver.closeNow(socketError: socketError, reset: reset)
        case .http2(let http2):
            if let socketError { loop.server.noteClientSocketError(socketError) }
            for exchange in Array(http2.exchanges.values) { exchange.driver.closeNow() }
            http2.exchanges.removeAll()
            closeSocket(reset: reset)
        case .closed: break
        }
    }

    /// The socket closes and the connection leaves its loop; what it carried goes with it.
    private func closeSocket(reset: Bool) {
        if closed { return }
        closed = true
        speaking = .closed
        if reset { Sys.resetOnClose(fd) }
        loop.unregisterAndClose(self, fd: fd)
        loop.removed(self)
    }
}
