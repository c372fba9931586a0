import ExchangeFacts
import HTTPGrammar
import HTTPHeads

/// Responses: heads parsed and rewritten, bodies framed, and how an exchange ends (finished, failed, answered by
/// the proxy itself).
extension ProxyConnectionMachine {

    /// The upstream half's heads, as they arrive: interim ones relayed, then the final one (or a `101`), or the
    /// exchange failed with a `502` naming what was wrong.
    mutating func processResponseHead(_ io: inout ConnectionIO) {
        guard case .exchanging = state else { return unexpected("a response head", &io) }
        while let event = exchange.response.nextResponse(headStorage, requestMethod: exchange.context.method) {
            switch consume event {
            case .response(let response, let framing):
                if !forward(response, framing, &io) { return }
            case .headTooLarge:
                return failResponse("upstream \(exchange.origin) sent a response head that is too large", &io)
            case .invalid(let reason):
                return failResponse("upstream \(exchange.origin) sent an invalid response: \(reason)", &io)
            }
        }
    }

    /// A response head from the upstream half: refused, relayed as an interim response (true: the final one is
    /// still to come), or forwarded as the final response or a `101`.
    @inline(__always)
    mutating func forward(_ response: ResponseHead, _ framing: BodyFraming, _ io: inout ConnectionIO) -> Bool {
        defer { headStorage.keep(response.head) }
        exchange.context.status = response.status
        if let refusal = refusal(of: response) {
            failResponse(refusal, &io)
            return false
        }
        if response.status == 101 {
            switchProtocols(response, &io)
        } else if (100..<200).contains(response.status) {
            // Interim responses (100 Continue, 103 Early Hints); the final response follows (RFC 9110 §15.2).
            clientWriter.interim(response, &io)
            return true
        } else {
            forwardFinalHead(response, framing, &io)
        }
        return false
    }

    /// Why a well-formed response head is not relayed (the exchange fails with a `502` saying so); nil when it is.
    @inline(__always)
    func refusal(of response: ResponseHead) -> String? {
        if response.status == 407, let via = exchange.via {
            // The upstream proxy wants credentials this proxy has (the client's were for this one): relaying its
            // challenge would have the client answer it to the wrong proxy.
            let hint =
                via.proxy.authorization == nil
                ? "give them in the URL: --upstream-proxy http://user:password@\(via.proxy)"
                : "the user and password in --upstream-proxy were refused"
            return "upstream proxy \(via.proxy) asks for credentials (407); \(hint)"
        }
        if response.status == 101 && !exchange.wantsUpgrade {
            // RFC 9110 §15.2.2: a server switches protocols only when asked; relaying this would have the
            // client read what follows as another protocol while the proxy reads it as HTTP.
            return "upstream \(exchange.origin) switched protocols without being asked to"
        }
        return nil
    }

    /// A `101` to an upgrade the client asked for: the head goes on, then both ways are a tunnel.
    mutating func switchProtocols(_ response: ResponseHead, _ io: inout ConnectionIO) {
        var out = HeadRewrite.switchingProtocols(
            response, configuration: configuration, storage: headStorage.takeOutgoing())
        forwardResponseHead(&out, &io)
        headStorage.keep(out)
        io.toClient.append(contentsOf: exchange.response.input)
        exchange.response.input = []
        startTunnel(&io)
    }

    /// From here on both ways are a byte tunnel (CONNECT, or a `101`): what the client sent after its request
    /// head belongs to it.
    mutating func startTunnel(_ io: inout ConnectionIO) {
        state = .tunnel(clientDone: false, upstreamDone: false)
        if exchange.context.status == nil { exchange.context.status = 200 }  // a CONNECT's 2xx (RFC 9110 §9.3.6)
        // Its end is told when it closes (``close(_:)``), with the bytes that went each way.
        (exchange.bodyBytes, exchange.requestBodyBytes) = (0, 0)
        let before = io.toUpstream.count
        client.moveRest(into: &io.toUpstream)
        exchange.requestBodyBytes += io.toUpstream.count - before
    }

