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
public struct ProxyConnectionMachine: Sendable {
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

    enum State: Sendable {
        /// Waiting for (more of) a request head. Transitions: → connecting (head parsed), → closed (error, EOF).
        case idle
        /// A request is parsed and waits for its upstream. → exchanging (connected), → closed (failure).
        case connecting(Exchange)
        /// Request and response in flight. → idle (response done, keep-alive), → tunnel (101), → closed.
        case exchanging(Exchange)
        /// A byte tunnel; `clientDone` / `upstreamDone` record half-closes. → closed when both are done.
        case tunnel(clientDone: Bool, upstreamDone: Bool)
        /// Nothing more will be read or written after the pending output.
        case closed
    }

    /// One request/response exchange. A class: the state enum holds a reference, so moving between states and
    /// updating a field copy a pointer, not the whole exchange (its buffers, parser and context). Owned by one
    /// machine, which is confined to one event loop.
    final class Exchange: @unchecked Sendable {
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

    enum ResponsePhase: Sendable {
        case head
        case body(BodyReader)
    }

    public private(set) var configuration: ProxyConfiguration
    let hooks: any ProxyHooks
    let clientAddress: String
    var state: State = .idle
    var clientIn: [UInt8] = []
    var clientInStart = 0
    var clientEOF = false
    var headParser: HTTPHeadParser
    var nextRequestID: @Sendable () -> UInt64
    /// Set after an intercepted CONNECT: origin-form requests (inside TLS) go here, as https.
    public private(set) var interceptedOrigin: Origin? = nil
    /// Requests parsed on this connection so far (for the status line).
    public private(set) var requestCount = 0

    public init(
        configuration: ProxyConfiguration, hooks: any ProxyHooks = NoHooks(), clientAddress: String,
        requestIDs: @escaping @Sendable () -> UInt64
    ) {
        self.configuration = configuration
        self.hooks = hooks
        self.clientAddress = clientAddress
        self.headParser = HTTPHeadParser(limits: configuration.parserLimits)
        self.nextRequestID = requestIDs
    }

    public var phase: Phase {
        switch state {
        case .idle: return clientIn.count > clientInStart ? .readingHead : .idle
        case .connecting: return .connecting
        case .exchanging(let e):
            if case .head = e.response { return e.responseBytesSeen ? .streaming : .awaitingResponse }
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
    }

    /// The status, read in place: declared `mutating` (it changes nothing) so that a shell holding the machine
    /// in a class property reads it through an in-place access; reading a property of a struct stored in a class
    /// copies the whole struct first (its buffers, configuration and hooks: ~650 instructions a time).
    public mutating func status() -> Status {
        Status(
            phase: phase, wantsClientData: wantsClientData, bufferedClientBytes: bufferedClientBytes,
            requestCount: requestCount)
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
        case .closed: return
        case .tunnel:
            io.toUpstream.append(contentsOf: bytes)
            return
        default: break
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
            state = .closed
            io.commands.append(.closeClient)
        case .connecting(let e), .exchanging(let e):
            if !e.requestBody.isComplete {
                // The request was cut short: there is nothing sensible to send upstream.
                abortExchange(&io)
            }
        // Otherwise finish the response first, then close.
        case .tunnel(_, let upstreamDone):
            state = .tunnel(clientDone: true, upstreamDone: upstreamDone)
            io.commands.append(.shutdownUpstreamWrite)
            if upstreamDone { finishTunnel(&io) }
        case .closed: break
        }
    }

    public mutating func upstreamConnected(reused: Bool, _ io: inout ConnectionIO) {
        guard case .connecting(let e) = state else { return }
        e.reusedUpstream = reused
        if e.isConnect {
            io.toClient.append(contentsOf: Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8))
            state = .tunnel(clientDone: false, upstreamDone: false)
            // Bytes the client sent after the CONNECT head belong to the tunnel.
            if bufferedClientBytes > 0 {
                io.toUpstream.append(contentsOf: clientIn[clientInStart...])
                clientIn.removeAll()
                clientInStart = 0
            }
            if clientEOF { clientClosed(&io) }
            return
        }
        io.toUpstream.append(contentsOf: e.requestHeadBytes)
        state = .exchanging(e)
        forwardRequestBody(&io)
    }

