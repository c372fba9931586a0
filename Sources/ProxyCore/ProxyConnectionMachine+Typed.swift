import HTTPGrammar
import HTTPHeads

/// A client whose codec reads its own protocol and hands the machine typed messages (an HTTP/2 stream: a machine
/// made with `client: .http2`): one request, its head made without parsing (``HeadBuilder``), its body's payload and its
/// end with any trailers; the response goes back typed too (``ConnectionIO/toClientParts``, the payload in
/// ``ConnectionIO/toClient``; ``ResponseWriter``). The exchange between is the one an HTTP/1.1 client's request has: the same routing,
/// hooks, upstreams and answers.
extension ProxyConnectionMachine {
    /// The request's head and how its body is delimited: `.none` (it ended with its head), `.contentLength(n)`
    /// (declared), or `.untilClose` (until the client ends the stream; it goes to an HTTP/1.1 upstream chunked).
    public mutating func clientRequest(_ request: RequestHead, framing: BodyFraming, _ io: inout ConnectionIO) {
        guard case .idle = state, requestCount == 0 else { return unexpected("a second request on a stream", &io) }
        client.endsTyped = true
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

    /// The request ended; `trailers`: its trailer fields, maybe none.
    public mutating func clientEnded(trailers: FieldSection, _ io: inout ConnectionIO) {
        client.streamEnded = true
        client.trailers = trailers
        if case .exchanging = state { forwardRequestBody(&io) }
    }

    // MARK: A typed upstream

    /// A response head from an upstream whose codec reads its own protocol (an HTTP/2 stream of a shared
    /// connection), made without parsing, and its framing (``BodyFraming/forResponse(_:status:requestMethod:version:)``:
    /// `.untilClose` is until the stream ends). The end comes as ``upstreamEnded(trailers:_:)`` whatever the
    /// framing: trailers may follow a body of declared length (RFC 9113 §8.1).
    public mutating func upstreamResponse(_ response: ResponseHead, framing: BodyFraming, _ io: inout ConnectionIO) {
        guard acceptsUpstreamEvent else { return }
        guard case .exchanging = state, !exchange.response.readingBody else {
            return unexpected("a typed response head", &io)
        }
        exchange.response.noteTypedHead()
        _ = forward(response, framing, &io)
    }

    /// Payload of the response's body.
    public mutating func upstreamBody(_ bytes: ArraySlice<UInt8>, _ io: inout ConnectionIO) {
        guard acceptsUpstreamEvent else { return }
        guard case .exchanging = state, exchange.response.readingBody else {
            return unexpected("typed response body bytes", &io)
        }
        forwardResponseBody(bytes, &io)
    }

    /// The response ended; `trailers`: its trailer fields, maybe none. A body shorter than its declared length
    /// is cut short: the client's connection closes (as for an HTTP/1.1 upstream's).
    public mutating func upstreamEnded(trailers: FieldSection, _ io: inout ConnectionIO) {
        guard acceptsUpstreamEvent else { return }
        guard case .exchanging = state, exchange.response.readingBody else {
            return unexpected("the end of a typed response", &io)
        }
        guard exchange.response.endOfStream() else {
            return abortExchange(
                &io, cut: "upstream \(exchange.origin) ended its stream before its response body ended")
        }
        clientWriter.setTrailers(trailers)
        finishExchange(&io)
    }
}
