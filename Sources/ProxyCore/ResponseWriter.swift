import ExchangeFacts
import HTTPGrammar
import HTTPHeads

/// The writing half of the client's codec: the machine hands it a response as parts (interim heads, the final head,
/// body bytes, the end with its trailers; or an answer of the proxy's own) and it writes them in the client's
/// protocol. Everything about framing towards the client is decided here: HTTP/1.1's chunked coding, its last chunk
/// and trailers, a close-delimited body, `Connection`; or, for a client whose own codec frames messages (an HTTP/2
/// stream's session, ``Form/parts``), typed parts in ``ConnectionIO/toClientParts`` with the payload in
/// ``ConnectionIO/toClient``. The machine asks it what it can do (``carriesOneExchange``,
/// ``offersTypedUpstream``), never which protocol the client speaks.
///
/// A body the upstream's reader hands over framed the way this writer would frame it goes as it came: an
/// HTTP/1.1 client reads the upstream's chunked or length-delimited bytes byte for byte (the relay), and the
/// writer frames only what differs (a typed upstream's payload, a chunked body for an HTTP/1.0 client).
struct ResponseWriter {
    /// How the client reads what the proxy sends.
    enum Form {
        /// HTTP/1.0 or HTTP/1.1 bytes (RFC 9112).
        case http1
        /// Typed parts, which the client's codec frames itself (HTTP/2's HEADERS and DATA, RFC 9113 §8.1).
        case parts
    }

    /// The protocol the client speaks (for the exchange's context: the log and the inspector name it).
    let clientProtocol: HTTPProtocol
    var form: Form {
        @inline(__always) get { clientProtocol == .http1 ? .http1 : .parts }
    }
    /// The version of the client's request in flight (HTTP/1.0 reads neither interim responses nor chunks).
    private var version = HTTPVersion.http1_1
    /// The client's request said `TE: trailers` (RFC 9110 §10.1.4): trailers may reach it in a chunked body.
    private var acceptsTrailers = false
    /// The response's chunked framing is taken off (RFC 9112 §7.1.3): for an HTTP/1.0 client, or for parts.
    private(set) var dechunks = false
    /// A typed upstream's body goes chunked (RFC 9112 §7.1): one of undeclared length, and one of declared length
    /// when the client accepts trailers, which may follow it (RFC 9113 §8.1).
    private var rechunks = false
    /// The response's trailers, for its end: read from a chunked body that is dechunked, or handed over by a typed
    /// upstream (``setTrailers(_:)``).
    private var trailers = FieldSection()

    init(for client: HTTPProtocol) { clientProtocol = client }

    /// Each exchange on the client's connection is a response to one request; a typed client's stream carries
    /// one exchange, after which it ends.
    var carriesOneExchange: Bool { form == .parts }

    /// Whether the exchange may go to an upstream as parts (offered HTTP/2 by ALPN): a client whose codec reads
    /// typed messages has no bytes of its own to keep, where an HTTP/1.1 client's request goes to an HTTP/1.1
    /// upstream as it came.
    var offersTypedUpstream: Bool { form == .parts }

    /// A new exchange, for `request`.
    @inline(__always)
    mutating func start(_ request: RequestHead) {
        version = request.version
        acceptsTrailers = request.head.has(.te) && request.head.listElements(.te).contains("trailers")
        dechunks = false
        rechunks = false
        if !trailers.isEmpty { trailers = FieldSection() }
    }

    /// An interim response (100 Continue, 103 Early Hints; RFC 9110 §15.2), as parsed (line ends normalised): an
    /// HTTP/1.0 client reads none.
    mutating func interim(_ response: ResponseHead, _ io: inout ConnectionIO) {
        switch form {
        case .parts: io.toClientParts.append(.head(status: response.status, OutgoingHead(response.head)))
        case .http1:
            guard !version.isHTTP1_0 else { return }
            if response.version.major == 1 {
                io.toClient.append(contentsOf: response.head.bytes)
            } else {
                var out = OutgoingHead(response.head)
                Self.writeStatusLine(&out, status: response.status)
                out.serialize(into: &io.toClient)
            }
        }
    }

    /// The final response's body arrives in `framing`, ending with its upstream's stream when `upstreamEndsTyped`
    /// (a typed upstream: trailers may follow even a declared length). Decides how it is framed towards the
    /// client; true when that framing needs the client's connection to close after it (a close-delimited body,
    /// RFC 9112 §6.3 rule 8), or the client's codec carries one exchange.
    @inline(__always)
    mutating func plan(_ framing: BodyFraming, upstreamEndsTyped: Bool) -> Bool {
        switch form {
        case .parts:
            dechunks = framing == .chunked
            return true
        case .http1:
            dechunks = framing == .chunked && version.isHTTP1_0
            var declared = false
            if case .contentLength = framing { declared = true }
            rechunks =
                upstreamEndsTyped && !version.isHTTP1_0 && (framing == .untilClose || (declared && acceptsTrailers))
            return (framing == .untilClose && !rechunks) || dechunks
        }
    }

