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
        /// `upstreamFailed`. `fresh` forbids a pooled connection (a retry after a stale one).
        case connect(Origin, fresh: Bool)
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
            // No response head yet. A pooled connection the server had closed: retry once on a fresh one
            // when that is safe (no request body was sent).
            if e.reusedUpstream && !e.responseBytesSeen && e.requestBody.framing == .none {
                io.commands.append(.releaseUpstream(reusable: false))
                e.reusedUpstream = false
                e.upstreamIn.removeAll()
                state = .connecting(e)
                io.commands.append(.connect(e.origin, fresh: true))
                return
            }
            io.commands.append(.releaseUpstream(reusable: false))
            if e.responseBytesSeen {
                answer(502, "upstream \(e.origin) sent an incomplete response head", &io, keepAlive: false)
            } else {
                answer(502, "upstream \(e.origin) closed the connection without answering", &io, keepAlive: false)
            }
        default: break
        }
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
            answer(504, UpstreamFailure.connectTimeout(e.origin).message, &io, keepAlive: false)
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
            framing = try BodyFraming.forRequest(request.head)
        } catch {
            answer(error.kind == .tooManyFields ? 431 : 400, error.description, &io, keepAlive: false)
            return
        }
        startExchange(request, framing: framing, &io)
    }

    private mutating func startExchange(_ request: RequestHead, framing: BodyFraming, _ io: inout ConnectionIO) {
        requestCount += 1
        let head = request.head
        let connection = head.connectionOptions()
        let keepAlive = request.version.minor >= 1 ? !connection.close : connection.keepAlive
        let isConnect = request.method == "CONNECT"
        // Where does it go? (RFC 9112 §3.2: absolute-form to a proxy, authority-form for CONNECT.)
        var scheme = "http"
        let origin: Origin
        var target: String
        if isConnect {
            // RFC 9110 §9.3.6: authority-form, the port is required.
            guard request.target.contains(":"), let o = Self.parseAuthority(Substring(request.target), defaultPort: 443)
            else {
                answer(400, "CONNECT target must be host:port", &io, keepAlive: false)
                return
            }
            origin = o
            target = ""
            scheme = "https"
            if interceptedOrigin == nil && configuration.interceptionAvailable
                && hooks.shouldIntercept(host: o.host, port: o.port)
            {
                // RFC 9110 §9.3.6: 2xx, then the bytes that follow are the tunnel, which the shell decrypts.
                io.toClient.append(contentsOf: Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8))
                let leftover = Array(clientIn[clientInStart...])
                clientIn.removeAll()
                clientInStart = 0
                interceptedOrigin = o
                state = .idle
                io.commands.append(.startTLS(host: o.host, leftover: leftover))
                return
            }
        } else if request.target.utf8.first == 0x2F {
            if let intercepted = interceptedOrigin {
                origin = intercepted
                target = request.target
                scheme = "https"
            } else {
                guard let reverse = configuration.reverseUpstream else {
                    answer(
                        400,
                        "this is a forward proxy: send an absolute URL (curl -x http://this-proxy http://host/path)",
                        &io, keepAlive: false)
                    return
                }
                origin = reverse
                target = request.target
            }
        } else {
            // The scheme, case-insensitively, from the target's first eight bytes taken as one word (RFC 3986 §3.1).
            let prefix = Self.schemePrefix(request.target)
            if prefix == .https {
                answer(
                    400, "https URLs go through CONNECT; this proxy does not fetch https:// targets itself", &io,
                    keepAlive: false)
                return
            }
            guard prefix == .http else {
                answer(400, "request target must be an absolute http:// URL", &io, keepAlive: false)
                return
            }
            // RFC 3986 §3.2–3.5 on the UTF-8 view (Character-level Substring work is slow): the authority
            // ends at '/', '?' or '#'; userinfo ends at its last '@'; a fragment is never sent.
            let full = request.target
            let u = full.utf8
            let afterScheme = u.index(u.startIndex, offsetBy: 7)
            var authorityStart = afterScheme
            var authorityEnd = afterScheme
            while authorityEnd != u.endIndex {
                let c = u[authorityEnd]
                if c == 0x2F || c == 0x3F || c == 0x23 { break }
                authorityEnd = u.index(after: authorityEnd)
                if c == 0x40 { authorityStart = authorityEnd }
            }
            guard let o = Self.parseAuthority(full[authorityStart..<authorityEnd], defaultPort: 80) else {
                answer(400, "invalid host in request URL", &io, keepAlive: false)
                return
            }
            origin = o
            let fragment = u[authorityEnd...].firstIndex(of: 0x23) ?? u.endIndex
            target = String(full[authorityEnd..<fragment])
            if authorityEnd == fragment || u[authorityEnd] == 0x3F { target = "/" + target }
        }
        if configuration.reverseUpstream == nil && interceptedOrigin == nil && isOwnAddress(origin) {
            answer(400, "refusing a request addressed to the proxy itself (\(origin))", &io, keepAlive: false)
            return
        }
        let viewedFromClient = configuration.reverseUpstream != nil && interceptedOrigin == nil
        let context = ExchangeContext(
            requestID: nextRequestID(), clientAddress: clientAddress, method: request.method, scheme: scheme,
            host: viewedFromClient ? (Self.hostHeader(head) ?? origin.host) : origin.host,
            port: viewedFromClient ? (Self.hostPort(head) ?? origin.port) : origin.port,
            target: isConnect ? "" : target, status: nil)
        let wantsUpgrade = !isConnect && connection.upgrade && head.values(.upgrade).count == 1
        var headBytes: [UInt8] = []
        if !isConnect {
            var out = OutgoingHead(head)
            var startLine: [UInt8] = []
            startLine.reserveCapacity(request.method.utf8.count + target.utf8.count + 10)
            startLine.append(contentsOf: request.method.utf8)
            startLine.append(0x20)
            startLine.append(contentsOf: target.utf8)
            startLine.append(contentsOf: Self.http11Suffix)
            out.startLine = startLine
            Self.removeHopByHop(&out, connection: connection, keepUpgrade: wantsUpgrade)
            out.removeAll(.proxyAuthorization)
            // RFC 9112 §3.2.2: a proxy replaces Host with the target URI's authority.
            if configuration.reverseUpstream == nil && interceptedOrigin == nil {
                var first: Int? = nil
                var index = out.count - 1
                while index >= 0 {
                    if out.known(at: index) == .host {
                        // Every Host but the first goes.
                        if let later = first { out.remove(at: later) }
                        first = index
                    }
                    index -= 1
                }
                if let first {
                    if !origin.isHostFieldValue(out.valueBytes(at: first), defaultPort: 80) {
                        out.replaceValue(at: first, with: origin.hostFieldValue(defaultPort: 80))
                    }
                } else {
                    out.append(name: "Host", value: origin.hostFieldValue(defaultPort: 80), known: .host)
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
            context: context, origin: origin, isConnect: isConnect, wantsUpgrade: wantsUpgrade,
            requestHeadBytes: headBytes, requestBody: BodyReader(isConnect ? .none : framing),
            clientVersion: request.version, clientKeepAlive: keepAlive,
            responseParser: HTTPHeadParser(limits: configuration.parserLimits))
        state = .connecting(exchange)
        // A tunnel gets a connection of its own: an idle keep-alive connection to the same host and port is
        // never handed to a CONNECT.
        io.commands.append(.connect(origin, fresh: isConnect))
    }

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
            io.commands.append(.releaseUpstream(reusable: false))
            answer(400, "bad request body: \(error.description)", &io, keepAlive: false)
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
                failResponse(e, "upstream response head is too large", &io)
                return
            }
            let headBytes = Array(e.upstreamIn[0..<length])
            e.upstreamIn.removeFirst(length)
            let response: ResponseHead
            let framing: BodyFraming
            do {
                response = try e.responseParser.parseResponse(headBytes)
                framing = try BodyFraming.forResponse(
                    response.head, status: response.status, requestMethod: e.context.method)
            } catch {
                state = .exchanging(e)
                failResponse(e, "upstream sent an invalid response: \(error.description)", &io)
                return
            }
            e.context.status = response.status
            if response.status == 101 && e.wantsUpgrade {
                var out = OutgoingHead(response.head)
                if configuration.addVia {
                    Self.addVia(&out, version: response.version, pseudonym: configuration.viaPseudonym)
                }
                hooks.willForwardResponse(&out, context: e.context)
                out.serialize(into: &io.toClient)
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
                // Interim responses (100 Continue, 103 Early Hints) go to 1.1 clients as they are.
                if e.clientVersion.minor >= 1 { io.toClient.append(contentsOf: headBytes) }
                continue
            }
            let connection = response.head.connectionOptions()
            if connection.close || response.version.minor == 0 { e.upstreamReusable = false }
            var out = OutgoingHead(response.head)
            Self.removeHopByHop(&out, connection: connection, keepUpgrade: false)
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
            out.serialize(into: &io.toClient)
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
    private mutating func answer(_ status: Int, _ reason: String, _ io: inout ConnectionIO, keepAlive: Bool) {
        let body = reason + "\n"
        let keep = keepAlive && !clientEOF
        var text = "HTTP/1.1 \(status) \(Self.reasonPhrase(status))\r\n"
        text += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
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
        return h == "localhost" || h.utf8.starts(with: "127.".utf8) || h == "::1" || h == "0.0.0.0" || h == "::"
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
    // Connection values the proxy writes, built once.
    static let upgradeToken = Array("upgrade".utf8)
    static let closeToken = Array("close".utf8)
    static let keepAliveToken = Array("keep-alive".utf8)
    /// Connection, Keep-Alive, Proxy-Connection and TE, one bit each by classification.
    static let hopByHopFields: UInt32 = [KnownField.connection, .keepAlive, .proxyConnection, .te].reduce(0) {
        $0 | 1 << UInt32($1.rawValue)
    }

    enum SchemePrefix { case http, https, other }

    /// Whether a request target begins with `http://` or `https://`, in any case.
    static func schemePrefix(_ target: String) -> SchemePrefix {
        var target = target
        return target.withUTF8 { b in
            guard b.count >= 7 else { return .other }
            var word: UInt64 = 0
            for k in 0..<min(8, b.count) { word |= UInt64(b[k]) << UInt64(8 * k) }
            // The letters lowercased with | 0x20 (it maps only 'A'–'Z' onto these letters); ':' and '/' exact.
            if (word | 0x2020_2020) & 0x00FF_FFFF_FFFF_FFFF == 0x002F_2F3A_7074_7468 { return .http }  // "http://"
            if b.count >= 8 && word | 0x20_2020_2020 == 0x2F2F_3A73_7074_7468 { return .https }  // "https://"
            return .other
        }
    }

    /// `host[:port]` or `[v6]:port`, parsed on bytes (Character-level Substring work is slow).
    static func parseAuthority(_ authority: Substring, defaultPort: Int) -> Origin? {
        var authority = authority
        return authority.withUTF8 { parseAuthority($0, defaultPort: defaultPort) }
    }

    static func parseAuthority(_ a: UnsafeBufferPointer<UInt8>, defaultPort: Int) -> Origin? {
        var hostStart = 0
        var hostEnd = a.count
        var port = defaultPort
        func number(_ from: Int, _ to: Int) -> Int? {
            guard from < to, to - from <= 5 else { return nil }
            var n = 0
            for i in from..<to {
                guard a[i] &- 0x30 < 10 else { return nil }
                n = n * 10 + Int(a[i] - 0x30)
            }
            return n
        }
        if a.first == 0x5B {
            guard let close = a.firstIndex(of: 0x5D) else { return nil }
            hostStart = 1
            hostEnd = close
            if close + 1 < a.count {
                guard a[close + 1] == 0x3A, let p = number(close + 2, a.count) else { return nil }
                port = p
            }
        } else if let colon = a.lastIndex(of: 0x3A) {
            hostEnd = colon
            guard let p = number(colon + 1, a.count) else { return nil }
            port = p
        }
        guard hostStart < hostEnd, (1...65535).contains(port) else { return nil }
        for i in hostStart..<hostEnd {
            let b = a[i]
            guard b > 0x20 && b < 0x7F && b != 0x2F && b != 0x40 else { return nil }
        }
        if hostEnd - hostStart > 1 && a[hostEnd - 1] == 0x2E { hostEnd -= 1 }
        // Lowercased while copied into the string.
        let host = String(unsafeUninitializedCapacity: hostEnd - hostStart) { out in
            for i in hostStart..<hostEnd {
                let b = a[i]
                out[i - hostStart] = b &- 0x41 < 26 ? b | 0x20 : b
            }
            return hostEnd - hostStart
        }
        return Origin(host: host, port: port)
    }

    static func hostHeader(_ head: HTTPHead) -> String? {
        guard let value = head.values(.host).first, let o = parseAuthority(Substring(value), defaultPort: 80) else {
            return nil
        }
        return o.host
    }

    static func hostPort(_ head: HTTPHead) -> Int? {
        guard let value = head.values(.host).first else { return nil }
        return parseAuthority(Substring(value), defaultPort: 80)?.port
    }

    static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 408: return "Request Timeout"
        case 431: return "Request Header Fields Too Large"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Error"
        }
    }
}