    public mutating func upstreamFailed(_ failure: UpstreamFailure, _ io: inout ConnectionIO) {
        switch state {
        case .connecting(let e):
            answer(failure.status, failure.message, &io, keepAlive: e.clientKeepAlive && e.requestBody.isComplete)
        case .exchanging(let e):
            // A pooled connection the server closed can fail as a reset rather than an end of stream (the request
            // reached a socket already closed): the same retry. A timeout is not retried (it would wait twice).
            if case .failed = failure, retryOnFreshConnection(e, &io) { return }
            failExchange(e, status: failure.status, message: failure.message, &io)
        case .tunnel:
            state = .closed
            io.commands.append(.closeClient)
        default: break
        }
    }

    public mutating func upstreamData(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        switch state {
        case .tunnel:
            io.toClient.append(contentsOf: bytes)
        case .exchanging(let e):
            e.responseBytesSeen = true
            switch e.response {
            case .head:
                e.upstreamIn.append(contentsOf: bytes)
                processResponseHead(&io)
            case .body:
                forwardResponseBody(bytes, &io)
            }
        default: break
        }
    }

    public mutating func upstreamClosed(_ io: inout ConnectionIO) {
        switch state {
        case .tunnel(let clientDone, _):
            state = .tunnel(clientDone: clientDone, upstreamDone: true)
            io.commands.append(.shutdownClientWrite)
            if clientDone { finishTunnel(&io) }
        case .exchanging(let e):
            if case .body(var reader) = e.response {
                if reader.endOfStream() {
                    e.response = .body(reader)
                    e.upstreamReusable = false
                    e.closeClientAfter = e.closeClientAfter || reader.framing == .untilClose
                    state = .exchanging(e)
                    finishExchange(&io)
                } else {
                    io.commands.append(.releaseUpstream(reusable: false))
                    state = .closed
                    io.commands.append(.closeClient)
                }
                return
            }
            if retryOnFreshConnection(e, &io) { return }
            io.commands.append(.releaseUpstream(reusable: false))
            if e.responseBytesSeen {
                answer(502, "upstream \(e.origin) sent an incomplete response head", &io, keepAlive: false)
            } else {
                answer(502, "upstream \(e.origin) closed the connection without answering", &io, keepAlive: false)
            }
        default: break
        }
    }

    /// No response byte yet on a pooled connection the server had closed: the request goes once more, on a
    /// fresh connection, when that is safe (no request body was sent). False when it is not retried.
    private mutating func retryOnFreshConnection(_ e: Exchange, _ io: inout ConnectionIO) -> Bool {
        guard e.reusedUpstream && !e.responseBytesSeen && e.requestBody.framing == .none else { return false }
        io.commands.append(.releaseUpstream(reusable: false))
        e.reusedUpstream = false
        e.upstreamIn.removeAll()
        state = .connecting(e)
        io.commands.append(.connect(e.origin, fresh: true, via: e.via))
        return true
    }

    /// A timer set for the current ``phase`` ran out.
    public mutating func timedOut(_ io: inout ConnectionIO) {
        switch state {
        case .idle:
            if bufferedClientBytes > 0 {
                answer(408, "request head not received in time", &io, keepAlive: false)
            } else {
                state = .closed
                io.commands.append(.closeClient)
            }
        case .connecting(let e):
            let message =
                e.via.map { "timed out connecting to upstream \(e.origin) through upstream proxy \($0.proxy)" }
                ?? UpstreamFailure.connectTimeout(e.origin).message
            answer(504, message, &io, keepAlive: false)
        case .exchanging(let e):
            failExchange(e, status: 504, message: UpstreamFailure.responseTimeout(e.origin).message, &io)
        case .tunnel:
            state = .closed
            io.commands.append(.closeClient)
        case .closed: break
        }
    }

    /// Graceful shutdown: close now if idle, else after the exchange in flight.
    public mutating func drain(_ io: inout ConnectionIO) {
        if case .idle = state, bufferedClientBytes == 0 {
            state = .closed
            io.commands.append(.closeClient)
        } else {
            clientEOF = true
        }
    }

    // MARK: - Requests