    /// What the final head's `Connection` says to the client (RFC 9112 §9.3, §9.6), `closing` when the
    /// connection closes after this response. A typed client's codec has its own way of ending a stream.
    func connectionField(closing: Bool) -> HeadRewrite.ClientConnection {
        switch form {
        case .parts: .persistent
        case .http1: closing ? .close : version.isHTTP1_0 ? .keepAlive : .persistent
        }
    }

    /// The final head of `response` in the client's protocol: an HTTP/1.1 status line for a head another codec
    /// built (RFC 9112 §4), and the framing fields for what ``plan(_:upstreamEndsTyped:)`` decided (a body that goes
    /// chunked says so, and has no length: RFC 9112 §6.1).
    @inline(__always)
    func frame(_ out: inout OutgoingHead, of response: ResponseHead) {
        guard form == .http1 else { return }
        if response.version.major != 1 { Self.writeStatusLine(&out, status: response.status) }
        guard rechunks else { return }
        out.removeAll(.contentLength)
        out.append(name: "Transfer-Encoding", value: HeadRewrite.chunkedToken, known: .transferEncoding)
    }

    /// `HTTP/1.1 status reason` as `out`'s start line: a head another protocol's codec built has none of its own.
    static func writeStatusLine(_ out: inout OutgoingHead, status: Int) {
        let line = Array("HTTP/1.1 \(status) \(ProxyAnswer.reasonPhrase(status))".utf8)
        line.withUnsafeBufferPointer { out.replaceStartLine($0) }
    }

    /// A head the hooks have seen: to the client.
    @inline(__always)
    func head(_ out: OutgoingHead, status: Int, _ io: inout ConnectionIO) {
        switch form {
        case .parts: io.toClientParts.append(.head(status: status, out))
        case .http1: out.serialize(into: &io.toClient)
        }
    }

    /// Body bytes from the upstream's reader, written in the client's framing: as they came where that is the
    /// client's too (the relay), without the chunked framing (its trailers kept for the end), or as one chunk of a
    /// typed upstream's payload.
    @inline(__always)
    mutating func body(
        _ bytes: ArraySlice<UInt8>, from reader: inout ResponseReader, _ io: inout ConnectionIO
    ) -> ResponseReader.BodyEvent {
        if rechunks {
            // The typed reader takes all of it (nghttp2 refuses DATA past a declared length).
            return ChunkedEncoder.writeChunk(size: bytes.count, into: &io.toClient) {
                reader.readBody(bytes, dechunk: false, into: &$0)
            }
        }
        if dechunks && form == .parts {
            return withUnsafeMutablePointer(to: &trailers) {
                reader.readBody(bytes, dechunk: true, trailers: $0, into: &io.toClient)
            }
        }
        return reader.readBody(bytes, dechunk: dechunks, into: &io.toClient)
    }

    /// A typed upstream's trailers, for the response's end.
    mutating func setTrailers(_ fields: FieldSection) { trailers = fields }

    /// The response is whole: HTTP/1.1's last chunk with the trailers when this writer chunked the body
    /// (RFC 9112 §7.1.2; a relayed chunked body had its own), or the end part.
    @inline(__always)
    mutating func end(_ io: inout ConnectionIO) {
        switch form {
        case .parts: io.toClientParts.append(.end(trailers: trailers))
        case .http1: if rechunks { ChunkedEncoder.writeLastChunk(trailers: trailers, into: &io.toClient) }
        }
    }

    /// A response of the proxy's own, whole.
    func answer(_ answer: ProxyAnswer, _ io: inout ConnectionIO) {
        switch form {
        case .parts:
            io.toClientParts.append(.own(status: answer.status, fields: answer.typedFields, body: answer.body))
        case .http1: io.toClient.append(contentsOf: answer.bytes)
        }
    }

    /// The forward proxy's page (`head`: to a HEAD request, without its body).
    func page(_ page: String, head: Bool, _ io: inout ConnectionIO) {
        switch form {
        case .parts:
            let body = head ? [] : Array(page.utf8)
            io.toClientParts.append(
                .own(status: 200, fields: ProxyAnswer.pageFields(length: page.utf8.count), body: body))
        case .http1: io.toClient.append(contentsOf: ProxyAnswer.page(page, head: head))
        }
    }
}
