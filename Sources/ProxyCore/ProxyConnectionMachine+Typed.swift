import HTTPGrammar

/// A client whose codec reads its own protocol and hands the machine typed messages (an HTTP/2 stream,
/// ``clientSpeaksHTTP2``): one request, its head made without parsing (``HeadBuilder``), its body's payload and its
/// end with any trailers; the response goes back typed too (``ConnectionIO/toClientParts``, the payload in
/// ``ConnectionIO/toClient``). The exchange between is the one an HTTP/1.1 client's request has: the same routing,
/// hooks, upstreams and answers.
extension ProxyConnectionMachine {
    /// The request's head and how its body is delimited: `.none` (it ended with its head), `.contentLength(n)`
    /// (declared), or `.untilClose` (until the client ends the stream; it goes to an HTTP/1.1 upstream chunked).
    public mutating func clientRequest(_ request: RequestHead, framing: BodyFraming, _ io: inout ConnectionIO) {
        guard case .idle = state, requestCount == 0 else { return unexpected("a second request on a stream", &io) }
        startExchange(request, framing: framing, &io)
    }

    /// Payload of the request's body.
    public mutating func clientBody(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        switch state {
        case .connecting, .exchanging:
            client.append(bytes)
            forwardRequestBody(&io)
        // Answered already (a refusal, a response before the whole request): nothing takes the rest.
        case .idle, .tunnel, .closed: return
        }
    }

    /// The request ended; `trailers`: its trailer field lines (`name: value` CRLF each), maybe empty.
    public mutating func clientEnded(trailers: [UInt8], _ io: inout ConnectionIO) {
        client.streamEnded = true
        client.trailers = trailers
        if case .exchanging = state { forwardRequestBody(&io) }
    }
}
