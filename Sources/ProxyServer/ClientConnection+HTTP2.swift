import ExchangeFacts
import HTTPHeads
import ProxyCore
import ProxyHTTP2
import ProxyPlatform

/// A client connection that speaks HTTP/2 (RFC 9113): its session, and the exchange of each open stream. It is the
/// ``ClientPort`` of those exchanges: what a stream's machine has for the client goes to the session, not to a
/// socket, and reading the client is the stream's flow-control window, given back as the machine takes the bytes.
final class HTTP2Client: ClientPort {
    /// One open stream's exchange.
    struct Stream {
        let driver: ExchangeDriver
        /// Body bytes the machine was given that the stream's window has not been given back for.
        var unconsumed = 0
    }

    /// The connection holds the session and closes it before it goes.
    unowned(unsafe) let connection: ClientConnection
    let session: HTTP2ServerSession
    var exchanges: [Int32: Stream] = [:]
    /// Set once a stream's request body arrived: until then no stream has bytes to give back, and a stream's interest
    /// looks nothing up (most requests have no body).
    var anyUnconsumed = false
    /// The session's events are being handled: frames go out once, after all of them.
    var handlingEvents = false
    /// Frames are being made (nghttp2 pulls response bodies meanwhile): not again from inside.
    var sending = false
    /// The connection is in the loop's list for the end of its batch of events (``ClientConnection/scheduleHTTP2Send(_:)``).
    var sendScheduled = false
    /// What every stream's exchange starts from: the intercepted origin its requests go to, whether the client came
    /// through a TLS listener (read from the connection's HTTP/1.1 machine once, when it stopped).
    let interceptedOrigin: Origin?
    let listenerTLS: Bool

    init(connection: ClientConnection, session: HTTP2ServerSession, interceptedOrigin: Origin?, listenerTLS: Bool) {
        self.connection = connection
        self.session = session
        self.interceptedOrigin = interceptedOrigin
        self.listenerTLS = listenerTLS
    }

    // MARK: The client port of its streams' exchanges

    /// What it has given the session that waits for the client's window.
    func pending(_ driver: ExchangeDriver) -> Int { session.buffered(driver.stream) }

    var isTLS: Bool { false }

    /// The machine's response for the client goes to the session: its parts, and the payload that came with them.
    func flush(_ driver: ExchangeDriver) {
        guard !connection.closed else { return }
        if !driver.io.toClient.isEmpty || !driver.io.toClientParts.isEmpty {
            session.respond(driver.stream, parts: driver.io.toClientParts, body: driver.io.toClient[...])
            driver.io.toClientParts.removeAll(keepingCapacity: true)
            driver.io.toClient.removeAll(keepingCapacity: driver.io.toClient.capacity <= 4096)
            driver.lastActivity = driver.loop.now
            driver.clientWriteSince = driver.loop.now
        }
        connection.scheduleHTTP2Send(self)
    }

    /// No socket: reading the stream is its flow-control window, given back as the machine takes bytes
    /// (WINDOW_UPDATE).
    func setInterest(_ wanted: UInt32, _ driver: ExchangeDriver) {
        driver.interest = wanted
        guard wanted & Poller.readable != 0, anyUnconsumed,
            let unconsumed = exchanges[driver.stream]?.unconsumed, unconsumed > 0
        else { return }
        session.consume(driver.stream, unconsumed)
        exchanges[driver.stream]?.unconsumed = 0
        connection.scheduleHTTP2Send(self)
    }

    /// A stream has no TLS or protocol of its own to start, and no half-close: such a command ends its exchange.
    func execute(_ command: ConnectionIO.Command, _ driver: ExchangeDriver) { driver.closeAfterFlush = true }

    func closeWhenFlushed(_ driver: ExchangeDriver) { driver.closeNow() }

    /// Its stream ends: whole, if the response was; reset otherwise.
    func exchangeClosed(_ driver: ExchangeDriver, reset: Bool) {
        connection.exchangeEnded(self, driver.stream, reset: reset)
    }

