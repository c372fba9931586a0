import ExchangeFacts
import HTTPGrammar
import HTTPHeads

/// The writing half of the upstream's codec: the request as the hooks left it, written in the upstream's protocol
/// once its connection says which (``connected(_:method:body:headBytes:_:)``). HTTP/1.1's request line, its chunked
/// coding for a body of undeclared length and that body's last chunk with the trailers are written here; an
/// upstream whose codec frames messages itself (an HTTP/2 stream of a shared connection, ``Form/parts``) gets
/// the head and the end as parts in ``ConnectionIO/toUpstreamParts``, the payload in ``ConnectionIO/toUpstream``.
///
/// A body the client's reader holds framed the way this writer would frame it goes as it came: an HTTP/1.1
/// client's chunked or length-delimited bytes reach an HTTP/1.1 upstream byte for byte (the relay).
struct RequestWriter {
    /// How the upstream reads the request.
    enum Form {
        /// HTTP/1.1 bytes (RFC 9112).
        case http1
        /// Typed parts, which the upstream's codec frames itself.
        case parts
    }

    private(set) var form = Form.http1
    /// The head kept as the hooks left it until the upstream's codec is known (nil when it can only be HTTP/1.1:
    /// its bytes are written at once); one reference, so that an HTTP/1.1 exchange copies and frees nothing more.
    private var kept: KeptHead? = nil
    /// The request's end has gone to a typed upstream.
    private var endSent = false

    /// A request whose upstream reads HTTP/1.1 whatever connection it gets: its head's bytes are written now.
    init() {}

    /// A request whose upstream may take parts: `head` is kept until it is connected; `target`, its target in
    /// origin form.
    init(keeping head: OutgoingHead, target: [UInt8]) {
        kept = KeptHead(head: head, target: target)
    }

    /// Whether the upstream connection may be one that takes parts.
    var mayTakeParts: Bool { kept != nil }

    /// The upstream is connected and speaks `upstream`: the head goes, in its form. `body`: how the client's reader
    /// delimits the request's body. `headBytes`: the HTTP/1.1 head, written already or written here (and kept for a
    /// retry on a fresh connection).
    mutating func connected(
        _ upstream: HTTPProtocol, method: String, body: BodyFraming, headBytes: inout [UInt8],
        _ io: inout ConnectionIO
    ) {
        endSent = false
        guard let kept else {
            form = .http1
            io.toUpstream.append(contentsOf: headBytes)
            return
        }
        if upstream != .http1 {
            form = .parts
            io.toUpstreamParts.append(.head(method: method, target: kept.target, kept.head))
            return
        }
        form = .http1
        if headBytes.isEmpty {
            if body == .untilClose {
                // A typed client's body of undeclared length (ended by its stream's end) goes chunked (RFC 9112
                // §7.1); HTTP/2 has no Transfer-Encoding of its own to keep (RFC 9113 §8.2.2).
                var out = kept.head
                out.append(name: "Transfer-Encoding", value: HeadRewrite.chunkedToken, known: .transferEncoding)
                out.serialize(into: &headBytes)
            } else {
                kept.head.serialize(into: &headBytes)
            }
        }
        io.toUpstream.append(contentsOf: headBytes)
    }

    /// What has arrived of the request body, from the client's reader into the upstream's framing: the relay when
    /// the reader's framing is this writer's, one chunk per piece of a body of undeclared length and its last
    /// chunk with the trailers, or the payload and then the end with the trailers for parts. Trailers beside a
    /// declared length have no place in HTTP/1.1 and are not sent (RFC 9110 §6.5.1 lets a recipient discard
    /// them).
    @inline(__always)
    mutating func body(from reader: inout RequestReader, _ io: inout ConnectionIO) -> RequestReader.BodyEvent {
        switch form {
        case .http1:
            guard reader.body.framing == .untilClose else { return reader.readBody(into: &io.toUpstream) }
            // All that is buffered is body (a typed client's input holds nothing else).
            let read = ChunkedEncoder.writeChunk(size: reader.buffered, into: &io.toUpstream) {
                reader.readBody(into: &$0)
            }
            if reader.ended && !endSent {
                endSent = true
                ChunkedEncoder.writeLastChunk(trailers: reader.trailers, into: &io.toUpstream)
            }
            return read
        case .parts:
            let read = reader.readBody(into: &io.toUpstream, payload: true)
            if reader.ended && !endSent {
                endSent = true
                io.toUpstreamParts.append(.end(trailers: reader.trailers))
            }
            return read
        }
    }
}

/// A request head kept until its upstream's codec is known (``RequestWriter/kept``), with its target in origin form.
final class KeptHead {
    let head: OutgoingHead
    let target: [UInt8]

    init(head: OutgoingHead, target: [UInt8]) {
        self.head = head
        self.target = target
    }
}
