import HTTPGrammar

/// Bytes and commands the I/O shell carries out after each event. The shell owns these buffers: it sends
/// from the front of `toClient` / `toUpstream`, and stops reading from the other side while they are full
/// (backpressure), so memory stays bounded whatever the body size.
public struct ConnectionIO: Sendable {
    public var toClient: [UInt8] = []
    public var toUpstream: [UInt8] = []
    public var commands: [Command] = []
    public init() {}

    public enum Command: Sendable, Hashable {
        /// Open (or take from the pool) a connection to `origin`; answer with `upstreamConnected` or
        /// `upstreamFailed`. `fresh` forbids a pooled connection (a retry after a stale one); `via`, the upstream
        /// proxy to go through.
        case connect(Origin, fresh: Bool, via: UpstreamHop? = nil)
        /// The exchange is done with the upstream connection: pool it if `reusable`, else close it.
        case releaseUpstream(reusable: Bool)
        /// The exchange ends with part of its request body sent: close the upstream connection with a reset
        /// (SO_LINGER 0), never an orderly close. An origin that takes the end of the stream as the end of the
        /// body (gunicorn does) would otherwise run a request the client never finished.
        case resetUpstream
        /// Half-close towards the upstream (tunnels).
        case shutdownUpstreamWrite
        /// Half-close towards the client (tunnels).
        case shutdownClientWrite
        /// Close the client connection once `toClient` is flushed.
        case closeClient
        /// Everything from here on is TLS with the client (an intercepted CONNECT): send what is in `toClient`
        /// in the clear, then start a TLS server for `host`, feeding it `leftover` (bytes already received).
        case startTLS(host: String, leftover: [UInt8])
    }
}

