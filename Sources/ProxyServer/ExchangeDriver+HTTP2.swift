import ProxyCore
import ProxyHTTP2

/// HTTP/2 with upstreams: an origin that chose `h2` by ALPN (offered when the client speaks HTTP/2), or an h2c
/// origin (`--reverse h2c://…`). The upstream connection is shared by the exchanges that go to that origin at once
/// (UpstreamConnection+HTTP2.swift), each with a stream of its own (``upstreamExchange``): the machine hands its
/// request over typed (``RequestPart``, after `upstreamConnected(reused:http2:_:)` with `http2`), which the
/// connection's ``HTTP2ClientSession`` submits, and takes the response typed
/// (``ProxyConnectionMachine/upstreamResponse(_:framing:_:)``).
extension ExchangeDriver {
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
        upstream.shared?.users[ObjectIdentifier(exchange)] = self
        upstreamReadSince = loop.now
    }

    /// Leaves the shared connection: a stream whose response is not whole is cancelled.
    func leaveHTTP2(_ upstream: UpstreamConnection) {
        self.upstream = nil
        io.toUpstream.removeAll(keepingCapacity: io.toUpstream.capacity <= 4096)
        guard let exchange = upstreamExchange else { return }
        upstreamExchange = nil
        guard let shared = upstream.shared else { return }
        shared.users[ObjectIdentifier(exchange)] = nil
        // Idle from the moment its last stream goes, however it goes (the loop's timer closes it after the pool's
        // idle timeout).
        if shared.users.isEmpty { upstream.pooledAt = loop.now }
        shared.session.close(exchange)
        upstream.flushShared()
    }

    /// The stream's response grew, ended or failed: its parts, typed, to the machine.
    func sharedResponse(_ upstream: UpstreamConnection, _ exchange: UpstreamExchange) {
        let delivery = exchange.takeResponse()
        if !delivery.isEmpty {
            lastActivity = loop.now
            upstreamReadSince = loop.now
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
        upstream.shared?.session.consume(exchange)
        upstream.flushShared()
    }
}
