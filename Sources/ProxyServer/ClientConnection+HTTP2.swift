import ProxyCore
import ProxyHTTP2

/// A client connection that speaks HTTP/2 (RFC 9113): its session, and the exchange of each open stream.
final class HTTP2Client {
    let session: HTTP2ServerSession
    var exchanges: [Int32: ClientConnection] = [:]
    /// The session's events are being handled: frames go out once, after all of them.
    var handlingEvents = false
    /// Frames are being made (nghttp2 pulls response bodies meanwhile): not again from inside.
    var sending = false
    /// The connection is in the loop's list for the end of its batch of events (``ClientConnection/scheduleHTTP2Send()``).
    var sendScheduled = false

    init(session: HTTP2ServerSession) { self.session = session }
}

/// What an exchange of a stream knows of its place: the client connection and the stream.
struct StreamLink {
    /// The connection holds its exchanges and closes them before it goes.
    unowned(unsafe) let connection: ClientConnection
    let id: Int32
    /// Body bytes the machine was given that the stream's window has not been given back for.
    var unconsumed = 0
}

/// HTTP/2 with the client: after ALPN chose `h2` on an intercepted connection, or the client opened with the
/// connection preface (h2c with prior knowledge, RFC 9113 §3.3). Each stream's request is a typed exchange for a
/// machine of its own (``HTTP2ServerSession`` makes it; ProxyConnectionMachine+Typed.swift takes it), in a
/// connection without a socket: the same routing, rules, upstream pool, deadlines and log as a request of an
/// HTTP/1.1 client.
extension ClientConnection {
    /// From here on the client's bytes go to an HTTP/2 session, starting with `leftover`.
    func startHTTP2(leftover: [UInt8]) {
        let absolute = machine.interceptedOrigin == nil && loop.configuration.proxy.reverseUpstream == nil
        let http2 = HTTP2Client(
            session: HTTP2ServerSession(limits: loop.configuration.proxy.parserLimits, absoluteTargets: absolute))
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
            let exchange = ClientConnection(
                fd: -1, address: address, fromNetwork: fromNetwork, loop: loop,
                interceptedOrigin: machine.interceptedOrigin)
            exchange.stream = StreamLink(connection: self, id: id)
            exchange.machine.clientSpeaksHTTP2 = true
            exchange.machine.listenerTLS = machine.listenerTLS
            http2.exchanges[id] = exchange
            exchange.machine.clientRequest(head, framing: framing, &exchange.io)
            exchange.apply()
        case .body(let id, let bytes):
            guard let exchange = http2.exchanges[id] else {
                http2.session.consume(id, bytes.count)
                return
            }
            exchange.stream!.unconsumed += bytes.count
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

    /// An exchange's response for its client goes to the session: its parts, and the payload that came with them.
    func passToStream(_ stream: StreamLink) {
        let connection = stream.connection
        guard let http2 = connection.http2, !connection.closed else { return }
        if toClient.sent < io.toClient.count || !io.toClientParts.isEmpty {
            http2.session.respond(stream.id, parts: io.toClientParts, body: io.toClient[toClient.sent...])
            io.toClientParts.removeAll(keepingCapacity: true)
            io.toClient.removeAll(keepingCapacity: io.toClient.capacity <= 4096)
            toClient.sent = 0
            lastActivity = loop.now
            clientWriteSince = loop.now
        }
        connection.scheduleHTTP2Send()
    }

    /// The machine took the stream's bytes: the client may send as much again (WINDOW_UPDATE).
    func giveBackWindow(_ stream: StreamLink) {
        self.stream!.unconsumed = 0
        guard let http2 = stream.connection.http2 else { return }
        http2.session.consume(stream.id, stream.unconsumed)
        stream.connection.scheduleHTTP2Send()
    }

    /// An exchange closed: its stream ends (whole, if the response was; reset otherwise).
    func exchangeEnded(_ id: Int32, reset: Bool) {
        guard let http2, let exchange = http2.exchanges.removeValue(forKey: id) else { return }
        // What the machine was given and never took frees the connection's window.
        if let unconsumed = exchange.stream?.unconsumed, unconsumed > 0 { http2.session.consume(id, unconsumed) }
        if closed { return }
        if reset {
            http2.session.reset(id, nil)
        } else {
            http2.session.finish(id)
        }
        scheduleHTTP2Send()
    }
}

/// HTTP/2 with upstreams: an origin that chose `h2` by ALPN (offered when the client speaks HTTP/2), or an h2c
/// origin (`--reverse h2c://…`). The upstream connection is shared by the exchanges that go to that origin at once
/// (UpstreamConnection+HTTP2.swift), each with a stream of its own (``upstreamExchange``): the machine hands its
/// request over typed (``RequestPart``, after `upstreamConnected(reused:http2:_:)` with `http2`), which the
/// connection's ``HTTP2ClientSession`` submits, and takes the response typed
/// (``ProxyConnectionMachine/upstreamResponse(_:framing:_:)``).
extension ClientConnection {
    /// What waits for an HTTP/2 upstream: the machine's bytes not yet translated, the request body waiting for
    /// the stream's window.
    @inline(never)
    func pendingThroughHTTP2() -> Int {
        io.toUpstream.count + (upstreamExchange?.bufferedRequestBody ?? 0)
    }

