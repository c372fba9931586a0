import HTTPGrammar

/// Requests: parsing them, routing, the request head rewritten and the body forwarded.
extension ProxyConnectionMachine {

    mutating func process(_ io: inout ConnectionIO) {
        switch state {
        case .idle:
            parseRequest(&io)
        case .connecting, .exchanging:
            forwardRequestBody(&io)
        case .tunnel, .closed: unexpected("client bytes to parse", &io)
        }
    }

    mutating func parseRequest(_ io: inout ConnectionIO) {
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
            if requestCount == 0 && configuration.acceptsHTTP2Preface && Self.isHTTP2Preface(headBytes) {
                // "PRI * HTTP/2.0" is no HTTP/1.1 request line (its version is 2.0): kept out of the parse of every
                // request, it is looked for only when that parse failed, on a connection's first head.
                let leftover = Array(clientIn[(clientInStart - length)...])
                clientIn.removeAll()
                clientInStart = 0
                io.commands.append(.startHTTP2(leftover: leftover))
                return
            }
            let status = error.kind == .tooManyFields ? 431 : error.kind == .notImplemented ? 501 : 400
            answer(status, error.description, &io, keepAlive: false)
            return
        }
        startExchange(request, framing: framing, &io)
        headStorage.keep(request.head)
    }

    mutating func startExchange(_ request: RequestHead, framing: BodyFraming, _ io: inout ConnectionIO) {
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
            host: addressed.host, port: addressed.port, target: route.target, status: nil,
            protocols: clientSpeaksHTTP2 ? .clientHTTP2 : [])
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
    mutating func intercept(_ origin: Origin, _ io: inout ConnectionIO) {
        io.toClient.append(contentsOf: Self.connectionEstablished)
        let leftover = Array(clientIn[clientInStart...])
        clientIn.removeAll()
        clientInStart = 0
        interceptedOrigin = origin
        state = .idle
        io.commands.append(.startTLS(host: origin.host, leftover: leftover))
    }

    /// The head of HTTP/2's connection preface (RFC 9113 §3.4): `PRI * HTTP/2.0`, an empty line (then `SM` and
    /// another empty line, which the HTTP/2 session checks).
    static func isHTTP2Preface(_ head: [UInt8]) -> Bool { head.elementsEqual("PRI * HTTP/2.0\r\n\r\n".utf8) }

    static let connectionEstablished = Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8)

    mutating func forwardRequestBody(_ io: inout ConnectionIO) {
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

}
