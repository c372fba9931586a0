import ExchangeFacts
import ProxyCore
import ProxyHTTP2

/// A client connection that speaks HTTP/2 (RFC 9113): its session, and the exchange of each open stream.
final class HTTP2Client {
    let session: HTTP2ServerSession
    var exchanges: [Int32: StreamExchange] = [:]
    /// The session's events are being handled: frames go out once, after all of them.
    var handlingEvents = false
    /// Frames are being made (nghttp2 pulls response bodies meanwhile): not again from inside.
    var sending = false
    /// The connection is in the loop's list for the end of its batch of events (``ClientConnection/scheduleHTTP2Send()``).
    var sendScheduled = false
    /// What every stream's exchange starts from: the intercepted origin its requests go to, whether the client came
    /// through a TLS listener (read from the connection's machine once, not per stream: reading a property of a
    /// machine held by a class copies the machine).
    let interceptedOrigin: Origin?
    let listenerTLS: Bool

    init(session: HTTP2ServerSession, interceptedOrigin: Origin?, listenerTLS: Bool) {
        self.session = session
        self.interceptedOrigin = interceptedOrigin
        self.listenerTLS = listenerTLS
    }
}

/// One stream's exchange of an HTTP/2 client (RFC 9113 §5): its machine takes the stream's request typed and
/// answers typed, and what it has for the client goes to the connection's session, not to a socket. Reading its
/// client is its stream's flow-control window, given back as the machine takes the bytes.
final class StreamExchange: ExchangeDriver {
    /// The connection holds its exchanges and closes them before it goes.
    unowned(unsafe) let connection: ClientConnection
    let id: Int32
    /// Body bytes the machine was given that the stream's window has not been given back for.
    var unconsumed = 0

    init(connection: ClientConnection, id: Int32, http2: HTTP2Client) {
        self.connection = connection
        self.id = id
        super.init(
            address: connection.address, fromNetwork: connection.fromNetwork, loop: connection.loop,
            interceptedOrigin: http2.interceptedOrigin, client: .http2)
        machine.listenerTLS = http2.listenerTLS
    }

    /// What it has given the session that waits for the client's window.
    override var pendingToClient: Int { connection.http2?.session.buffered(id) ?? 0 }

    /// The machine's response for the client goes to the session: its parts, and the payload that came with them.
    override func flushClient() {
        guard let http2 = connection.http2, !connection.closed else { return }
        if !io.toClient.isEmpty || !io.toClientParts.isEmpty {
            http2.session.respond(id, parts: io.toClientParts, body: io.toClient[...])
            io.toClientParts.removeAll(keepingCapacity: true)
            io.toClient.removeAll(keepingCapacity: io.toClient.capacity <= 4096)
            lastActivity = loop.now
            clientWriteSince = loop.now
        }
        connection.scheduleHTTP2Send()
    }

    /// No socket: reading the stream is its flow-control window, given back as the machine takes bytes
    /// (WINDOW_UPDATE).
    override func setClientInterest(_ wanted: UInt32) {
        interest = wanted
        guard wanted & Poller.readable != 0 && unconsumed > 0, let http2 = connection.http2 else { return }
        http2.session.consume(id, unconsumed)
        unconsumed = 0
        connection.scheduleHTTP2Send()
    }

    /// Its stream ends: whole, if the response was; reset otherwise.
    override func closeClient(socketError: Int32?, reset: Bool) { connection.exchangeEnded(id, reset: reset) }
}

/// HTTP/2 with the client: after ALPN chose `h2` on an intercepted connection, or the client opened with the
/// connection preface (h2c with prior knowledge, RFC 9113 §3.3). Each stream's request is a typed exchange for a
/// machine of its own (``HTTP2ServerSession`` makes it; ProxyConnectionMachine+Typed.swift takes it), driven by a
/// ``StreamExchange``: the same routing, rules, upstream pool, deadlines and log as a request of an HTTP/1.1 client.
extension ClientConnection {
    /// From here on the client's bytes go to an HTTP/2 session, starting with `leftover`.
    func startHTTP2(leftover: [UInt8]) {
        let (origin, listenerTLS) = (machine.interceptedOrigin, machine.listenerTLS)
        let absolute = origin == nil && loop.configuration.proxy.reverseUpstream == nil
        let http2 = HTTP2Client(
            session: HTTP2ServerSession(limits: loop.configuration.proxy.parserLimits, absoluteTargets: absolute),
            interceptedOrigin: origin, listenerTLS: listenerTLS)
        self.http2 = http2
        if leftover.isEmpty {
            sendHTTP2()
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
        sendHTTP2()
    }

    private func handle(_ event: HTTP2ServerSession.Event, _ http2: HTTP2Client) {
        switch event {
        case .request(let id, let head, let framing):
            let exchange = StreamExchange(connection: self, id: id, http2: http2)
            http2.exchanges[id] = exchange
            exchange.machine.clientRequest(head, framing: framing, &exchange.io)
            exchange.apply()
        case .body(let id, let bytes):
            guard let exchange = http2.exchanges[id] else {
                http2.session.consume(id, bytes.count)
                return
            }
            exchange.unconsumed += bytes.count
            exchange.lastActivity = loop.now
            exchange.machine.clientBody(bytes[...], &exchange.io)
            exchange.apply()
        case .requestEnded(let id, let trailers):
            guard let exchange = http2.exchanges[id] else { return }
            exchange.machine.clientEnded(trailers: trailers, &exchange.io)
            exchange.apply()
        case .closed(let id, _):
            // The response went out whole, or the client reset the stream: either way its exchange is over (a
            // request it had not finished sending resets its upstream, as when an HTTP/1.1 client goes).
            http2.exchanges[id]?.closeNow()
        case .refused(let id, let reason):
            loop.server.noteHTTP2Refusal("stream \(id) from \(address) refused: \(reason)")
        }
    }

    /// The frames the session has ready go to the client; exchanges whose bodies it took are read again.
    func sendHTTP2() {
        guard let http2, !http2.handlingEvents, !http2.sending, !closed else { return }
        http2.sending = true
        http2.session.send(into: &io.toClient)
        var drained: [Int32] = []
        swap(&drained, &http2.session.drained)
        http2.sending = false
        apply()
        if closed { return }
        for id in Set(drained) {
            // Room again for what their upstreams send (``updateInterest(_:)`` reads `pendingToClient`).
            if let exchange = http2.exchanges[id] { exchange.updateInterest(exchange.machine.status()) }
        }
        if !http2.session.isActive && pendingToClient == 0 { closeNow() }
    }

    /// Frames go out at the end of the loop's batch of events: the responses of the streams whose upstreams
    /// answered in one batch leave together, in one write.
    func scheduleHTTP2Send() {
        guard let http2, !http2.sendScheduled else { return }
        http2.sendScheduled = true
        loop.deferredFlushes.append(self)
    }

    /// An exchange closed: its stream ends (whole, if the response was; reset otherwise).
    func exchangeEnded(_ id: Int32, reset: Bool) {
        guard let http2, let exchange = http2.exchanges.removeValue(forKey: id) else { return }
        // What the machine was given and never took frees the connection's window.
        if exchange.unconsumed > 0 { http2.session.consume(id, exchange.unconsumed) }
        if closed { return }
        if reset {
            http2.session.reset(id, nil)
        } else {
            http2.session.finish(id)
        }
        scheduleHTTP2Send()
    }
}