    /// Takes a stream on `upstream`, an HTTP/2 connection to the origin (just made, or shared already).
    func joinHTTP2(_ upstream: UpstreamConnection, _ http2: HTTP2ClientSession) {
        let exchange = http2.open()
        self.upstream = upstream
        upstreamExchange = exchange
        upstream.users[ObjectIdentifier(exchange)] = self
        upstreamReadSince = loop.now
    }

    /// Leaves the shared connection: a stream whose response is not whole is cancelled.
    func leaveHTTP2(_ upstream: UpstreamConnection) {
        self.upstream = nil
        io.toUpstream.removeAll(keepingCapacity: io.toUpstream.capacity <= 4096)
        guard let exchange = upstreamExchange else { return }
        upstreamExchange = nil
        upstream.users[ObjectIdentifier(exchange)] = nil
        // Idle from the moment its last stream goes, however it goes (the loop's timer closes it after the pool's
        // idle timeout).
        if upstream.users.isEmpty { upstream.pooledAt = loop.now }
        upstream.http2?.close(exchange)
        upstream.flushShared()
    }

    /// The stream's response grew, ended or failed: its parts, typed, to the machine.
    func sharedResponse(_ upstream: UpstreamConnection, _ exchange: UpstreamExchange) {
        let delivery = exchange.takeResponse()
        if !delivery.isEmpty {
            lastActivity = loop.now
            upstreamReadSince = loop.now
            machine.noteUpstreamHTTP2()
            for (head, framing) in delivery.heads { machine.upstreamResponse(head, framing: framing, &io) }
            if !delivery.payload.isEmpty { machine.upstreamBody(delivery.payload[...], &io) }
            if let trailers = delivery.end { machine.upstreamEnded(trailers: trailers, &io) }
        }
        if let failure = exchange.failure, self.upstream === upstream, upstreamExchange === exchange {
            machine.upstreamFailed(.failed(upstream.origin, reason: "HTTP/2: \(failure)"), &io)
        }
        apply()
    }

    /// The machine's request parts and payload into the stream, the connection's frames onto the socket.
    func flushHTTP2Upstream(_ upstream: UpstreamConnection, _ http2: HTTP2ClientSession) {
        guard let exchange = upstreamExchange else { return }
        if !io.toUpstream.isEmpty || !io.toUpstreamParts.isEmpty {
            http2.request(exchange, parts: io.toUpstreamParts, body: io.toUpstream[...])
            io.toUpstreamParts.removeAll(keepingCapacity: true)
            io.toUpstream.removeAll(keepingCapacity: io.toUpstream.capacity <= 64 * 1024)
            lastActivity = loop.now
        }
        upstream.flushShared()
        if let failure = exchange.failure, self.upstream === upstream {
            machine.upstreamFailed(.failed(upstream.origin, reason: "HTTP/2: \(failure)"), &io)
        }
    }

    /// The stream's flow control: the response bytes the machine took are given back to the stream's window
    /// while the client keeps up (the connection is read all the time for the other streams).
    func http2UpstreamInterest(_ upstream: UpstreamConnection) {
        guard let exchange = upstreamExchange, exchange.unconsumed > 0,
            pendingToClient < loop.configuration.highWater
        else { return }
        upstream.http2?.consume(exchange)
        upstream.flushShared()
    }
}
