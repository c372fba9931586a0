import ExchangeFacts
import HTTPGrammar
import HTTPHeads

/// The per-client-connection state machine of the proxy (sans-I/O): events in, bytes and commands out.
/// Two halves read the two sides: ``RequestReader`` the client's bytes as requests, ``ResponseReader`` the
/// upstream's as the response to the exchange in flight; each tells the machine what it found with typed events,
/// and the machine joins them: it decides where a request goes, rewrites heads through ``ProxyHooks``, relays
/// bodies, manages the connections and turns failures into `400`/`431`/`502`/`504` answers. Requests on one
/// connection are handled in order (pipelined requests wait in the client half until the previous response is
/// complete).
public struct ProxyConnectionMachine {
    /// Where the connection is; the shell uses it to pick timeouts.
    public enum Phase: Sendable, Hashable {
        /// Between requests, nothing buffered (idle keep-alive timeout).
        case idle
        /// Part of a request head has arrived (header read timeout: slowloris).
        case readingHead
        /// Waiting for the upstream connection (connect timeout).
        case connecting
        /// Request sent, waiting for the response head (response timeout).
        case awaitingResponse
        /// Streaming a body.
        case streaming
        /// Relaying bytes both ways (CONNECT or Upgrade).
        case tunnel
        /// Done; the shell closes after flushing.
        case closed
    }

    enum State {
        /// Waiting for (more of) a request head. Transitions: → connecting (head parsed), → closed (error, EOF).
        case idle
        /// A request is parsed (``exchange``) and waits for its upstream. → exchanging (connected), → closed
        /// (failure).
        case connecting
        /// Request and response in flight (``exchange``). → idle (response done, keep-alive), → tunnel (101),
        /// → closed.
        case exchanging
        /// A byte tunnel; `clientDone` / `upstreamDone` record half-closes. → closed when both are done.
        case tunnel(clientDone: Bool, upstreamDone: Bool)
        /// Nothing more will be read or written after the pending output.
        case closed
    }

    /// One request/response exchange: the machine's ``exchange`` while it is connecting or exchanging. Stored in
    /// the machine rather than in the state or an object of its own: it is read and updated in place, without an
    /// allocation per exchange or a reference counted up and down for each access to it and its buffers. The
    /// request's body is read by the client half (``RequestReader/body``) and written by ``request``; the response
    /// is read by ``response`` and written by the machine's ``clientWriter``.
    struct Exchange {
        var context: ExchangeContext
        var origin: Origin
        var isConnect: Bool
        /// A CONNECT tunnel's request as read (its head's bytes go to the upstream's writer), for its end.
        var tunnelRequest: RequestEcho? = nil
        var wantsUpgrade: Bool
        /// The request's head as HTTP/1.1 bytes, once written (kept for a retry on a fresh connection).
        var requestHeadBytes: [UInt8]
        var clientKeepAlive: Bool
        /// The upstream's codec, writing: the request in the upstream's protocol.
        var request = RequestWriter()
        /// The upstream's codec, reading: the response to this exchange as it is read.
        var response: ResponseReader
        var reusedUpstream = false
        /// The bytes written for the client after the response's head (``ExchangeEnd/bodyBytes``).
        var bodyBytes = 0
        /// The bytes of the request's body written towards the upstream (``ExchangeEnd/requestBodyBytes``).
        var requestBodyBytes = 0
        /// When its steps happened (``ExchangeTimes``).
        var times = ExchangeTimes()
        /// Its end has been told to the stage.
        var reported = false
        var closeClientAfter = false
        var upstreamReusable = true
        /// The upstream proxy this exchange goes through.
        var via: UpstreamHop?
        /// The reverse route (its index + 1; 0: none, or the client named no host) whose redirects the response's
        /// head points back at the client's origin (``HeadRewrite/Redirects``).
        var redirectRoute: UInt16 = 0

        /// No exchange (before the first; what a machine holds when it has none is never read).
        @inline(__always)
        init() {
            self.init(
                context: .empty, origin: Origin(host: "", port: 0), isConnect: false, wantsUpgrade: false,
                requestHeadBytes: [], clientKeepAlive: false, response: ResponseReader(limits: HTTPParserLimits()))
        }