    /// A final response: whether the upstream connection stays usable and the client's closes after it, the
    /// head rewritten and sent, then its body.
    @inline(__always)
    mutating func forwardFinalHead(
        _ response: ResponseHead, _ framing: BodyFraming, _ io: inout ConnectionIO
    ) {
        let connection = response.head.connectionOptions()
        if connection.close || response.version.isHTTP1_0 { exchange.upstreamReusable = false }
        if framing == .chunked && response.head.has(.contentLength) {
            // Both framing fields: Transfer-Encoding wins (RFC 9112 §6.3 rule 3), but a server that sends
            // both is not trusted with the next exchange on this connection.
            exchange.upstreamReusable = false
        }
        // How the client's codec frames the body, and whether that needs its connection closed after it.
        let framingCloses = clientWriter.plan(framing, upstreamEndsTyped: exchange.response.endsTyped)
        // A client that closed its sending side after pipelined requests gets each of them answered (RFC 9112 §9.6):
        // the connection closes after the response to the last one received.
        exchange.closeClientAfter =
            !exchange.clientKeepAlive || closeAfterExchange || (client.eof && bufferedClientBytes == 0) || framingCloses
        var out = HeadRewrite.finalResponse(
            response, connection: connection, framing: framing, dechunk: clientWriter.dechunks,
            client: clientWriter.connectionField(closing: exchange.closeClientAfter), configuration: configuration,
            storage: headStorage.takeOutgoing())
        clientWriter.frame(&out, of: response)
        if exchange.redirectRoute != 0 {
            HeadRewrite.Redirects.rewrite(
                &out, route: configuration.routes.routes[Int(exchange.redirectRoute) - 1], client: exchange.context)
        }
        forwardResponseHead(&out, &io)
        headStorage.keep(out)
        var rest: [UInt8] = []
        exchange.response.startBody(framing, rest: &rest)
        if !rest.isEmpty {
            forwardResponseBody(rest[...], &io)
        } else if exchange.response.bodyComplete && !exchange.response.endsTyped {
            finishExchange(&io)
        }
        Self.keep(&rest, as: &spareUpstreamIn)
    }

    /// The hooks (the rules) see the head, then it is written to the client and they see the bytes sent (none,
    /// when the client's codec writes the head's fields itself).
    @inline(__always)
    mutating func forwardResponseHead(_ out: inout OutgoingHead, _ io: inout ConnectionIO) {
        let stage = headStorage.stage(hooks)
        exchange.times.responseHead = headStorage.now
        stage.willForwardResponse(&out, context: exchange.context)
        let headStart = io.toClient.count
        clientWriter.head(out, status: exchange.context.status ?? 0, &io)
        stage.didForwardResponse(out, bytes: io.toClient[headStart...], context: exchange.context)
    }

    /// Body bytes from the upstream half, relayed in the response's framing.
    mutating func forwardResponseBody(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        guard case .exchanging = state, exchange.response.readingBody else {
            return unexpected("response body bytes", &io)
        }
        let before = io.toClient.count
        let read = clientWriter.body(bytes, from: &exchange.response, &io)
        exchange.bodyBytes += io.toClient.count - before
        switch read {
        case .partial: break
        // A typed upstream's response ends with its stream (trailers may follow a declared length).
        case .complete where exchange.response.endsTyped: break
        case .complete(let trailing):
            if trailing { exchange.upstreamReusable = false }  // bytes after the body: the upstream is confused
            finishExchange(&io)
        case .invalid: abortExchange(&io, cut: "upstream \(exchange.origin)'s response body broke its framing")
        }
    }

    /// Moves `buffer`'s storage, emptied, into `spare` when that has less room (and it is not one a large message
    /// grew: those are let go).
    public static func keep(_ buffer: inout [UInt8], as spare: inout [UInt8]) {
        guard buffer.capacity > spare.capacity && buffer.capacity <= 16384 else { return }
        buffer.removeAll(keepingCapacity: true)
        swap(&buffer, &spare)
    }