/// The per-client-connection state machine of the proxy (sans-I/O): events in, bytes and commands out.
/// It parses requests, decides where they go, rewrites heads through ``ProxyHooks``, frames bodies, and
/// turns failures into `400`/`431`/`502`/`504` answers. Requests on one connection are handled in order
/// (pipelined requests wait in the input buffer until the previous response is complete).
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
    /// allocation per exchange or a reference counted up and down for each access to it and its buffers.
    struct Exchange {
        var context: ExchangeContext
        var origin: Origin
        var isConnect: Bool
        var wantsUpgrade: Bool
        var requestHeadBytes: [UInt8]
        var requestBody: BodyReader
        var clientVersion: HTTPVersion
        var clientKeepAlive: Bool
        var reusedUpstream = false
        var responseBytesSeen = false
        var response: ResponsePhase = .head
        var responseParser: HTTPHeadParser
        var upstreamIn: [UInt8] = []
        var dechunk = false
        var closeClientAfter = false
        var upstreamReusable = true
        /// The upstream proxy this exchange goes through.
        var via: UpstreamHop?

        /// No exchange (before the first; what a machine holds when it has none is never read).
        init() {
            self.init(
                context: .empty, origin: Origin(host: "", port: 0), isConnect: false, wantsUpgrade: false,
                requestHeadBytes: [], requestBody: BodyReader(.none), clientVersion: HTTPVersion(major: 1, minor: 1),
                clientKeepAlive: false, responseParser: HTTPHeadParser(limits: .init()))
        }

        init(
            context: ExchangeContext, origin: Origin, isConnect: Bool, wantsUpgrade: Bool, requestHeadBytes: [UInt8],
            requestBody: BodyReader, clientVersion: HTTPVersion, clientKeepAlive: Bool, responseParser: HTTPHeadParser
        ) {
            self.context = context
            self.origin = origin
            self.isConnect = isConnect
            self.wantsUpgrade = wantsUpgrade
            self.requestHeadBytes = requestHeadBytes
            self.requestBody = requestBody
            self.clientVersion = clientVersion
            self.clientKeepAlive = clientKeepAlive
            self.responseParser = responseParser
        }
    }

    enum ResponsePhase {
        case head
        case body(BodyReader)
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
    private var spareRequestHead: [UInt8] = []
    private var spareUpstreamIn: [UInt8] = []
    var clientIn: [UInt8] = []
    var clientInStart = 0
    var clientEOF = false
    /// The connection closes after the exchange in flight (graceful shutdown, ``drain(_:)``): its response says so,
    /// and requests pipelined behind it are left for the client to send again elsewhere.
    var closeAfterExchange = false
    var headParser: HTTPHeadParser
    var nextRequestID: @Sendable () -> UInt64
    /// Set after an intercepted CONNECT: origin-form requests (inside TLS) go here, as https.
    public private(set) var interceptedOrigin: Origin? = nil
    /// Requests parsed on this connection so far (for the status line).
    public private(set) var requestCount = 0
    /// Whether an upstream connection is the machine's: from its `connect` command until it releases it (or the
    /// attempt fails).
    var upstreamInUse = false
    /// Events this machine could not take in its state (see ``unexpected(_:_:)``); zero unless there is a bug.
    public private(set) var unexpectedEvents = 0

    public init(
        configuration: ProxyConfiguration, hooks: any ProxyHooks = NoHooks(), clientAddress: String,
        requestIDs: @escaping @Sendable () -> UInt64, headStorage: HeadStorage = HeadStorage()
    ) {
        self.configuration = configuration
        self.hooks = hooks
        self.headStorage = headStorage
        self.clientAddress = clientAddress
        self.headParser = HTTPHeadParser(limits: configuration.parserLimits)
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
        guard case .idle = state, clientIn.isEmpty, requestCount == 0 else { return }
        swap(&clientIn, &buffers.clientIn)
        swap(&spareRequestHead, &buffers.requestHead)
        swap(&spareUpstreamIn, &buffers.upstreamIn)
        clientInStart = 0
    }

    /// A closed connection's machine gives up its buffers' storage, emptied (none a large message grew).
    public mutating func takeBuffers() -> Buffers {
        var buffers = Buffers()
        Self.keep(&clientIn, as: &buffers.clientIn)
        clientInStart = 0
        Self.keep(&spareRequestHead, as: &buffers.requestHead)
        Self.keep(&spareUpstreamIn, as: &buffers.upstreamIn)
        return buffers
    }

    public var phase: Phase {
        switch state {
        case .idle: return clientIn.count > clientInStart ? .readingHead : .idle
        case .connecting: return .connecting
        case .exchanging:
            if case .head = exchange.response { return exchange.responseBytesSeen ? .streaming : .awaitingResponse }
            return .streaming
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
    public var bufferedClientBytes: Int { clientIn.count - clientInStart }

    /// Whether the shell should read from the client at all now.
    public var wantsClientData: Bool {
        switch state {
        case .closed: return false
        case .tunnel(let clientDone, _): return !clientDone
        default: return !clientEOF
        }
    }

    /// Gives back buffer memory while idle (1,000 idle keep-alive connections must stay small).
    public mutating func shrinkBuffers() {
        if bufferedClientBytes == 0 && clientIn.capacity > 4096 {
            clientIn = []
            clientInStart = 0
        }
    }

    // MARK: - Events

    public mutating func clientData(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        switch state {
        case .closed: return  // read in the round that closed the connection: nothing will take it
        case .tunnel:
            io.toUpstream.append(contentsOf: bytes)
            return
        case .idle, .connecting, .exchanging: break
        }
        if clientInStart > 0 && clientInStart == clientIn.count {
            clientIn.removeAll(keepingCapacity: true)
            clientInStart = 0
        }
        clientIn.append(contentsOf: bytes)
        process(&io)
    }

    public mutating func clientClosed(_ io: inout ConnectionIO) {
        clientEOF = true
        switch state {
        case .idle:
            // A partial head is abandoned; between requests this is a normal close.
            close(&io)
        case .connecting, .exchanging:
            if !requestBodyArrived {
                // The request was cut short: there is nothing sensible to send upstream.
                abortExchange(&io)
            }
        // Otherwise the request is whole (forwarded, or waiting here for the upstream connection): a client may
        // close its sending side after a request and still read the response (RFC 9112 §9.6). Finish the
        // response first, then close.
        case .tunnel(_, let upstreamDone):
            state = .tunnel(clientDone: true, upstreamDone: upstreamDone)
            io.commands.append(.shutdownUpstreamWrite)
            if upstreamDone { abortExchange(&io) }
        case .closed: break
        }
    }

    public mutating func upstreamConnected(reused: Bool, _ io: inout ConnectionIO) {
        guard acceptsUpstreamEvent else { return }
        guard case .connecting = state else { return unexpected("upstreamConnected", &io) }
        exchange.reusedUpstream = reused
        if exchange.isConnect {
            io.toClient.append(contentsOf: Self.connectionEstablished)
            startTunnel(&io)
            if clientEOF { clientClosed(&io) }
            return
        }
        io.toUpstream.append(contentsOf: exchange.requestHeadBytes)
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
                keepAlive: exchange.clientKeepAlive && exchange.requestBody.isComplete)
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
        case .exchanging:
            exchange.responseBytesSeen = true
            switch exchange.response {
            case .head:
                exchange.upstreamIn.append(contentsOf: bytes)
                processResponseHead(&io)
            case .body:
                forwardResponseBody(bytes, &io)
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
            if clientDone { abortExchange(&io) }
        case .exchanging:
            if case .body(var reader) = exchange.response {
                if reader.endOfStream() {
                    exchange.response = .body(reader)
                    exchange.upstreamReusable = false
                    exchange.closeClientAfter = exchange.closeClientAfter || reader.framing == .untilClose
                    finishExchange(&io)
                } else {
                    abortExchange(&io)
                }
                return
            }
            if retryOnFreshConnection(&io) { return }
            release(reusable: false, &io)
            if exchange.responseBytesSeen {
                answer(502, "upstream \(exchange.origin) sent an incomplete response head", &io, keepAlive: false)
            } else {
                answer(
                    502, "upstream \(exchange.origin) closed the connection without answering", &io, keepAlive: false)
            }
        case .idle, .connecting, .closed: unexpected("upstreamClosed", &io)
        }
    }

    /// Whether the whole request body has arrived: forwarded already, or waiting in `clientIn` while the upstream
    /// connection is made (read with a copy of the body's reader; nothing is consumed).
    private var requestBodyArrived: Bool {
        var reader = exchange.requestBody
        if reader.isComplete { return true }
        guard (try? reader.consume(clientIn[clientInStart...])) != nil else { return false }
        return reader.isComplete
    }

    /// Whether an upstream connection carries part of a request body and not the rest: closing it then must be a
    /// reset (``ConnectionIO/Command/resetUpstream``), for the machine (``release(reusable:_:)``) and for the shell
    /// when it closes the connection itself (a client gone, a deadline).
    public var upstreamHasPartialRequest: Bool {
        guard upstreamInUse, case .exchanging = state else { return false }
        return !exchange.isConnect && !exchange.requestBody.isComplete
    }

    /// `METHOD scheme://host:port/target` of the exchange in flight, for the shell's messages (a deadline that
    /// closed it); nil between exchanges.
    public var exchangeSummary: String? {
        switch state {
        case .connecting, .exchanging: return "\(exchange.context.method) \(exchange.context.url)"
        case .idle, .tunnel, .closed: return nil
        }
    }

    /// Whether an upstream event is for the machine to take: not once the connection is closing (events still
    /// in flight are moot), and not from an upstream connection the machine has already let go (the shell can
    /// deliver its end of stream in the same round as the bytes that completed the response).
    private var acceptsUpstreamEvent: Bool {
        if case .closed = state { return false }
        return upstreamInUse
    }

    /// An event the current state cannot take: a bug in the shell or here. Debug builds (and so the tests) stop
    /// with the event and the state; a release build closes this connection and counts it
    /// (``Status/unexpectedEvents``) rather than carry on in a state nobody designed.
    private mutating func unexpected(_ event: String, _ io: inout ConnectionIO) {
        assertionFailure("ProxyConnectionMachine: \(event) in state \(state)")
        unexpectedEvents += 1
        if upstreamInUse { release(reusable: false, &io) }
        close(&io)
    }

    /// Asks the shell for an upstream connection.
    private mutating func connect(_ origin: Origin, fresh: Bool, via: UpstreamHop?, _ io: inout ConnectionIO) {
        upstreamInUse = true
        io.commands.append(.connect(origin, fresh: fresh, via: via))
    }

    /// Done with the upstream connection: the shell pools it if `reusable`, else closes it.
    @inline(__always)
    private mutating func release(reusable: Bool, _ io: inout ConnectionIO) {
        if upstreamHasPartialRequest {
            io.commands.append(.resetUpstream)
        } else {
            io.commands.append(.releaseUpstream(reusable: reusable))
        }
        upstreamInUse = false
    }

    /// No response byte yet on a pooled connection the server had closed: the request goes once more, on a
    /// fresh connection, when that is safe (no request body was sent). False when it is not retried.
    private mutating func retryOnFreshConnection(_ io: inout ConnectionIO) -> Bool {
        guard exchange.reusedUpstream && !exchange.responseBytesSeen && exchange.requestBody.framing == .none else {
            return false
        }
        release(reusable: false, &io)
        exchange.reusedUpstream = false
        exchange.upstreamIn.removeAll()
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

    /// Graceful shutdown: close now if idle, else after the exchange in flight.
    public mutating func drain(_ io: inout ConnectionIO) {
        if case .idle = state, bufferedClientBytes == 0 {
            close(&io)
        } else {
            clientEOF = true
            closeAfterExchange = true
        }
    }

    // MARK: - Requests

    private mutating func process(_ io: inout ConnectionIO) {
        switch state {
        case .idle:
            parseRequest(&io)
        case .connecting, .exchanging:
            forwardRequestBody(&io)
        case .tunnel, .closed: unexpected("client bytes to parse", &io)
        }
    }

    private mutating func parseRequest(_ io: inout ConnectionIO) {
        let skip = HTTPHeadParser.leadingEmptyLines(clientIn[clientInStart...])
        clientInStart += skip
        guard clientInStart < clientIn.count else { return }
        let length: Int
        do {
            guard let l = try headParser.headLength(clientIn[clientInStart...]) else { return }
            length = l
        } catch {
            let status =
                switch error.kind {
                case .startLineTooLong: 414  // the request-target (RFC 9112 §3)
                case .headTooLarge: 431
                default: 400
                }
            answer(status, error.description, &io, keepAlive: false)
            return
        }
        let headBytes = clientIn.withUnsafeBufferPointer {
            headStorage.bytes(copying: UnsafeBufferPointer(rebasing: $0[clientInStart..<(clientInStart + length)]))
        }
        clientInStart += length
        let request: RequestHead
        let framing: BodyFraming
        do {
            request = try headParser.parseRequest(headBytes, fieldStorage: headStorage.takeFields())
            framing = try BodyFraming.forRequest(request.head, version: request.version)
        } catch {
            let status = error.kind == .tooManyFields ? 431 : error.kind == .notImplemented ? 501 : 400
            answer(status, error.description, &io, keepAlive: false)
            return
        }
        startExchange(request, framing: framing, &io)
        headStorage.keep(request.head)
    }

    private mutating func startExchange(_ request: RequestHead, framing: BodyFraming, _ io: inout ConnectionIO) {
        requestCount += 1
        let route: RequestRoute
        do {
            route = try RequestRoute.route(request, configuration: configuration, interceptedOrigin: interceptedOrigin)
        } catch {
            answer(error.status, error.reason, &io, keepAlive: false, fields: error.fields)
            return
        }
        let origin = route.origin
        if route.isConnect && interceptedOrigin == nil && configuration.interceptionAvailable
            && hooks.shouldIntercept(host: origin.host, port: origin.port)
        {
            intercept(origin, &io)
            return
        }
        let connection = request.head.connectionOptions()
        let keepAlive = request.version.minor >= 1 ? !connection.close : connection.keepAlive
        let addressed = route.addressed
        let context = ExchangeContext(
            requestID: nextRequestID(), clientAddress: clientAddress, method: request.method, scheme: route.scheme,
            host: addressed.host, port: addressed.port, target: route.target, status: nil)
        let wantsUpgrade = !route.isConnect && connection.upgrade && request.head.values(.upgrade).count == 1
        let secure = route.isConnect || interceptedOrigin != nil
        let via = configuration.upstreamProxies?.proxy(for: origin.host, secure: secure).map {
            UpstreamHop(proxy: $0, tunnel: secure)
        }
        var headBytes: [UInt8] = []
        swap(&headBytes, &spareRequestHead)
        if !route.isConnect {
            var out = HeadRewrite.request(
                request, route: route, connection: connection, framing: framing, wantsUpgrade: wantsUpgrade, via: via,
                configuration: configuration, storage: headStorage.takeOutgoing())
            hooks.willForwardRequest(&out, context: context)
            headBytes.reserveCapacity(request.head.bytes.count + 64)
            out.serialize(into: &headBytes)
            headStorage.keep(out)
        }
        exchange = Exchange(
            context: context, origin: origin, isConnect: route.isConnect, wantsUpgrade: wantsUpgrade,
            requestHeadBytes: headBytes, requestBody: BodyReader(route.isConnect ? .none : framing),
            clientVersion: request.version, clientKeepAlive: keepAlive,
            responseParser: HTTPHeadParser(limits: configuration.parserLimits))
        exchange.via = via
        swap(&exchange.upstreamIn, &spareUpstreamIn)
        state = .connecting
        // A tunnel gets a connection of its own: an idle keep-alive connection to the same host and port is
        // never handed to a CONNECT.
        connect(origin, fresh: route.isConnect, via: via, &io)
    }

    /// RFC 9110 §9.3.6: a 2xx to the CONNECT, then the bytes that follow are TLS, which the shell decrypts; the
    /// requests inside go to `origin`.
    private mutating func intercept(_ origin: Origin, _ io: inout ConnectionIO) {
        io.toClient.append(contentsOf: Self.connectionEstablished)
        let leftover = Array(clientIn[clientInStart...])
        clientIn.removeAll()
        clientInStart = 0
        interceptedOrigin = origin
        state = .idle
        io.commands.append(.startTLS(host: origin.host, leftover: leftover))
    }

    static let connectionEstablished = Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8)

    private mutating func forwardRequestBody(_ io: inout ConnectionIO) {
        switch state {
        case .exchanging: break
        case .connecting: return  // body waits in clientIn until the upstream is there
        case .idle, .tunnel, .closed: return unexpected("a request body to forward", &io)
        }
        guard !exchange.requestBody.isComplete, bufferedClientBytes > 0 else { return }
        var reader = exchange.requestBody
        let n: Int
        do {
            n = try reader.consume(clientIn[clientInStart...])
        } catch {
            // Nothing more of this request reaches the upstream; the client gets a 400 unless part of the
            // response is already out, when closing is the only honest signal.
            failExchange(status: 400, message: "bad request body: \(error.description)", &io)
            return
        }
        io.toUpstream.append(contentsOf: clientIn[clientInStart..<(clientInStart + n)])
        clientInStart += n
        exchange.requestBody = reader
    }

    // MARK: - Responses

    private mutating func processResponseHead(_ io: inout ConnectionIO) {
        guard case .exchanging = state else { return unexpected("a response head", &io) }
        while let next = nextResponseHead(&io) {
            let response = next.head
            defer { headStorage.keep(response.head) }
            if response.status == 101 {
                switchProtocols(response, &io)
            } else if (100..<200).contains(response.status) {
                // Interim responses (100 Continue, 103 Early Hints) go to 1.1 clients as parsed (line ends
                // normalised); the final response follows (RFC 9110 §15.2).
                if exchange.clientVersion.minor >= 1 { io.toClient.append(contentsOf: response.head.bytes) }
                continue
            } else {
                forwardFinalHead(response, next.framing, &io)
            }
            return
        }
    }

    /// A response head and its body's framing.
    struct ParsedResponse {
        var head: ResponseHead
        var framing: BodyFraming
    }

    /// The next response head in `exchange.upstreamIn`, taken out and parsed, with its body's framing. Nil when it
    /// has not all arrived yet, or when it is refused (the exchange has then failed with a `502`).
    @inline(__always)
    private mutating func nextResponseHead(_ io: inout ConnectionIO) -> ParsedResponse? {
        let length: Int
        do {
            guard let l = try exchange.responseParser.headLength(exchange.upstreamIn[...]) else { return nil }
            length = l
        } catch {
            failResponse("upstream \(exchange.origin) sent a response head that is too large", &io)
            return nil
        }
        let headBytes = exchange.upstreamIn.withUnsafeBufferPointer {
            headStorage.bytes(copying: UnsafeBufferPointer(rebasing: $0[0..<length]))
        }
        exchange.upstreamIn.removeFirst(length)
        let response: ResponseHead
        let framing: BodyFraming
        do {
            response = try exchange.responseParser.parseResponse(headBytes, fieldStorage: headStorage.takeFields())
            framing = try BodyFraming.forResponse(
                response.head, status: response.status, requestMethod: exchange.context.method,
                version: response.version)
        } catch {
            failResponse("upstream \(exchange.origin) sent an invalid response: \(error.description)", &io)
            return nil
        }
        exchange.context.status = response.status
        if response.status == 407, let via = exchange.via {
            // The upstream proxy wants credentials this proxy has (the client's were for this one): relaying its
            // challenge would have the client answer it to the wrong proxy.
            let hint =
                via.proxy.authorization == nil
                ? "give them in the URL: --upstream-proxy http://user:password@\(via.proxy)"
                : "the user and password in --upstream-proxy were refused"
            failResponse("upstream proxy \(via.proxy) asks for credentials (407); \(hint)", &io)
            return nil
        }
        if response.status == 101 && !exchange.wantsUpgrade {
            // RFC 9110 §15.2.2: a server switches protocols only when asked; relaying this would have the
            // client read what follows as another protocol while the proxy reads it as HTTP.
            failResponse("upstream \(exchange.origin) switched protocols without being asked to", &io)
            return nil
        }
        return ParsedResponse(head: response, framing: framing)
    }

    /// A `101` to an upgrade the client asked for: the head goes on, then both ways are a tunnel.
    private mutating func switchProtocols(_ response: ResponseHead, _ io: inout ConnectionIO) {
        var out = HeadRewrite.switchingProtocols(
            response, configuration: configuration, storage: headStorage.takeOutgoing())
        forwardResponseHead(&out, &io)
        headStorage.keep(out)
        io.toClient.append(contentsOf: exchange.upstreamIn)
        exchange.upstreamIn = []
        startTunnel(&io)
    }

    /// From here on both ways are a byte tunnel (CONNECT, or a `101`): what the client sent after its request
    /// head belongs to it.
    private mutating func startTunnel(_ io: inout ConnectionIO) {
        state = .tunnel(clientDone: false, upstreamDone: false)
        if bufferedClientBytes > 0 {
            io.toUpstream.append(contentsOf: clientIn[clientInStart...])
            clientIn.removeAll()
            clientInStart = 0
        }
    }

    /// A final response: whether the upstream connection stays usable and the client's closes after it, the
    /// head rewritten and sent, then its body.
    @inline(__always)
    private mutating func forwardFinalHead(
        _ response: ResponseHead, _ framing: BodyFraming, _ io: inout ConnectionIO
    ) {
        let connection = response.head.connectionOptions()
        if connection.close || response.version.minor == 0 { exchange.upstreamReusable = false }
        if framing == .chunked && response.head.has(.contentLength) {
            // Both framing fields: Transfer-Encoding wins (RFC 9112 §6.3 rule 3), but a server that sends
            // both is not trusted with the next exchange on this connection.
            exchange.upstreamReusable = false
        }
        exchange.dechunk = framing == .chunked && exchange.clientVersion.minor == 0
        // A client that closed its sending side after pipelined requests gets each of them answered (RFC 9112 §9.6):
        // the connection closes after the response to the last one received.
        exchange.closeClientAfter =
            !exchange.clientKeepAlive || closeAfterExchange || (clientEOF && bufferedClientBytes == 0)
            || framing == .untilClose || exchange.dechunk
        let client: HeadRewrite.ClientConnection =
            exchange.closeClientAfter ? .close : exchange.clientVersion.minor == 0 ? .keepAlive : .persistent
        var out = HeadRewrite.finalResponse(
            response, connection: connection, framing: framing, dechunk: exchange.dechunk, client: client,
            configuration: configuration, storage: headStorage.takeOutgoing())
        forwardResponseHead(&out, &io)
        headStorage.keep(out)
        var rest: [UInt8] = []
        swap(&rest, &exchange.upstreamIn)
        let reader = BodyReader(framing)
        exchange.response = .body(reader)
        if !rest.isEmpty {
            forwardResponseBody(rest[...], &io)
        } else if reader.isComplete {
            finishExchange(&io)
        }
        Self.keep(&rest, as: &spareUpstreamIn)
    }

    /// The hooks (the rules) see the head, then it is written to the client and they see the bytes sent.
    @inline(__always)
    private func forwardResponseHead(_ out: inout OutgoingHead, _ io: inout ConnectionIO) {
        hooks.willForwardResponse(&out, context: exchange.context)
        let headStart = io.toClient.count
        out.serialize(into: &io.toClient)
        hooks.didForwardResponse(out, bytes: io.toClient[headStart...], context: exchange.context)
    }

    private mutating func forwardResponseBody(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        guard case .exchanging = state, case .body(var reader) = exchange.response else {
            return unexpected("response body bytes", &io)
        }
        let n: Int
        do {
            if exchange.dechunk {
                n = try withUnsafeMutablePointer(to: &io.toClient) { try reader.consume(bytes, payload: $0) }
            } else {
                n = try reader.consume(bytes)
                io.toClient.append(contentsOf: bytes.prefix(n))
            }
        } catch {
            abortExchange(&io)
            return
        }
        if n < bytes.count { exchange.upstreamReusable = false }  // bytes after the body: the upstream is confused
        exchange.response = .body(reader)
        if reader.isComplete { finishExchange(&io) }
    }

    /// Moves `buffer`'s storage, emptied, into `spare` when that has less room (and it is not one a large message
    /// grew: those are let go).
    public static func keep(_ buffer: inout [UInt8], as spare: inout [UInt8]) {
        guard buffer.capacity > spare.capacity && buffer.capacity <= 16384 else { return }
        buffer.removeAll(keepingCapacity: true)
        swap(&buffer, &spare)
    }

    private mutating func finishExchange(_ io: inout ConnectionIO) {
        guard case .exchanging = state else { return unexpected("the end of an exchange", &io) }
        if !exchange.requestBody.isComplete {
            // The response came before the whole request body: the rest cannot be sent any more.
            abortExchange(&io)
            return
        }
        release(reusable: exchange.upstreamReusable, &io)
        Self.keep(&exchange.requestHeadBytes, as: &spareRequestHead)
        let closeAfter = exchange.closeClientAfter
        // What the exchange holds goes now, not when the next one starts: an idle connection keeps none of it
        // (a request head too large to keep as the spare among it).
        exchange = Exchange()
        if closeAfter {
            close(&io)
            return
        }
        state = .idle
        if bufferedClientBytes > 0 { parseRequest(&io) }
        // The client has closed its side: nothing more will come (a partial head left behind is abandoned).
        if clientEOF, case .idle = state { close(&io) }
    }

    /// The upstream failed mid-exchange: an answer of our own if nothing of the response went out yet, else
    /// closing the client connection, the only honest signal once part of a response is out.
    private mutating func failExchange(status: Int, message: String, _ io: inout ConnectionIO) {
        release(reusable: false, &io)
        if case .head = exchange.response, !exchange.responseBytesSeen {
            answer(status, message, &io, keepAlive: false)
        } else {
            close(&io)
        }
    }

    private mutating func failResponse(_ reason: String, _ io: inout ConnectionIO) {
        release(reusable: false, &io)
        answer(502, reason, &io, keepAlive: false)
    }

    /// The upstream connection is done with and the client's closes after what is queued for it.
    private mutating func abortExchange(_ io: inout ConnectionIO) {
        release(reusable: false, &io)
        close(&io)
    }

    /// Nothing more will be read or written on this connection after what is queued for the client.
    private mutating func close(_ io: inout ConnectionIO) {
        state = .closed
        io.commands.append(.closeClient)
    }

    /// A response of the proxy's own (``ProxyAnswer``); the connection stays open after it when `keepAlive`
    /// and the client has not closed its side.
    private mutating func answer(
        _ status: Int, _ reason: String, _ io: inout ConnectionIO, keepAlive: Bool, fields: [ProxyAnswer.Field] = []
    ) {
        let keep = keepAlive && !clientEOF
        let via = configuration.addVia ? configuration.viaPseudonym : nil
        io.toClient.append(
            contentsOf: ProxyAnswer(status: status, reason: reason, fields: fields, via: via, close: !keep).bytes)
        if keep {
            exchange = Exchange()  // as at the end of an exchange: nothing of it stays with an idle connection
            state = .idle
            if bufferedClientBytes > 0 { parseRequest(&io) }
        } else {
            close(&io)
        }
    }

}

/// The storage heads are parsed and rewritten into — the received head's bytes, its field list, the outgoing line
/// list and the buffer of the lines the proxy writes — kept from one head to the next, so that an exchange
/// allocates none of them. One per event loop, shared by its connections (an idle connection holds none), used by
/// that loop's thread alone and by one head at a time: a head's storage is taken when it is parsed and kept again
/// once the head has been forwarded, to be reused when that head is gone.
///
/// Reuse never changes a value anyone holds: storage still referenced when it is taken again (a hook kept a copy
/// of the head) is copied on write, and the next head simply gets new storage.
public final class HeadStorage {
    private var bytes: [UInt8] = []
    private var fields: [HTTPHead.Field] = []
    private var lines: [OutgoingHead.Line] = []
    private var written: EditedLines? = nil
    /// Larger storage is let go: a rare large head does not stay allocated.
    static let maximumBytes = 16384
    static let maximumEntries = 256

    public init() {}

    /// `source` copied into the kept byte storage.
    func bytes(copying source: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var b = Self.take(&bytes)
        b.removeAll(keepingCapacity: true)
        b.append(contentsOf: source)
        return b
    }

    /// The kept field list's storage (for ``HTTPHeadParser/parseHead(_:strictValues:fieldStorage:)``).
    func takeFields() -> [HTTPHead.Field] { Self.take(&fields) }

    /// The kept line list's storage and written-line buffer (for ``OutgoingHead/init(_:storage:)``). The buffer only
    /// when no one else holds it any more (a head a hook kept still reads it), emptied.
    func takeOutgoing() -> OutgoingHead.Storage {
        var buffer: EditedLines? = nil
        swap(&buffer, &written)
        if isKnownUniquelyReferenced(&buffer) { buffer!.removeAll() } else { buffer = nil }
        return OutgoingHead.Storage(lines: Self.take(&lines), written: buffer)
    }

    /// `kept`'s storage, `kept` left empty (so that the storage taken is the only reference to it).
    @inline(__always)
    private static func take<Element>(_ kept: inout [Element]) -> [Element] {
        var taken: [Element] = []
        swap(&taken, &kept)
        return taken
    }

    /// Keeps `head`'s bytes and fields for the next head: a reference now, storage to reuse once `head` is gone.
    func keep(_ head: HTTPHead) {
        if head.bytes.capacity <= Self.maximumBytes { bytes = head.bytes }
        if head.fields.capacity <= Self.maximumEntries { fields = head.fields }
    }

    /// Keeps `out`'s line list and written-line buffer for the next head.
    func keep(_ out: OutgoingHead) {
        if out.lines.capacity <= Self.maximumEntries { lines = out.lines }
        if let buffer = out.writtenStorage, buffer.room <= Self.maximumBytes { written = buffer }
    }
}
