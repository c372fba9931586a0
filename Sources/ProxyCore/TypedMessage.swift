import HTTPGrammar
import HTTPHeads

/// A message head made field by field by a codec that reads no HTTP/1.1 text (HTTP/2's, from nghttp2's header
/// callbacks), for the machine to take as a received head: nothing is parsed. Its storage is the head's lines, the
/// form ``OutgoingHead`` forwards received fields from unchanged, so a field no one edits leaves for an HTTP/1.1
/// upstream as one copy, as a field received from an HTTP/1.1 client does.
///
/// The codec has checked what it appends (RFC 9113 §8.2.1: names lowercase tokens, values without CR, LF or NUL);
/// the builder writes it as given.
public struct HeadBuilder {
    private var bytes: [UInt8]
    private var fields: [HTTPHead.Field] = []
    private var known: UInt64 = 0
    private let startLine: Range<Int>

    /// A head whose start line is `line` (without its line end); `capacity`: the bytes its fields will take.
    public init(startLine line: [UInt8], capacity: Int) {
        bytes = []
        bytes.reserveCapacity(line.count + capacity + 4)
        bytes.append(contentsOf: line)
        startLine = 0..<bytes.count
        bytes += [0x0D, 0x0A]
    }

    /// The field `name: value`, after those appended before it.
    public mutating func append(name: [UInt8], value: [UInt8]) {
        name.withUnsafeBufferPointer { n in value.withUnsafeBufferPointer { append(name: n, value: $0) } }
    }

    /// The same, from bytes in place: the one implementation (concrete, so that a codec in another module calls it
    /// specialised rather than through generic witnesses).
    public mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let start = bytes.count
        bytes.append(contentsOf: name)
        let nameEnd = bytes.count
        bytes += [0x3A, 0x20]
        bytes.append(contentsOf: value)
        let valueEnd = bytes.count
        bytes += [0x0D, 0x0A]
        let kind = bytes.withUnsafeBufferPointer { KnownField.classify($0, start, nameEnd) }
        known |= kind.bit
        fields.append(
            HTTPHead.Field(line: start..<bytes.count, name: start..<nameEnd, value: nameEnd + 2..<valueEnd, known: kind)
        )
    }

    /// Bytes the fields take so far.
    public var count: Int { bytes.count }

    /// The head, ended.
    public consuming func head() -> HTTPHead {
        bytes += [0x0D, 0x0A]
        return HTTPHead(bytes: bytes, startLine: startLine, fields: fields, knownFields: known)
    }

    /// A request head: `method`, `target` (its range in the start line), received in `version` (the start line
    /// names it, for a person: `GET /x HTTP/2`; no codec reads it).
    public static func request(method: String, target: [UInt8], version: HTTPVersion, capacity: Int) -> Self {
        var line = Array(method.utf8)
        line.append(0x20)
        line.append(contentsOf: target)
        line.append(0x20)
        line.append(contentsOf: version.description.utf8)
        return HeadBuilder(startLine: line, capacity: capacity)
    }

    /// The request head made, with its target where ``request(method:target:version:capacity:)`` put it.
    public consuming func requestHead(method: String, version: HTTPVersion) -> RequestHead {
        let head = head()
        let targetStart = method.utf8.count + 1
        let targetEnd = head.startLine.upperBound - 1 - version.description.utf8.count
        return RequestHead(head: head, method: method, targetRange: targetStart..<targetEnd, version: version)
    }

    /// A response head's start line: `version status` (`HTTP/2 200`), for a person; the client's codec writes its
    /// own (an HTTP/1.1 client reads ``ResponseWriter/writeStatusLine(_:status:)``'s).
    public static func response(status: Int, version: HTTPVersion, capacity: Int) -> Self {
        HeadBuilder(startLine: Array("\(version) \(status)".utf8), capacity: capacity)
    }
}

extension ResponseHead {
    /// A response head made by a codec (``HeadBuilder``), received in `version`.
    public init(status: Int, head: HTTPHead, version: HTTPVersion) {
        self.init(head: head, version: version, status: status)
    }
}

/// What goes to an upstream whose codec reads typed messages (an HTTP/2 stream of a shared connection): the request's
/// head and its end, in ``ConnectionIO/toUpstreamParts``. The body's payload, without framing, is in
/// ``ConnectionIO/toUpstream``: it follows the head and comes before the end.
public enum RequestPart: Sendable {
    /// The head as the hooks left it, with its method and its target in origin form (HTTP/2's `:method`, `:path`;
    /// `:authority` is its Host field).
    case head(method: String, target: [UInt8], OutgoingHead)
    /// The request is whole: its trailers (maybe none).
    case end(trailers: FieldSection)
}

/// What goes to a client that reads typed messages rather than HTTP/1.1 bytes (an HTTP/2 stream): the heads of the
/// response and its end, in ``ConnectionIO/toClientParts``. The body's payload, without framing, is in
/// ``ConnectionIO/toClient``: it follows the final head and comes before the end.
public enum ResponsePart: Sendable {
    /// A response head as the hooks left it: interim (1xx) or final.
    case head(status: Int, OutgoingHead)
    /// A response of the proxy's own, whole (head and body): an answer, or the forward proxy's page.
    case own(status: Int, fields: [ProxyAnswer.Field], body: [UInt8])
    /// The response is whole: its trailers (maybe none).
    case end(trailers: FieldSection)
}

extension OutgoingHead {
    /// Each field as it goes out, in order, its name and value in place for the duration of `body`: what a codec
    /// that writes fields rather than lines (HTTP/2's) reads.
    public func forEachField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, KnownField) -> Void) {
        source.bytes.withUnsafeBufferPointer { bytes in
            withEditedBytes { edited in
                for line in lines {
                    switch line {
                    case .original(let i):
                        let field = source.fields[i]
                        body(
                            UnsafeBufferPointer(rebasing: bytes[field.name]),
                            UnsafeBufferPointer(rebasing: bytes[field.value]), field.known)
                    case .written(let line, let n, let known):
                        body(
                            UnsafeBufferPointer(rebasing: edited[line.lowerBound..<line.lowerBound + n]),
                            UnsafeBufferPointer(rebasing: edited[line.lowerBound + n + 2..<line.upperBound - 2]), known)
                    case .edited(let i, let line):
                        let field = source.fields[i]
                        body(
                            UnsafeBufferPointer(rebasing: bytes[field.name]),
                            UnsafeBufferPointer(rebasing: edited[editedValue(i, line)]), field.known)
                    }
                }
            }
        }
    }
}

extension ProxyAnswer {
    /// The answer's fields, without `Connection` (a client that reads typed messages has its own way of ending a
    /// stream; the HTTP/1.1 bytes add it, ``bytes``).
    public var typedFields: [Field] {
        var out = [Field("Content-Type", "text/plain; charset=utf-8"), Field("Content-Length", String(body.count))]
        out += fields
        if let via { out.append(Field("Via", "1.1 \(via)")) }
        return out
    }

    /// The body: the reason and LF.
    public var body: [UInt8] { Array((reason + "\n").utf8) }
}

extension BodyFraming {
    /// How a typed client's request body is delimited (HTTP/2: RFC 9113 §8.1, §8.1.1): by its declared
    /// `content-length` (which nghttp2 holds the DATA to), not at all when the request ended with its head, else by
    /// the end of the stream (``untilClose``).
    public static func forTypedRequest(_ head: HTTPHead, ended: Bool) throws(HTTPParseError) -> BodyFraming {
        if let length = try contentLength(head) { return .contentLength(length) }
        return ended ? .none : .untilClose
    }
}