    mutating func finishExchange(_ io: inout ConnectionIO) {
        guard case .exchanging = state else { return unexpected("the end of an exchange", &io) }
        // The response is whole, whatever becomes of the request.
        let before = io.toClient.count
        clientWriter.end(&io)
        exchange.bodyBytes += io.toClient.count - before
        reportEnd(.relayed)
        if !client.body.isComplete {
            // The response came before the whole request body: the rest cannot be sent any more.
            abortExchange(&io, cut: "the response came before the whole request body")
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
        if client.eof, case .idle = state { close(&io) }
    }

    /// The upstream failed mid-exchange: an answer of our own if nothing of the response went out yet, else
    /// closing the client connection, the only honest signal once part of a response is out.
    mutating func failExchange(status: Int, message: String, _ io: inout ConnectionIO) {
        release(reusable: false, &io)
        if !exchange.response.readingBody {
            // Nothing of the final response has gone to the client (at most an interim 1xx): it gets the answer,
            // whether the upstream failed before its first byte or partway through its head; a reset there is
            // the same fault as an end of stream there (``upstreamClosed(_:)``), and answered the same way.
            let partial = exchange.response.bytesSeen ? " before its response head ended" : ""
            answer(status, message + partial, &io, keepAlive: false)
        } else {
            reportEnd(.cut, cut: message)
            close(&io)
        }
    }

    mutating func failResponse(_ reason: String, _ io: inout ConnectionIO) {
        release(reusable: false, &io)
        answer(502, reason, &io, keepAlive: false)
    }

    /// The upstream connection is done with and the client's closes after what is queued for it. `cut`: why (which
    /// side ended it, and how), for whoever watches (``ExchangeEnd/cut``).
    mutating func abortExchange(_ io: inout ConnectionIO, cut: String) {
        release(reusable: false, &io)
        reportEnd(.cut, cut: cut)
        close(&io)
    }

    /// An answer of the proxy's own ended the exchange in flight, or a request refused before it became one (which
    /// gets a context of its own: its method and target when they were read, else `-`).
    /// `request` (a head read whole) or `read` (what arrived of one that could not be read): what of it the end
    /// carries (``ExchangeEnd/request``).
    mutating func reportAnswer(_ status: Int, bodyBytes: Int, request: RequestHead?, read: RequestEcho? = nil) {
        switch state {
        case .connecting, .exchanging:
            exchange.context.status = status
            exchange.bodyBytes = bodyBytes
            // (Its request was told to the stage as it went upstream: ``ExchangeStage/willForwardRequest(_:_:)``.)
            reportEnd(.answered)
        case .idle, .tunnel, .closed:
            let echo = read ?? request.map { RequestEcho(scanning: $0.head.bytes[...]) }
            let context = ExchangeContext(
                requestID: nextRequestID(), clientAddress: clientAddress,
                method: request?.method ?? echo?.method ?? "-",
                scheme: listenerTLS || interceptedOrigin != nil ? "https" : "http", host: "", port: 0,
                target: request?.target ?? echo?.target ?? "-", status: status,
                clientSide: clientWriter.clientProtocol, route: nil)
            var times = ExchangeTimes()
            (times.accepted, times.requestHead, times.ended) = (acceptedAt, headStorage.now, headStorage.now)
            headStorage.stage(hooks).exchangeEnded(
                context, ExchangeEnd(ending: .answered, bodyBytes: bodyBytes, times: times, request: echo))
        }
    }

    /// Tells the stage how the exchange in flight ended, once (``ExchangeStage/exchangeEnded(_:_:)``).
    @inline(__always)
    mutating func reportEnd(_ ending: ExchangeEnding, cut: String? = nil, request: RequestEcho? = nil) {
        var (ending, cut, request) = (ending, cut, request)
        switch state {
        case .connecting, .exchanging: break
        case .tunnel:
            // A tunnel ends as a tunnel however it closes, with what went through it; a CONNECT's request went
            // nowhere but here.
            (ending, cut) = (.tunnel, nil)
            request = exchange.tunnelRequest
        case .idle, .closed: return
        }
        guard !exchange.reported else { return }
        exchange.reported = true
        exchange.times.ended = headStorage.now
        headStorage.stage(hooks).exchangeEnded(
            exchange.context,
            ExchangeEnd(
                ending: ending, bodyBytes: exchange.bodyBytes, requestBodyBytes: exchange.requestBodyBytes,
                times: exchange.times, cut: cut, request: request))
    }

    /// Nothing more will be read or written on this connection after what is queued for the client.
    mutating func close(_ io: inout ConnectionIO) {
        if case .tunnel = state { reportEnd(.tunnel) }
        state = .closed
        io.commands.append(.closeClient)
    }

    /// A response of the proxy's own (``ProxyAnswer``); the connection stays open after it when `keepAlive`
    /// and the client has not closed its side. `request`: one refused before it became an exchange (nil: the
    /// exchange in flight's, or none read).
    mutating func answer(
        _ status: Int, _ reason: String, _ io: inout ConnectionIO, keepAlive: Bool, fields: [ProxyAnswer.Field] = [],
        request: RequestHead? = nil, read: RequestEcho? = nil
    ) {
        let keep = keepAlive && !client.eof && !clientWriter.carriesOneExchange
        let via = configuration.addVia ? configuration.viaPseudonym : nil
        let answer = ProxyAnswer(status: status, reason: reason, fields: fields, via: via, close: !keep)
        clientWriter.answer(answer, &io)
        reportAnswer(status, bodyBytes: answer.body.count, request: request, read: read)
        if keep {
            exchange = Exchange()  // as at the end of an exchange: nothing of it stays with an idle connection
            state = .idle
            if bufferedClientBytes > 0 { parseRequest(&io) }
        } else {
            close(&io)
        }
    }

}