        init(
            context: ExchangeContext, origin: Origin, isConnect: Bool, wantsUpgrade: Bool, requestHeadBytes: [UInt8],
            clientKeepAlive: Bool, response: ResponseReader
        ) {
            self.context = context
            self.origin = origin
            self.isConnect = isConnect
            self.wantsUpgrade = wantsUpgrade
            self.requestHeadBytes = requestHeadBytes
            self.clientKeepAlive = clientKeepAlive
            self.response = response
        }
    }

    public private(set) var configuration: ProxyConfiguration
    let hooks: any ProxyHooks
    /// Where heads are parsed and rewritten: the event loop's, shared by its connections.
    let headStorage: HeadStorage
    let clientAddress: String
    var state: State = .idle
    /// The exchange in flight (``State/connecting``, ``State/exchanging``).
    var exchange = Exchange()
    /// The storage of the last finished exchange's request head and response buffer, emptied, for the next one
    /// (a keep-alive connection's exchanges then allocate neither; a closed connection's go to the next
    /// connection through ``takeBuffers()``).
    var spareRequestHead: [UInt8] = []
    var spareUpstreamIn: [UInt8] = []
    /// The client's codec, reading: what the client sent, read as requests (or handed over typed: a stream's).
    var client: RequestReader
    /// The client's codec, writing: the response in the client's protocol.
    var clientWriter: ResponseWriter
    /// The connection closes after the exchange in flight (graceful shutdown, ``drain(_:)``): its response says so,
    /// and requests pipelined behind it are left for the client to send again elsewhere.
    var closeAfterExchange = false
    var nextRequestID: @Sendable () -> UInt64
    /// Set after an intercepted CONNECT: origin-form requests (inside TLS) go here, as https.
    public internal(set) var interceptedOrigin: Origin? = nil
    /// The client reached a TLS listener (`--listen https://…`): its requests are https URLs.
    public var listenerTLS = false
    /// The connection to the exchange's upstream is TLS: an intercepted tunnel's origin, an `https://` route (read
    /// by the shell on `connect`; stored, so that reading it from the shell copies nothing).
    public internal(set) var upstreamTLS = false

    /// The exchange in flight keeps its request head as it is until its upstream connection is made: that upstream
    /// may take parts (an HTTP/2 stream: ``upstreamConnected(reused:speaking:_:)``). Only then may the shell give it
    /// one.
    public var requestMayGoTyped: Bool { exchange.request.mayTakeParts }
    /// Requests parsed on this connection so far (for the status line).
    public internal(set) var requestCount = 0
    /// Whether an upstream connection is the machine's: from its `connect` command until it releases it (or the
    /// attempt fails).
    var upstreamInUse = false
    /// Events this machine could not take in its state (see ``unexpected(_:_:)``); zero unless there is a bug.
    public private(set) var unexpectedEvents = 0
    /// When the machine was made (``ExchangeTimes/accepted``): its connection accepted, or its stream opened.
    let acceptedAt: Int64

    /// `client`: the protocol the client speaks; for any but HTTP/1.x its codec hands each request over typed
    /// (``clientRequest(_:framing:_:)``) and takes the response as parts.
    public init(
        configuration: ProxyConfiguration, hooks: any ProxyHooks = NoHooks(), clientAddress: String,
        requestIDs: @escaping @Sendable () -> UInt64, headStorage: HeadStorage = HeadStorage(),
        interceptedOrigin: Origin? = nil, client: HTTPProtocol = .http1
    ) {
        self.interceptedOrigin = interceptedOrigin
        self.configuration = configuration
        self.hooks = hooks
        self.headStorage = headStorage
        acceptedAt = headStorage.now
        self.clientAddress = clientAddress
        self.client = RequestReader(limits: configuration.parserLimits)
        self.clientWriter = ResponseWriter(for: client)
        self.nextRequestID = requestIDs
    }

