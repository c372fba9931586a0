import ExchangeFacts
import HTTPGrammar
import HTTPHeads

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

    /// The client half's next request, if a whole head has arrived: an exchange started, or the answer it gets.
    mutating func parseRequest(_ io: inout ConnectionIO) {
        guard let event = client.nextRequest(headStorage, firstHead: requestCount == 0) else { return }
        switch consume event {
        case .request(let request, let framing):
            startExchange(request, framing: framing, &io)
            headStorage.keep(request.head)
        case .refused(let status, let reason, let read):
            answer(status, reason, &io, keepAlive: false, read: RequestEcho(scanning: read))
        case .http2Preface(let leftover):
            guard configuration.acceptsHTTP2Preface else {
                // An HTTP/2 client reads no HTTP/1.1 answer: it is told in its own protocol, then the connection
                // closes.
                io.toClient.append(contentsOf: ProxyAnswer.http2Refused("HTTP/2 is off on this listener (--http2 off)"))
                io.commands.append(.refusedHTTP2Preface)
                close(&io)
                return
            }
            io.commands.append(.startHTTP2(leftover: leftover))
        }
    }

    mutating func startExchange(_ request: RequestHead, framing: BodyFraming, _ io: inout ConnectionIO) {
        requestCount += 1
        let route: RequestRoute
        do {
            route = try RequestRoute.route(
                request, configuration: configuration, interceptedOrigin: interceptedOrigin, listenerTLS: listenerTLS)
        } catch {
            if error.addressesTheProxy, let page = configuration.forwardProxyPage,
                request.method == "GET" || request.method == "HEAD",
                request.head.listElements("accept").contains(where: { $0.lowercased().hasPrefix("text/html") })
            {
                clientWriter.page(page, head: request.method == "HEAD", &io)
                reportAnswer(200, bodyBytes: request.method == "HEAD" ? 0 : page.utf8.count, request: request)
                close(&io)
                return
            }
            answer(error.status, error.reason, &io, keepAlive: false, fields: error.fields, request: request)
            return
        }
        let origin = route.origin
        if route.isConnect && interceptedOrigin == nil && configuration.interceptionAvailable
            && hooks.shouldIntercept(host: origin.host, port: origin.port)
        {
            intercept(origin, &io)
            // The CONNECT got the proxy's own 200: an exchange of its own (its requests inside are others).
            reportAnswer(200, bodyBytes: 0, request: request)
            return
        }
        let connection = request.head.connectionOptions()
        let keepAlive = request.version.isHTTP1_0 ? connection.keepAlive : !connection.close
        let addressed = route.addressed
        // Made whole at once (a context changed after it is made is copied by the calls that take it).
        let context = ExchangeContext(
            requestID: nextRequestID(), clientAddress: clientAddress, method: request.method, scheme: route.scheme,
            host: addressed.host, port: addressed.port, target: route.target, status: nil,
            clientSide: clientWriter.clientProtocol,
            route: route.routeIndex.map { configuration.routes.facts[$0] })
        let wantsUpgrade = !route.isConnect && connection.upgrade && request.head.values(.upgrade).count == 1
        let secure = route.isConnect || route.upstreamTLS
        let via = configuration.upstreamProxies?.proxy(for: origin.host, secure: secure).map {
            UpstreamHop(proxy: $0, tunnel: secure)
        }
        var headBytes: [UInt8] = []
        swap(&headBytes, &spareRequestHead)
        var writer = RequestWriter()
        if !route.isConnect {
            var out = HeadRewrite.request(
                request, route: route, connection: connection, framing: framing, wantsUpgrade: wantsUpgrade, via: via,
                configuration: configuration, clientAddress: clientAddress, storage: headStorage.takeOutgoing())
            headStorage.stage(hooks).willForwardRequest(&out, context: context)
            if clientWriter.offersTypedUpstream
                || route.routeIndex.map({ configuration.routes.routes[$0].scheme == .h2c }) == true
            {
                // The upstream may take parts: whether it does, its connection says (``upstreamConnected``).
                let target =
                    route.routeIndex.map { configuration.routes.upstreamTarget($0, route.target) } ?? route.target
                writer = RequestWriter(keeping: out, target: Array(target.utf8))
            } else {
                headBytes.reserveCapacity(request.head.bytes.count + 64)
                out.serialize(into: &headBytes)
                headStorage.keep(out)
            }
        }
        client.body = BodyReader(route.isConnect ? .none : framing)
        exchange = Exchange(
            context: context, origin: origin, isConnect: route.isConnect, wantsUpgrade: wantsUpgrade,
            requestHeadBytes: headBytes, clientKeepAlive: keepAlive,
            response: ResponseReader(limits: configuration.parserLimits))
        exchange.via = via
        exchange.request = writer
        if route.isConnect { exchange.tunnelRequest = RequestEcho(scanning: request.head.bytes[...]) }
        (exchange.times.accepted, exchange.times.requestHead) = (acceptedAt, headStorage.now)
        clientWriter.start(request)
        if !client.trailers.isEmpty { client.trailers = FieldSection() }
        upstreamTLS = route.upstreamTLS
        if let index = route.routeIndex, route.named != nil {
            exchange.redirectRoute = UInt16(truncatingIfNeeded: index + 1)
        }
        swap(&exchange.response.input, &spareUpstreamIn)
        state = .connecting
        // A tunnel gets a connection of its own: an idle keep-alive connection to the same host and port is
        // never handed to a CONNECT.
        connect(origin, fresh: route.isConnect, via: via, &io)
    }

    /// RFC 9110 §9.3.6: a 2xx to the CONNECT, then the bytes that follow are TLS, which the shell decrypts; the
    /// requests inside go to `origin`.
    mutating func intercept(_ origin: Origin, _ io: inout ConnectionIO) {
        io.toClient.append(contentsOf: Self.connectionEstablished)
        let leftover = client.takeRest()
        interceptedOrigin = origin
        state = .idle
        io.commands.append(.startTLS(host: origin.host, leftover: leftover))
    }

    static let connectionEstablished = Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8)

    mutating func forwardRequestBody(_ io: inout ConnectionIO) {
        switch state {
        case .exchanging: break
        case .connecting: return  // the body waits in the client half until the upstream is there
        case .idle, .tunnel, .closed: return unexpected("a request body to forward", &io)
        }
        let before = io.toUpstream.count
        let read = exchange.request.body(from: &client, &io)
        exchange.requestBodyBytes += io.toUpstream.count - before
        switch read {
        case .nothing, .read: break
        case .invalid(let reason):
            // Nothing more of this request reaches the upstream; the client gets a 400 unless part of the
            // response is already out, when closing is the only honest signal.
            failExchange(status: 400, message: reason, &io)
        }
    }
}