    func shrinkOutput(_ driver: ExchangeDriver) {
        if driver.io.toClient.capacity > 4096 && driver.io.toClient.isEmpty { driver.io.toClient = [] }
    }
}

/// HTTP/2 with the client: after ALPN chose `h2` on an intercepted connection, or the client opened with the
/// connection preface (h2c with prior knowledge, RFC 9113 §3.3). Each stream's request is a typed exchange for a
/// machine of its own (``HTTP2ServerSession`` makes it; ProxyConnectionMachine+Typed.swift takes it), driven by an
/// ``ExchangeDriver`` whose client port is the session: the same routing, rules, upstream pool, deadlines and log as
/// a request of an HTTP/1.1 client.
extension ClientConnection {
    /// From here on the client's bytes go to an HTTP/2 session, starting with `leftover`; the HTTP/1.1 driver that
    /// read up to here (a CONNECT, the preface) is done.
    func startHTTP2(leftover: [UInt8]) {
        guard case .http1(let driver) = speaking else { return }
        let (origin, listenerTLS) = (driver.machine.interceptedOrigin, driver.machine.listenerTLS)
        // What the driver had for the client and the socket has not taken yet (nothing, as a rule) goes first.
        frames = Array(driver.io.toClient[toClient.sent...])
        toClient.sent = 0
        loop.keepBuffers(driver.machine.takeBuffers(), &driver.io)
        // Retired: the round of its that asked for this (``ExchangeDriver/apply()``) stops here, and nothing of it
        // touches the socket again.
        driver.releaseParked()
        driver.closed = true
        let absolute = origin == nil && loop.configuration.proxy.reverseUpstream == nil
        let http2 = HTTP2Client(
            connection: self,
            session: HTTP2ServerSession(limits: loop.configuration.proxy.parserLimits, absoluteTargets: absolute),
            interceptedOrigin: origin, listenerTLS: listenerTLS)
        speaking = .http2(http2)
        if leftover.isEmpty {
            sendHTTP2(http2)
        } else {
            http2Received(http2, leftover[...])
        }
    }

    /// Bytes from the client into the session; then what its events ask for, and the frames it has to send.
    func http2Received(_ http2: HTTP2Client, _ bytes: ArraySlice<UInt8>) {
        let ok = http2.session.receive(bytes)
        http2.handlingEvents = true
        while !http2.session.events.isEmpty {
            var events: [HTTP2ServerSession.Event] = []
            swap(&events, &http2.session.events)
            for event in events { handle(event, http2) }
        }
        http2.handlingEvents = false
        if !ok {
            // A connection error (RFC 9113 §5.4.1): nghttp2 has queued its GOAWAY; it goes out, then the close.
            loop.server.noteHTTP2Refusal("connection from \(address): \(http2.session.failure ?? "protocol error")")
            closeAfterFlush = true
        }
        sendHTTP2(http2)
    }

    private func handle(_ event: HTTP2ServerSession.Event, _ http2: HTTP2Client) {
        switch event {
        case .request(let id, let head, let framing):
            let driver = ExchangeDriver(
                client: http2, stream: id, speaking: .http2, address: address, fromNetwork: fromNetwork, loop: loop,
                interceptedOrigin: http2.interceptedOrigin)
            driver.machine.listenerTLS = http2.listenerTLS
            http2.exchanges[id] = HTTP2Client.Stream(driver: driver)
            driver.machine.clientRequest(head, framing: framing, &driver.io)
            driver.apply()
        case .body(let id, let bytes):
            guard let driver = http2.exchanges[id]?.driver else {
                http2.session.consume(id, bytes.count)
                return
            }
            http2.exchanges[id]?.unconsumed += bytes.count
            http2.anyUnconsumed = true
            driver.lastActivity = loop.now
            driver.machine.clientBody(bytes[...], &driver.io)
            driver.apply()
        case .requestEnded(let id, let trailers):
            guard let driver = http2.exchanges[id]?.driver else { return }
            driver.machine.clientEnded(trailers: trailers, &driver.io)
            driver.apply()
        case .closed(let id, _):
            // The response went out whole, or the client reset the stream: either way its exchange is over (a
            // request it had not finished sending resets its upstream, as when an HTTP/1.1 client goes).
            http2.exchanges[id]?.driver.closeNow()
        case .refused(let id, let reason):
            loop.server.noteHTTP2Refusal("stream \(id) from \(address) refused: \(reason)")
        }
    }