    /// The buffers a machine grows, emptied: an event loop keeps those of a closed connection for the next one it
    /// accepts (``adopt(_:)``, ``takeBuffers()``), so that a connection per request does not allocate its input,
    /// request-head and response buffers every time. Only capacity passes on: every buffer is empty.
    public struct Buffers: Sendable {
        var clientIn: [UInt8] = []
        var requestHead: [UInt8] = []
        var upstreamIn: [UInt8] = []
        public init() {}
    }

    /// A new connection's machine, before its first event, takes over `buffers`' storage.
    public mutating func adopt(_ buffers: inout Buffers) {
        guard case .idle = state, client.input.isEmpty, requestCount == 0 else { return }
        client.adopt(&buffers.clientIn)
        swap(&spareRequestHead, &buffers.requestHead)
        swap(&spareUpstreamIn, &buffers.upstreamIn)
    }

    /// A closed connection's machine gives up its buffers' storage, emptied (none a large message grew).
    public mutating func takeBuffers() -> Buffers {
        var buffers = Buffers()
        client.giveStorage(to: &buffers.clientIn)
        Self.keep(&spareRequestHead, as: &buffers.requestHead)
        Self.keep(&spareUpstreamIn, as: &buffers.upstreamIn)
        return buffers
    }

    public var phase: Phase {
        switch state {
        case .idle: return client.buffered > 0 ? .readingHead : .idle
        case .connecting: return .connecting
        case .exchanging:
            return exchange.response.bytesSeen ? .streaming : .awaitingResponse
        case .tunnel: return .tunnel
        case .closed: return .closed
        }
    }

    /// What the shell reads after each event, in one call.
    public struct Status: Sendable {
        public var phase: Phase
        public var wantsClientData: Bool
        public var bufferedClientBytes: Int
        public var requestCount: Int
        public var unexpectedEvents: Int
    }

    /// The status, read in place: declared `mutating` (it changes nothing) so that a shell holding the machine
    /// in a class property reads it through an in-place access; reading a property of a struct stored in a class
    /// copies the whole struct first (its buffers, configuration and hooks: ~650 instructions a time).
    public mutating func status() -> Status {
        Status(
            phase: phase, wantsClientData: wantsClientData, bufferedClientBytes: bufferedClientBytes,
            requestCount: requestCount, unexpectedEvents: unexpectedEvents)
    }

    /// Client bytes received but not yet consumed (pipelined requests, unsent body).
    public var bufferedClientBytes: Int { client.buffered }

    /// Whether the shell should read from the client at all now.
    public var wantsClientData: Bool {
        switch state {
        case .closed: return false
        case .tunnel(let clientDone, _): return !clientDone
        default: return !client.eof
        }
    }

    /// Gives back buffer memory while idle (1,000 idle keep-alive connections must stay small).
    public mutating func shrinkBuffers() { client.shrink() }

    // MARK: - Events

    public mutating func clientData(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        switch state {
        case .closed: return  // read in the round that closed the connection: nothing will take it
        case .tunnel:
            io.toUpstream.append(contentsOf: bytes)
            exchange.requestBodyBytes += bytes.count
            return
        case .idle, .connecting, .exchanging: break
        }
        client.append(bytes)
        process(&io)
    }

    public mutating func clientClosed(_ io: inout ConnectionIO) {
        client.eof = true
        switch state {
        case .idle:
            // A partial head is abandoned; between requests this is a normal close.
            close(&io)
        case .connecting, .exchanging:
            if !client.bodyArrived {
                // The request was cut short: there is nothing sensible to send upstream.
                abortExchange(&io, cut: "the client closed its connection before its request body ended")
            }
        // Otherwise the request is whole (forwarded, or waiting here for the upstream connection): a client may
        // close its sending side after a request and still read the response (RFC 9112 §9.6). Finish the
        // response first, then close.
        case .tunnel(_, let upstreamDone):
            state = .tunnel(clientDone: true, upstreamDone: upstreamDone)
            io.commands.append(.shutdownUpstreamWrite)
            if upstreamDone { abortExchange(&io, cut: "the tunnel closed") }
        case .closed: break
        }
    }