    private mutating func process(_ io: inout ConnectionIO) {
        switch state {
        case .idle:
            parseRequest(&io)
        case .connecting, .exchanging:
            forwardRequestBody(&io)
        default: break
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
            answer(error.kind == .headTooLarge ? 431 : 400, error.description, &io, keepAlive: false)
            return
        }
        let headBytes = Array(clientIn[clientInStart..<(clientInStart + length)])
        clientInStart += length
        let request: RequestHead
        let framing: BodyFraming
        do {
            request = try headParser.parseRequest(headBytes)
            framing = try BodyFraming.forRequest(request.head, version: request.version)
        } catch {
            let status = error.kind == .tooManyFields ? 431 : error.kind == .notImplemented ? 501 : 400
            answer(status, error.description, &io, keepAlive: false)
            return
        }
        startExchange(request, framing: framing, &io)
    }

    private mutating func startExchange(_ request: RequestHead, framing: BodyFraming, _ io: inout ConnectionIO) {
        requestCount += 1
        let head = request.head
        let connection = head.connectionOptions()
        let keepAlive = request.version.minor >= 1 ? !connection.close : connection.keepAlive
        let route: RequestRoute
        switch RequestRoute.route(
            request, reverseUpstream: configuration.reverseUpstream, interceptedOrigin: interceptedOrigin)
        {
        case .success(let r): route = r
        case .failure(let refusal):
            answer(refusal.status, refusal.reason, &io, keepAlive: false, fields: refusal.fields)
            return
        }
        // RFC 9112 §3.2: one Host, with a valid value, and always one in HTTP/1.1. A Host that already names the
        // target's authority (the usual case) is valid without another parse.
        var hostField: HTTPHead.Field? = nil
        for field in head.fields where field.known == .host {
            guard hostField == nil else {
                answer(400, "more than one Host header field", &io, keepAlive: false)
                return
            }
            hostField = field
        }
        if let hostField {
            let value = head.valueBytes(hostField)
            let valid: Bool
            if let authority = route.authority {
                valid =
                    value.isEmpty || authority.isHostFieldValue(value, defaultPort: route.authorityDefaultPort)
                    || value.withUnsafeBufferPointer(Authority.isValid)
            } else {
                valid = value.withUnsafeBufferPointer(Authority.isValid)
            }
            guard valid else {
                answer(400, "invalid Host header field", &io, keepAlive: false)
                return
            }
        } else if request.version.minor > 0 && !route.isConnect {
            // A CONNECT's authority-form target is its whole route, and clients that tunnel through proxies do not
            // all send Host with it; Host cannot change where a tunnel goes, so its absence is not refused there.
            answer(400, "HTTP/1.1 request without a Host header field", &io, keepAlive: false)
            return
        }
        let origin = route.origin
        if route.isConnect {
            if interceptedOrigin == nil && configuration.interceptionAvailable
                && hooks.shouldIntercept(host: origin.host, port: origin.port)
            {
                // RFC 9110 §9.3.6: 2xx, then the bytes that follow are the tunnel, which the shell decrypts.
                io.toClient.append(contentsOf: Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8))
                let leftover = Array(clientIn[clientInStart...])
                clientIn.removeAll()
                clientInStart = 0
                interceptedOrigin = origin
                state = .idle
                io.commands.append(.startTLS(host: origin.host, leftover: leftover))
                return
            }
        }
        if configuration.reverseUpstream == nil && interceptedOrigin == nil && isOwnAddress(origin) {
            answer(400, "refusing a request addressed to the proxy itself (\(origin))", &io, keepAlive: false)
            return
        }
        // The host and port the client addressed: the Host it sent (or the URL's authority) towards a fixed
        // upstream, the origin itself otherwise.
        var host = origin.host
        var port = origin.port
        if configuration.reverseUpstream != nil && interceptedOrigin == nil && !route.isConnect {
            let named: Origin? =
                route.authority
                ?? hostField.flatMap { f in
                    head.valueBytes(f).withUnsafeBufferPointer { Authority.parse($0, defaultPort: 80) }
                }
            if let named { (host, port) = (named.host, named.port) }
        }
        let context = ExchangeContext(
            requestID: nextRequestID(), clientAddress: clientAddress, method: request.method, scheme: route.scheme,
            host: host, port: port, target: route.target, status: nil)
        let wantsUpgrade = !route.isConnect && connection.upgrade && head.values(.upgrade).count == 1
        let secure = route.isConnect || interceptedOrigin != nil
        let via = configuration.upstreamProxies?.proxy(for: origin.host, secure: secure).map {
            UpstreamHop(proxy: $0, tunnel: secure)
        }
        var headBytes: [UInt8] = []
        if !route.isConnect {
            var out = OutgoingHead(head)
            var startLine: [UInt8] = []
            startLine.reserveCapacity(request.method.utf8.count + route.target.utf8.count + 10)
            startLine.append(contentsOf: request.method.utf8)
            startLine.append(0x20)
            if let via, !via.tunnel {
                // RFC 9112 §3.2.2: to a proxy, the absolute form.
                startLine.append(contentsOf: Self.httpSchemePrefix)
                startLine.append(contentsOf: origin.hostFieldValue(defaultPort: 80))
            }
            startLine.append(contentsOf: route.target.utf8)
            startLine.append(contentsOf: Self.http11Suffix)
            out.startLine = startLine
            Self.removeHopByHop(&out, connection: connection, keepUpgrade: wantsUpgrade)
            // The client's credentials were for this proxy; the next one gets its own, if any.
            out.removeAll(.proxyAuthorization)
            if let via, !via.tunnel, let authorization = via.proxy.authorization {
                out.append(name: "Proxy-Authorization", value: Array(authorization.utf8), known: .proxyAuthorization)
            }
            Self.canonicaliseFraming(&out, framing)
            // RFC 9112 §3.2.2: Host becomes the target URI's authority.
            if let authority = route.authority {
                let defaultPort = route.authorityDefaultPort
                if let index = (0..<out.count).first(where: { out.known(at: $0) == .host }) {
                    if !authority.isHostFieldValue(out.valueBytes(at: index), defaultPort: defaultPort) {
                        out.replaceValue(at: index, with: authority.hostFieldValue(defaultPort: defaultPort))
                    }
                } else {
                    out.append(name: "Host", value: authority.hostFieldValue(defaultPort: defaultPort), known: .host)
                }
            }
            if wantsUpgrade { out.append(name: "Connection", value: Self.upgradeToken, known: .connection) }
            if configuration.addVia {
                Self.addVia(&out, version: request.version, pseudonym: configuration.viaPseudonym)
            }
            hooks.willForwardRequest(&out, context: context)
            headBytes.reserveCapacity(head.bytes.count + 64)
            out.serialize(into: &headBytes)
        }
        let exchange = Exchange(
            context: context, origin: origin, isConnect: route.isConnect, wantsUpgrade: wantsUpgrade,
            requestHeadBytes: headBytes, requestBody: BodyReader(route.isConnect ? .none : framing),
            clientVersion: request.version, clientKeepAlive: keepAlive,
            responseParser: HTTPHeadParser(limits: configuration.parserLimits))
        exchange.via = via
        state = .connecting(exchange)
        // A tunnel gets a connection of its own: an idle keep-alive connection to the same host and port is
        // never handed to a CONNECT.
        io.commands.append(.connect(origin, fresh: route.isConnect, via: via))
    }

    /// Framing fields with exactly one reading on the way out (RFC 9110 §8.6, RFC 9112 §6.1, §6.3): one
    /// Content-Length of plain digits, or one Transfer-Encoding of lowercase codings and no Content-Length. A head
    /// that has them so already (the usual case) is left as it is.
    static func canonicaliseFraming(_ out: inout OutgoingHead, _ framing: BodyFraming) {
        // Judged on the received fields (the proxy removes neither of the two), without touching the output.
        let source = out.source
        var contentLengths = 0
        var transferEncodings = 0
        var canonical = true
        for field in source.fields {
            switch field.known {
            case .contentLength:
                contentLengths += 1
                canonical = canonical && source.bytes[field.value].allSatisfy(ByteClass.isDigit)
            case .transferEncoding:
                transferEncodings += 1
                canonical = canonical && source.bytes[field.value].elementsEqual(chunkedToken)
            default: break
            }
        }
        if canonical && contentLengths <= 1
            && (transferEncodings == 0 || (transferEncodings == 1 && contentLengths == 0))
        {
            return
        }
        if transferEncodings > 0 {
            // Transfer-Encoding wins (RFC 9112 §6.3 rule 3); its codings are rewritten as one list.
            var codings: [UInt8] = []
            for i in 0..<out.count where out.known(at: i) == .transferEncoding {
                for element in out.valueBytes(at: i).split(separator: 0x2C) {
                    let trimmed = element.drop(while: ByteClass.isWhitespace).reversed().drop(
                        while: ByteClass.isWhitespace
                    )
                    .reversed()
                    guard !trimmed.isEmpty else { continue }
                    if !codings.isEmpty { codings.append(contentsOf: [0x2C, 0x20]) }
                    codings.append(contentsOf: trimmed.map(ByteClass.lower))
                }
            }
            out.removeAll(.contentLength)
            out.removeAll(.transferEncoding)
            out.append(name: "Transfer-Encoding", value: codings, known: .transferEncoding)
        } else if case .contentLength(let n) = framing {
            out.removeAll(.contentLength)
            out.append(name: "Content-Length", value: Array(String(n).utf8), known: .contentLength)
        } else {
            out.removeAll(.contentLength)
            out.append(name: "Content-Length", value: [0x30], known: .contentLength)
        }
    }

    static let chunkedToken = Array("chunked".utf8)

    private mutating func forwardRequestBody(_ io: inout ConnectionIO) {
        let e: Exchange
        switch state {
        case .exchanging(let x): e = x
        case .connecting: return  // body waits in clientIn until the upstream is there
        default: return
        }
        guard !e.requestBody.isComplete, bufferedClientBytes > 0 else { return }
        var reader = e.requestBody
        let n: Int
        do {
            n = try reader.consume(clientIn[clientInStart...])
        } catch {
            // Nothing more of this request reaches the upstream; the client gets a 400 unless part of the
            // response is already out, when closing is the only honest signal.
            failExchange(e, status: 400, message: "bad request body: \(error.description)", &io)
            return
        }
        io.toUpstream.append(contentsOf: clientIn[clientInStart..<(clientInStart + n)])
        clientInStart += n
        let updated = e
        updated.requestBody = reader
        state = .exchanging(updated)
    }

    // MARK: - Responses

    private mutating func processResponseHead(_ io: inout ConnectionIO) {
        guard case .exchanging(let e) = state else { return }
        state = .closed  // each way out below says what comes next (the exchange, a tunnel, or closed)
        while true {
            let length: Int
            do {
                guard let l = try e.responseParser.headLength(e.upstreamIn[...]) else {
                    state = .exchanging(e)
                    return
                }
                length = l
            } catch {
                state = .exchanging(e)
                failResponse(e, "upstream \(e.origin) sent a response head that is too large", &io)
                return
            }
            let headBytes = Array(e.upstreamIn[0..<length])
            e.upstreamIn.removeFirst(length)
            let response: ResponseHead
            let framing: BodyFraming
            do {
                response = try e.responseParser.parseResponse(headBytes)
                framing = try BodyFraming.forResponse(
                    response.head, status: response.status, requestMethod: e.context.method, version: response.version)
            } catch {
                state = .exchanging(e)
                failResponse(e, "upstream \(e.origin) sent an invalid response: \(error.description)", &io)
                return
            }
            e.context.status = response.status
            if response.status == 407, let via = e.via {
                // The upstream proxy wants credentials this proxy has (the client's were for this one): relaying its
                // challenge would have the client answer it to the wrong proxy.
                state = .exchanging(e)
                let hint =
                    via.proxy.authorization == nil
                    ? "give them in the URL: --upstream-proxy http://user:password@\(via.proxy)"
                    : "the user and password in --upstream-proxy were refused"
                failResponse(e, "upstream proxy \(via.proxy) asks for credentials (407); \(hint)", &io)
                return
            }
            if response.status == 101 && !e.wantsUpgrade {
                // RFC 9110 §15.2.2: a server switches protocols only when asked; relaying this would have the
                // client read what follows as another protocol while the proxy reads it as HTTP.
                state = .exchanging(e)
                failResponse(e, "upstream \(e.origin) switched protocols without being asked to", &io)
                return
            }
            if response.status == 101 {
                var out = OutgoingHead(response.head)
                if configuration.addVia {
                    Self.addVia(&out, version: response.version, pseudonym: configuration.viaPseudonym)
                }
                hooks.willForwardResponse(&out, context: e.context)
                let headStart = io.toClient.count
                out.serialize(into: &io.toClient)
                hooks.didForwardResponse(out, bytes: io.toClient[headStart...], context: e.context)
                io.toClient.append(contentsOf: e.upstreamIn)
                state = .tunnel(clientDone: false, upstreamDone: false)
                if bufferedClientBytes > 0 {
                    io.toUpstream.append(contentsOf: clientIn[clientInStart...])
                    clientIn.removeAll()
                    clientInStart = 0
                }
                return
            }
            if (100..<200).contains(response.status) {
                // Interim responses (100 Continue, 103 Early Hints) go to 1.1 clients as parsed (line ends
                // normalised); the final response follows (RFC 9110 §15.2).
                if e.clientVersion.minor >= 1 { io.toClient.append(contentsOf: response.head.bytes) }
                continue
            }
            let connection = response.head.connectionOptions()
            if connection.close || response.version.minor == 0 { e.upstreamReusable = false }
            if framing == .chunked && response.head.fields.contains(where: { $0.known == .contentLength }) {
                // Both framing fields: Transfer-Encoding wins (RFC 9112 §6.3 rule 3), but a server that sends
                // both is not trusted with the next exchange on this connection.
                e.upstreamReusable = false
            }
            var out = OutgoingHead(response.head)
            Self.removeHopByHop(&out, connection: connection, keepUpgrade: false)
            Self.canonicaliseFraming(&out, framing)
            if framing == .untilClose { out.removeAll(.contentLength) }
            e.dechunk = framing == .chunked && e.clientVersion.minor == 0
            if e.dechunk { out.removeAll(.transferEncoding) }
            e.closeClientAfter = !e.clientKeepAlive || clientEOF || framing == .untilClose || e.dechunk
            if e.closeClientAfter {
                out.append(name: "Connection", value: Self.closeToken, known: .connection)
            } else if e.clientVersion.minor == 0 {
                out.append(name: "Connection", value: Self.keepAliveToken, known: .connection)
            }
            if configuration.addVia {
                Self.addVia(&out, version: response.version, pseudonym: configuration.viaPseudonym)
            }
            hooks.willForwardResponse(&out, context: e.context)
            let headStart = io.toClient.count
            out.serialize(into: &io.toClient)
            hooks.didForwardResponse(out, bytes: io.toClient[headStart...], context: e.context)
            let rest = e.upstreamIn
            e.upstreamIn = []
            e.response = .body(BodyReader(framing))
            state = .exchanging(e)
            if rest.isEmpty {
                if case .body(let r) = e.response, r.isComplete { finishExchange(&io) }
            } else {
                forwardResponseBody(rest[...], &io)
            }
            return
        }
    }

    private mutating func forwardResponseBody(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        guard case .exchanging(let e) = state, case .body(var reader) = e.response else { return }
        let n: Int
        do {
            if e.dechunk {
                n = try withUnsafeMutablePointer(to: &io.toClient) { try reader.consume(bytes, payload: $0) }
            } else {
                n = try reader.consume(bytes)
                io.toClient.append(contentsOf: bytes.prefix(n))
            }
        } catch {
            io.commands.append(.releaseUpstream(reusable: false))
            state = .closed
            io.commands.append(.closeClient)
            return
        }
        if n < bytes.count { e.upstreamReusable = false }  // bytes after the body: the upstream is confused
        e.response = .body(reader)
        state = .exchanging(e)
        if reader.isComplete { finishExchange(&io) }
    }

    private mutating func finishExchange(_ io: inout ConnectionIO) {
        guard case .exchanging(let e) = state else { return }
        if !e.requestBody.isComplete {
            // The response came before the whole request body: the rest cannot be sent any more.
            io.commands.append(.releaseUpstream(reusable: false))
            state = .closed
            io.commands.append(.closeClient)
            return
        }
        io.commands.append(.releaseUpstream(reusable: e.upstreamReusable))
        if e.closeClientAfter {
            state = .closed
            io.commands.append(.closeClient)
            return
        }
        state = .idle
        if bufferedClientBytes > 0 {
            parseRequest(&io)
        } else if clientEOF {
            state = .closed
            io.commands.append(.closeClient)
        }
    }

    /// The upstream failed mid-exchange: an answer of our own if nothing of the response went out yet, else
    /// closing the client connection, the only honest signal once part of a response is out.
    private mutating func failExchange(_ e: Exchange, status: Int, message: String, _ io: inout ConnectionIO) {
        io.commands.append(.releaseUpstream(reusable: false))
        if case .head = e.response, !e.responseBytesSeen {
            answer(status, message, &io, keepAlive: false)
        } else {
            state = .closed
            io.commands.append(.closeClient)
        }
    }

    private mutating func failResponse(_ e: Exchange, _ reason: String, _ io: inout ConnectionIO) {
        io.commands.append(.releaseUpstream(reusable: false))
        answer(502, reason, &io, keepAlive: false)
    }

    private mutating func abortExchange(_ io: inout ConnectionIO) {
        io.commands.append(.releaseUpstream(reusable: false))
        state = .closed
        io.commands.append(.closeClient)
    }

    private mutating func finishTunnel(_ io: inout ConnectionIO) {
        state = .closed
        io.commands.append(.releaseUpstream(reusable: false))
        io.commands.append(.closeClient)
    }

    /// A response of the proxy's own: status, a one-line plain-text reason.
    private mutating func answer(
        _ status: Int, _ reason: String, _ io: inout ConnectionIO, keepAlive: Bool, fields: [(String, String)] = []
    ) {
        let body = reason + "\n"
        let keep = keepAlive && !clientEOF
        var text = "HTTP/1.1 \(status) \(Self.reasonPhrase(status))\r\n"
        text += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        if configuration.addVia { text += "Via: 1.1 \(configuration.viaPseudonym)\r\n" }
        text += keep ? "\r\n" : "Connection: close\r\n\r\n"
        io.toClient.append(contentsOf: Array(text.utf8))
        io.toClient.append(contentsOf: Array(body.utf8))
        if keep {
            state = .idle
            if bufferedClientBytes > 0 { parseRequest(&io) }
        } else {
            state = .closed
            io.commands.append(.closeClient)
        }
    }

    // MARK: - Helpers

    private func isOwnAddress(_ origin: Origin) -> Bool {
        guard configuration.ownPorts.contains(origin.port) else { return false }
        let h = origin.host
        return h == "localhost" || h.hasSuffix(".localhost") || h.utf8.starts(with: "127.".utf8) || h == "::1"
            || h == "0.0.0.0" || h == "::" || h.hasPrefix("::ffff:127.") || h == "::ffff:0.0.0.0"
            || configuration.ownHosts.contains(h)
    }

    /// Removes the hop-by-hop fields of RFC 9110 §7.6.1: Connection and the fields it names, Keep-Alive,
    /// Proxy-Connection, TE, Upgrade (kept for an upgrade request), and Transfer-Encoding is kept because
    /// bodies are forwarded in their received framing.
    static func removeHopByHop(_ out: inout OutgoingHead, connection: ConnectionOptions, keepUpgrade: Bool) {
        let named = connection.fieldNames
        // One bit per known field that goes: a received line is judged by its classification alone.
        var hopByHop = Self.hopByHopFields
        if !keepUpgrade { hopByHop |= 1 << UInt32(KnownField.upgrade.rawValue) }
        var index = out.count - 1
        while index >= 0 {
            if hopByHop & (1 << UInt32(out.known(at: index).rawValue)) != 0
                || (!named.isEmpty && named.contains(where: { out.name(at: index, is: $0) }))
            {
                out.remove(at: index)
            }
            index -= 1
        }
    }

    static func addVia(_ out: inout OutgoingHead, version: HTTPVersion, pseudonym: String) {
        // The common case without building a string each time.
        if version.major == 1 && version.minor <= 1 && pseudonym == "cookie-proxy" {
            out.append(name: "Via", value: version.minor == 1 ? viaCookieProxy11 : viaCookieProxy10, known: .other)
        } else {
            out.append(name: "Via", value: Array("\(version.major).\(version.minor) \(pseudonym)".utf8), known: .other)
        }
    }

    static let viaCookieProxy11 = Array("1.1 cookie-proxy".utf8)
    static let viaCookieProxy10 = Array("1.0 cookie-proxy".utf8)
    static let http11Suffix = Array(" HTTP/1.1".utf8)
    static let httpSchemePrefix = Array("http://".utf8)
    // Connection values the proxy writes, built once.
    static let upgradeToken = Array("upgrade".utf8)
    static let closeToken = Array("close".utf8)
    static let keepAliveToken = Array("keep-alive".utf8)
    /// Connection, Keep-Alive, Proxy-Connection and TE, one bit each by classification.
    static let hopByHopFields: UInt32 = [KnownField.connection, .keepAlive, .proxyConnection, .te].reduce(0) {
        $0 | 1 << UInt32($1.rawValue)
    }

    /// The reason phrase this proxy writes for a status it answers with.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 204: return "No Content"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 404: return "Not Found"
        case 403: return "Forbidden"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 431: return "Request Header Fields Too Large"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Error"
        }
    }
}