    /// The frames the session has ready go to the client; exchanges whose bodies it took are read again; the
    /// connection closes when the session is over and its frames are out.
    func sendHTTP2(_ http2: HTTP2Client) {
        guard !http2.handlingEvents, !http2.sending, !closed else { return }
        http2.sending = true
        http2.session.send(into: &frames)
        var drained: [Int32] = []
        swap(&drained, &http2.session.drained)
        http2.sending = false
        flushFrames()
        if closed { return }
        let pending = toClient.pending(frames)
        if (closeAfterFlush || !http2.session.isActive) && pending == 0 { return closeNow() }
        // The session reads its client all the time (its streams' windows hold each stream back).
        let wanted = Poller.readable | (pending > 0 ? Poller.writable : 0)
        if wanted & ~interest & Poller.writable != 0 { clientWriteSince = loop.now }
        setSocketInterest(wanted)
        for id in Set(drained) {
            // Room again for what their upstreams send (``ExchangeDriver/updateInterest(_:)`` reads `pending`).
            if let driver = http2.exchanges[id]?.driver { driver.updateInterest(driver.machine.status()) }
        }
    }

    /// Sends the frames made so far; the client gone closes the connection.
    func flushFrames() {
        var progress = false
        let error = toClient.flush(&frames, to: fd, tls: clientTLS, progress: &progress)
        if progress {
            lastActivity = loop.now
            clientWriteSince = loop.now
        }
        if let error { closeNow(socketError: error) }
    }

    /// Frames go out at the end of the loop's batch of events: the responses of the streams whose upstreams
    /// answered in one batch leave together, in one write.
    func scheduleHTTP2Send(_ http2: HTTP2Client) {
        guard !http2.sendScheduled else { return }
        http2.sendScheduled = true
        loop.deferredSessions.append(self)
    }

    /// The end of the loop's batch: the frames scheduled (``scheduleHTTP2Send(_:)``) go out.
    func sendDeferred() {
        guard case .http2(let http2) = speaking else { return }
        http2.sendScheduled = false
        sendHTTP2(http2)
    }

    /// A stream's exchange closed: its stream ends (whole, if the response was; reset otherwise).
    func exchangeEnded(_ http2: HTTP2Client, _ id: Int32, reset: Bool) {
        guard let exchange = http2.exchanges.removeValue(forKey: id) else { return }
        // What the machine was given and never took frees the connection's window.
        if exchange.unconsumed > 0 { http2.session.consume(id, exchange.unconsumed) }
        if closed { return }
        if reset {
            http2.session.reset(id, nil)
        } else {
            http2.session.finish(id)
        }
        scheduleHTTP2Send(http2)
    }

    /// Each stream's exchange's deadlines; frames the client does not take (`--client-write-timeout`); the idle
    /// connection's.
    func checkHTTP2Deadlines(_ http2: HTTP2Client) {
        for exchange in Array(http2.exchanges.values) { exchange.driver.checkExchangeDeadlines() }
        if closed { return }
        if let detail = ExchangeDriver.clientWriteTimedOut(interest: interest, since: clientWriteSince, loop: loop) {
            loop.server.noteClosing(
                .clientWriteTimeout,
                ProxyServer.ClosingNote(
                    closing: .clientWriteTimeout, exchange: nil, requestID: nil, client: address, detail: detail))
            return closeNow(reset: true)
        }
        let idle = loop.configuration.idleTimeout
        if http2.exchanges.isEmpty && loop.now - lastActivity >= ExchangeDriver.milliseconds(idle) {
            closeNow()
        }
    }
}