    /// `upstream`: the protocol the connection speaks; for any but HTTP/1.1 its codec takes the request as parts
    /// (an HTTP/2 stream of a shared connection).
    public mutating func upstreamConnected(
        reused: Bool, speaking upstream: HTTPProtocol = .http1, _ io: inout ConnectionIO
    ) {
        guard acceptsUpstreamEvent else { return }
        guard case .connecting = state else { return unexpected("upstreamConnected", &io) }
        exchange.reusedUpstream = reused
        exchange.times.upstreamConnected = headStorage.now
        if exchange.isConnect {
            io.toClient.append(contentsOf: Self.connectionEstablished)
            startTunnel(&io)
            if client.eof { clientClosed(&io) }
            return
        }
        exchange.context.upstreamSide = upstream
        exchange.request.connected(
            upstream, method: exchange.context.method, body: client.body.framing, headBytes: &exchange.requestHeadBytes,
            &io)
        state = .exchanging
        forwardRequestBody(&io)
    }

    public mutating func upstreamFailed(_ failure: UpstreamFailure, _ io: inout ConnectionIO) {
        guard acceptsUpstreamEvent else { return }
        switch state {
        case .connecting:
            upstreamInUse = false  // the attempt failed: the shell has let it go
            answer(
                failure.status, failure.message, &io,
                keepAlive: exchange.clientKeepAlive && client.body.isComplete)
        case .exchanging:
            // A pooled connection the server closed can fail as a reset rather than an end of stream (the request
            // reached a socket already closed): the same retry. A timeout is not retried (it would wait twice).
            if case .failed = failure, retryOnFreshConnection(&io) { return }
            failExchange(status: failure.status, message: failure.message, &io)
        case .tunnel:
            upstreamInUse = false
            close(&io)
        case .idle, .closed: unexpected("upstreamFailed", &io)
        }
    }

    public mutating func upstreamData(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        guard acceptsUpstreamEvent else { return }
        switch state {
        case .tunnel:
            io.toClient.append(contentsOf: bytes)
            exchange.bodyBytes += bytes.count
        case .exchanging:
            if exchange.response.readingBody {
                forwardResponseBody(bytes, &io)
            } else {
                exchange.response.appendHeadBytes(bytes)
                processResponseHead(&io)
            }
        case .idle, .connecting, .closed: unexpected("upstreamData", &io)
        }
    }

    public mutating func upstreamClosed(_ io: inout ConnectionIO) {
        guard acceptsUpstreamEvent else { return }
        switch state {
        case .tunnel(let clientDone, _):
            state = .tunnel(clientDone: clientDone, upstreamDone: true)
            io.commands.append(.shutdownClientWrite)
            if clientDone { abortExchange(&io, cut: "the tunnel closed") }
        case .exchanging:
            if exchange.response.readingBody {
                if exchange.response.endOfStream() {
                    exchange.upstreamReusable = false
                    exchange.closeClientAfter =
                        exchange.closeClientAfter || exchange.response.framing == .untilClose
                    finishExchange(&io)
                } else {
                    abortExchange(
                        &io,
                        cut:
                            "upstream \(exchange.origin) closed the connection before its response body ended (\(exchange.bodyBytes) bytes relayed)"
                    )
                }
                return
            }
            if retryOnFreshConnection(&io) { return }
            release(reusable: false, &io)
            if exchange.response.bytesSeen {
                answer(502, "upstream \(exchange.origin) sent an incomplete response head", &io, keepAlive: false)
            } else {
                answer(
                    502, "upstream \(exchange.origin) closed the connection without answering", &io, keepAlive: false)
            }
        case .idle, .connecting, .closed: unexpected("upstreamClosed", &io)
        }
    }

    /// Whether an upstream connection carries part of a request body and not the rest: closing it then must be a
    /// reset (``ConnectionIO/Command/resetUpstream``), for the machine (``release(reusable:_:)``) and for the shell
    /// when it closes the connection itself (a client gone, a deadline).
    public var upstreamHasPartialRequest: Bool {
        guard upstreamInUse, case .exchanging = state else { return false }
        return !exchange.isConnect && !client.body.isComplete
    }

    /// The request id of the exchange in flight (nil between exchanges): what the observers' records name it by.
    public var exchangeRequestID: UInt64? {
        switch state {
        case .connecting, .exchanging: return exchange.context.requestID
        case .idle, .tunnel, .closed: return nil
        }
    }

    /// `METHOD scheme://host:port/target` of the exchange in flight, for the shell's messages (a deadline that
    /// closed it); between exchanges, what of a request head had begun to arrive, or nil.
    public var exchangeSummary: String? {
        switch state {
        case .connecting, .exchanging: return "\(exchange.context.method) \(exchange.context.url)"
        // A head that had begun to arrive: what of it came (a header timeout is about it).
        case .idle: return client.partialHead.map { "(incomplete head) \($0)" }
        case .tunnel, .closed: return nil
        }
    }

    /// Whether an upstream event is for the machine to take: not once the connection is closing (events still
    /// in flight are moot), and not from an upstream connection the machine has already let go (the shell can
    /// deliver its end of stream in the same round as the bytes that completed the response).
    var acceptsUpstreamEvent: Bool {
        if case .closed = state { return false }
        return upstreamInUse
    }

    /// An event the current state cannot take: a bug in the shell or here. Debug builds (and so the tests) stop
    /// with the event and the state; a release build closes this connection and counts it
    /// (``Status/unexpectedEvents``) rather than carry on in a state nobody designed.
    mutating func unexpected(_ event: String, _ io: inout ConnectionIO) {
        assertionFailure("ProxyConnectionMachine: \(event) in state \(state)")
        unexpectedEvents += 1
        if upstreamInUse { release(reusable: false, &io) }
        close(&io)
    }

    /// Asks the shell for an upstream connection.
    mutating func connect(_ origin: Origin, fresh: Bool, via: UpstreamHop?, _ io: inout ConnectionIO) {
        upstreamInUse = true
        io.commands.append(.connect(origin, fresh: fresh, via: via))
    }

    /// Done with the upstream connection: the shell pools it if `reusable`, else closes it.
    @inline(__always)
    mutating func release(reusable: Bool, _ io: inout ConnectionIO) {
        if upstreamHasPartialRequest {
            io.commands.append(.resetUpstream)
        } else {
            io.commands.append(.releaseUpstream(reusable: reusable))
        }
        upstreamInUse = false
    }

    /// No response byte yet on a pooled connection the server had closed: the request goes once more, on a
    /// fresh connection, when that is safe (no request body was sent). False when it is not retried.
    mutating func retryOnFreshConnection(_ io: inout ConnectionIO) -> Bool {
        guard exchange.reusedUpstream && !exchange.response.bytesSeen && client.body.framing == .none else {
            return false
        }
        release(reusable: false, &io)
        exchange.reusedUpstream = false
        exchange.response.input.removeAll()
        state = .connecting
        connect(exchange.origin, fresh: true, via: exchange.via, &io)
        return true
    }

    /// A timer set for the current ``phase`` ran out.
    public mutating func timedOut(_ io: inout ConnectionIO) {
        switch state {
        case .idle:
            if bufferedClientBytes > 0 {
                answer(408, "request head not received in time", &io, keepAlive: false)
            } else {
                close(&io)
            }
        case .connecting:
            let message =
                exchange.via.map {
                    "timed out connecting to upstream \(exchange.origin) through upstream proxy \($0.proxy)"
                }
                ?? UpstreamFailure.connectTimeout(exchange.origin).message
            answer(504, message, &io, keepAlive: false)
        case .exchanging:
            failExchange(status: 504, message: UpstreamFailure.responseTimeout(exchange.origin).message, &io)
        case .tunnel:
            close(&io)
        case .closed: break
        }
    }

    /// The shell closed the client's side with an exchange in flight (its client reset the stream, a deadline closed
    /// the connection): the exchange ends cut short, told to the stage as any other end.
    /// `cut`: why (nil: a deadline, noted as a closing of its own).
    public mutating func abandon(cut: String?) {
        reportEnd(.cut, cut: cut)
    }

    /// Graceful shutdown: close now if idle, else after the exchange in flight.
    public mutating func drain(_ io: inout ConnectionIO) {
        if case .idle = state, bufferedClientBytes == 0 {
            close(&io)
        } else {
            client.eof = true
            closeAfterExchange = true
        }
    }

}
