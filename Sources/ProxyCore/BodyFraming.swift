import HTTPGrammar
import HTTPHeads

/// How a message body is delimited (RFC 9112 §6).
public enum BodyFraming: Sendable, Hashable {
    /// No body (HEAD responses, 1xx, 204, 304, requests without Content-Length or Transfer-Encoding).
    case none
    case contentLength(Int)
    /// Transfer-Encoding ending in chunked (RFC 9112 §7.1).
    case chunked
    /// Until the connection closes (responses only, RFC 9112 §6.3 rule 8).
    case untilClose

    /// RFC 9112 §6.3 for a request of HTTP `version`. Refused (they are how requests are smuggled, §11.2):
    /// Transfer-Encoding beside Content-Length, in an HTTP/1.0 request (§6.1), with a final coding other than
    /// chunked, with chunked twice, with an element that is not a token or no coding at all (`Transfer-Encoding: ,`);
    /// a bad or conflicting Content-Length. A coding the proxy does not know is `501` (§6.1).
    public static func forRequest(_ head: HTTPHead, version: HTTPVersion = .http1_1) throws(HTTPParseError)
        -> BodyFraming
    {
        if head.has(.transferEncoding) {
            guard !head.has(.contentLength) else {
                throw malformed("both Transfer-Encoding and Content-Length")
            }
            guard !version.isHTTP1_0 else { throw malformed("Transfer-Encoding in an HTTP/1.0 request") }
            let codings = try transferCodings(head)
            guard codings.last == .chunked else { throw malformed("Transfer-Encoding does not end in chunked") }
            guard codings.dropLast().allSatisfy({ $0 != .chunked }) else {
                throw malformed("chunked applied more than once")
            }
            if codings.contains(.other) {
                throw HTTPParseError(kind: .notImplemented, description: "unsupported transfer coding")
            }
            return .chunked
        }
        guard let length = try contentLength(head) else { return .none }
        return length == 0 ? .none : .contentLength(length)
    }

    /// RFC 9112 §6.3 for a response to `method` with `status`. Transfer-Encoding overrides Content-Length (the
    /// proxy then forwards no Content-Length); a final coding other than chunked is read until the connection
    /// closes. Refused: Transfer-Encoding in an HTTP/1.0 response (§6.1: its framing is faulty), chunked twice, an
    /// element that is not a token, a bad or conflicting Content-Length.
    public static func forResponse(
        _ head: HTTPHead, status: Int, requestMethod: String, version: HTTPVersion = .http1_1
    ) throws(HTTPParseError) -> BodyFraming {
        if requestMethod == "HEAD" || (100..<200).contains(status) || status == 204 || status == 304 { return .none }
        if head.has(.transferEncoding) {
            guard !version.isHTTP1_0 else { throw malformed("Transfer-Encoding in an HTTP/1.0 response") }
            let codings = try transferCodings(head)
            guard codings.count(where: { $0 == .chunked }) <= 1 else {
                throw malformed("chunked applied more than once")
            }
            // RFC 9112 §6.3 rule 4: chunked not last (`chunked, deflate`: the sender applied another coding after
            // it) means the body is read until the server closes the connection, and relayed so.
            return codings.last == .chunked ? .chunked : .untilClose
        }
        guard let length = try contentLength(head) else { return .untilClose }
        return length == 0 ? .none : .contentLength(length)
    }

    /// A transfer coding as far as framing cares.
    enum Coding: Equatable { case chunked, known, other }

    /// The codings of every Transfer-Encoding field, in order (RFC 9112 §6.1; empty list elements are ignored,
    /// RFC 9110 §5.6.1). Each element must be a token: a parameter, a quote or a stray control byte is a
    /// difference another recipient may read otherwise, and is refused.
    static func transferCodings(_ head: HTTPHead) throws(HTTPParseError) -> [Coding] {
        var codings: [Coding] = []
        try head.bytes.withUnsafeBufferPointer { (b) throws(HTTPParseError) in
            try head.forEachListElement(where: { $0.known == .transferEncoding }) {
                (element: Range<Int>) throws(HTTPParseError) in
                guard !element.isEmpty else { return }
                guard element.allSatisfy({ ByteClass.isTokenChar(b[$0]) }) else {
                    throw malformed("invalid Transfer-Encoding")
                }
                let (s, e) = (element.lowerBound, element.upperBound)
                if ByteClass.equalsLowercase(b, s, e, "chunked") {
                    codings.append(.chunked)
                } else if ByteClass.equalsLowercase(b, s, e, "gzip") || ByteClass.equalsLowercase(b, s, e, "deflate")
                    || ByteClass.equalsLowercase(b, s, e, "compress") || ByteClass.equalsLowercase(b, s, e, "x-gzip")
                    || ByteClass.equalsLowercase(b, s, e, "x-compress")
                {
                    codings.append(.known)
                } else {
                    codings.append(.other)
                }
            }
        }
        guard !codings.isEmpty else { throw malformed("Transfer-Encoding names no coding") }
        return codings
    }

    static func malformed(_ reason: String) -> HTTPParseError { HTTPParseError(kind: .malformed, description: reason) }

    /// Content-Length values must agree and be digits (RFC 9110 §8.6); `5, 5` is accepted as 5. Read from the
    /// head's bytes: elements between commas, optional whitespace around each.
    static func contentLength(_ head: HTTPHead) throws(HTTPParseError) -> Int? {
        guard head.has(.contentLength) else { return nil }
        var result: Int? = nil
        let b = head.bytes
        try head.forEachListElement(where: { $0.known == .contentLength }) {
            (element: Range<Int>) throws(HTTPParseError) in
            guard !element.isEmpty, element.count <= 18 else {
                throw HTTPParseError(kind: .malformed, description: "invalid Content-Length")
            }
            var n = 0
            for k in element {
                guard b[k] &- 0x30 < 10 else {
                    throw HTTPParseError(kind: .malformed, description: "invalid Content-Length")
                }
                n = n * 10 + Int(b[k] - 0x30)
            }
            if let r = result, r != n {
                throw HTTPParseError(kind: .malformed, description: "conflicting Content-Length values")
            }
            result = n
        }
        return result
    }
}

/// Finds where a body ends in a byte stream, without copying it. Feed bytes as they arrive; each call says
/// how many of them belong to the body. For chunked bodies it can also give the payload without framing
/// (for HTTP/1.0 clients), else the framing is forwarded as received, trailers included.
public struct BodyReader: Sendable {
    public private(set) var framing: BodyFraming
    private var remaining: Int
    private var chunked = ChunkedDecoder()
    public private(set) var isComplete: Bool

    public init(_ framing: BodyFraming) {
        self.framing = framing
        switch framing {
        case .none:
            remaining = 0
            isComplete = true
        case .contentLength(let n):
            remaining = n
            isComplete = n == 0
        case .chunked, .untilClose:
            remaining = 0
            isComplete = false
        }
    }

    /// Consumes body bytes from the front of `bytes`. Returns how many belong to the body; the rest belong
    /// to whatever follows. With `payload`, chunked data (without framing) is appended to it; with `trailers`, a
    /// chunked body's trailer section is read into fields, for a writer that sends them in its own form (HTTP/2's
    /// trailers, or a last chunk of its own) where the relay forwards them with the chunks. Passed in, not kept: the reader
    /// stays a plain value, copied without reference counting.
    public mutating func consume(
        _ bytes: ArraySlice<UInt8>, payload: UnsafeMutablePointer<[UInt8]>? = nil,
        trailers: UnsafeMutablePointer<FieldSection>? = nil
    ) throws(HTTPParseError) -> Int {
        if isComplete { return 0 }
        switch framing {
        case .none: return 0
        case .contentLength:
            let n = min(remaining, bytes.count)
            remaining -= n
            if remaining == 0 { isComplete = true }
            payload?.pointee.append(contentsOf: bytes.prefix(n))
            return n
        case .untilClose:
            payload?.pointee.append(contentsOf: bytes)
            return bytes.count
        case .chunked:
            let n = try chunked.consume(bytes, payload: payload, trailers: trailers)
            if chunked.isComplete { isComplete = true }
            return n
        }
    }

    /// The connection closed: a close-delimited body is complete; any other is truncated.
    public mutating func endOfStream() -> Bool {
        if framing == .untilClose { isComplete = true }
        return isComplete
    }
}

/// The chunked coding's framing written around a body the proxy frames itself (RFC 9112 §7.1): a typed peer's body
/// of undeclared length for an HTTP/1.1 one, and the trailers that end it.
enum ChunkedEncoder {
    /// One chunk of the `size` bytes `write` appends to `out` (a reader moving them there): its size line
    /// (hexadecimal, CRLF) before them, CRLF after. No bytes, no framing (an empty chunk would be the last): `write`
    /// is still called, and a reader may then find its body's end.
    @inline(__always)
    static func writeChunk<Read>(size: Int, into out: inout [UInt8], _ write: (inout [UInt8]) -> Read) -> Read {
        guard size > 0 else { return write(&out) }
        out.append(contentsOf: String(size, radix: 16).utf8)
        out += [0x0D, 0x0A]
        let read = write(&out)
        out += [0x0D, 0x0A]
        return read
    }

    /// The last chunk, the trailer section (RFC 9112 §7.1.2: field lines) and the CRLF that ends the body.
    static func writeLastChunk(trailers: FieldSection, into out: inout [UInt8]) {
        out += [0x30, 0x0D, 0x0A]
        trailers.writeLines(into: &out)
        out += [0x0D, 0x0A]
    }
}

/// The chunked transfer coding (RFC 9112 §7.1) as a state machine over bytes, strict about every line:
///
///     chunked-body   = *chunk last-chunk trailer-section CRLF
///     chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
///     chunk-size     = 1*HEXDIG
///     chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
///     chunk-ext-val  = token / quoted-string
///     trailer-section = *( field-line CRLF )
///
/// The proxy forwards chunked bodies as received, so a line another recipient could read differently (a bare
/// LF or CR, `0x5`, `5 xyz`, an unterminated quoted string, a size that overflows) is refused, never guessed
/// at (RFC 9112 §11.2). Leading zeros in a size are allowed; more than 15 significant hex digits are not.
public struct ChunkedDecoder: Sendable {
    enum State: Sendable {
        /// Reading chunk-size; `digits` counts the significant ones (leading zeros aside), `any` whether there
        /// was at least one digit.
        case size(value: Int, digits: Int, any: Bool)
        /// BWS after the size or an extension value, before `;`.
        case extensionSpace(value: Int)
        /// After `;`: BWS, then the first tchar of an extension name.
        case extensionNameStart(value: Int)
        case extensionName(value: Int)
        /// BWS after a name: `=` or `;` may follow.
        case extensionAfterName(value: Int)
        /// After `=`: BWS, then a token or a quoted string.
        case extensionValueStart(value: Int)
        case extensionToken(value: Int)
        case extensionQuoted(value: Int)
        case extensionQuotedPair(value: Int)
        /// After a closing quote.
        case extensionAfterQuoted(value: Int)
        /// Saw the CR that ends a chunk line.
        case sizeLineLF(value: Int)
        /// In chunk-data with this many bytes left.
        case data(Int)
        /// Expecting the CR, then the LF, after chunk-data.
        case dataCR
        case dataLF
        /// At the start of a trailer field line or of the final empty line.
        case trailerLineStart
        case trailerName
        case trailerValue
        case trailerLF
        /// Saw the CR of the final empty line.
        case finalLF
        case done
    }
    var state: State = .size(value: 0, digits: 0, any: false)
    var lineBytes = 0
    /// Bytes of the chunked body consumed so far (what an error's offset counts from).
    private(set) var framedBytes = 0
    var trailerBytes = 0
    /// Longest chunk line (size and extensions) or trailer field line.
    public static let maximumLineBytes = 8192
    /// Largest trailer section.
    public static let maximumTrailerBytes = 64 * 1024

    public init() {}

    public var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// `trailers`: where the trailer section's field lines go, if anywhere (``BodyReader/consume(_:payload:trailers:)``).
    public mutating func consume(
        _ bytes: ArraySlice<UInt8>, payload: UnsafeMutablePointer<[UInt8]>?,
        trailers: UnsafeMutablePointer<FieldSection>? = nil
    ) throws(HTTPParseError) -> Int {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if case .data(let left) = state {
                let n = min(left, bytes.endIndex - i)
                payload?.pointee.append(contentsOf: bytes[i..<(i + n)])
                i += n
                state = left == n ? .dataCR : .data(left - n)
                continue
            }
            if let trailers { keepTrailer(bytes[i], into: trailers) }
            do {
                try step(bytes[i])
            } catch {
                throw HTTPParseError(
                    kind: error.kind, description: error.reason, offset: framedBytes + (i - bytes.startIndex))
            }
            i += 1
            if case .done = state { break }
        }
        framedBytes += i - bytes.startIndex
        return i - bytes.startIndex
    }

    /// Reads `b` into `trailers` when it belongs to a trailer field (its name or value; ``step(_:)`` then checks
    /// it). A field a trailer section must not carry (RFC 9110 §6.5.1) is left out once its line has ended.
    private func keepTrailer(_ b: UInt8, into trailers: UnsafeMutablePointer<FieldSection>) {
        switch state {
        case .trailerLineStart where b != 0x0D: trailers.pointee.startField(b)
        case .trailerName where b == 0x3A: trailers.pointee.endName()
        case .trailerName: trailers.pointee.appendByte(b)
        case .trailerValue where b == 0x0D:
            trailers.pointee.endValue()
            let name = trailers.pointee.lastName
            let known = name.withUnsafeBufferPointer { KnownField.classify($0, 0, $0.count) }
            if known.isForbiddenInTrailers { trailers.pointee.dropLast() }
        case .trailerValue: trailers.pointee.appendByte(b)
        default: break
        }
    }

    /// One byte of framing (anything but chunk-data).
    private mutating func step(_ b: UInt8) throws(HTTPParseError) {
        switch state {
        case .size(let value, let digits, let any):
            if let d = ByteClass.hexValue(b) {
                let significant = digits + (value == 0 && d == 0 ? 0 : 1)
                guard significant <= 15 else { throw Self.error("chunk size too large") }
                state = .size(value: value * 16 + d, digits: significant, any: true)
                return
            }
            guard any else { throw Self.error("missing chunk size") }
            try lineByte()
            try afterValue(b, value: value)
        case .extensionSpace(let value):
            try lineByte()
            if ByteClass.isWhitespace(b) { return }
            guard b == 0x3B else { throw Self.error("invalid chunk extension") }
            state = .extensionNameStart(value: value)
        case .extensionNameStart(let value):
            try lineByte()
            if ByteClass.isWhitespace(b) { return }
            guard ByteClass.isTokenChar(b) else { throw Self.error("invalid chunk extension name") }
            state = .extensionName(value: value)
        case .extensionName(let value):
            try lineByte()
            if ByteClass.isTokenChar(b) { return }
            if ByteClass.isWhitespace(b) {
                state = .extensionAfterName(value: value)
            } else if b == 0x3D {
                state = .extensionValueStart(value: value)
            } else {
                try afterValue(b, value: value)
            }
        case .extensionAfterName(let value):
            try lineByte()
            if ByteClass.isWhitespace(b) { return }
            if b == 0x3D {
                state = .extensionValueStart(value: value)
            } else if b == 0x3B {
                state = .extensionNameStart(value: value)
            } else {
                throw Self.error("invalid chunk extension")
            }
        case .extensionValueStart(let value):
            try lineByte()
            if ByteClass.isWhitespace(b) { return }
            if b == 0x22 {
                state = .extensionQuoted(value: value)
            } else if ByteClass.isTokenChar(b) {
                state = .extensionToken(value: value)
            } else {
                throw Self.error("invalid chunk extension value")
            }
        case .extensionToken(let value):
            try lineByte()
            if ByteClass.isTokenChar(b) { return }
            try afterValue(b, value: value)
        case .extensionQuoted(let value):
            try lineByte()
            if b == 0x22 {
                state = .extensionAfterQuoted(value: value)
            } else if b == 0x5C {
                state = .extensionQuotedPair(value: value)
            } else if !ByteClass.isQuotedText(b) {
                throw Self.error("invalid character in a quoted chunk extension value")
            }
        case .extensionQuotedPair(let value):
            try lineByte()
            guard ByteClass.isQuotedPairChar(b) else {
                throw Self.error("invalid character in a quoted chunk extension value")
            }
            state = .extensionQuoted(value: value)
        case .extensionAfterQuoted(let value):
            try lineByte()
            try afterValue(b, value: value)
        case .sizeLineLF(let value):
            guard b == 0x0A else { throw Self.error("chunk line not ended by CRLF") }
            lineBytes = 0
            state = value == 0 ? .trailerLineStart : .data(value)
        case .data:
            preconditionFailure("chunk-data is consumed in bulk")
        case .dataCR:
            guard b == 0x0D else { throw Self.error("chunk data not followed by CRLF") }
            state = .dataLF
        case .dataLF:
            guard b == 0x0A else { throw Self.error("chunk data not followed by CRLF") }
            state = .size(value: 0, digits: 0, any: false)
        case .trailerLineStart:
            if b == 0x0D {
                state = .finalLF
                return
            }
            // A line starting with whitespace would be obs-fold (RFC 9112 §5.2): refused like in a head.
            guard ByteClass.isTokenChar(b) else { throw Self.error("invalid trailer field line") }
            try trailerByte()
            state = .trailerName
        case .trailerName:
            try trailerByte()
            if b == 0x3A {
                state = .trailerValue
            } else if !ByteClass.isTokenChar(b) {
                throw Self.error("invalid character in trailer field name")
            }
        case .trailerValue:
            try trailerByte()
            if b == 0x0D {
                state = .trailerLF
            } else if ByteClass.isControl(b) {
                throw Self.error("invalid character in trailer field value")
            }
        case .trailerLF:
            guard b == 0x0A else { throw Self.error("trailer line not ended by CRLF") }
            try trailerByte()
            lineBytes = 0
            state = .trailerLineStart
        case .finalLF:
            guard b == 0x0A else { throw Self.error("chunked body not ended by CRLF") }
            state = .done
        case .done:
            preconditionFailure("no byte follows the end of a chunked body")
        }
    }

    /// What may follow a chunk size, an extension name or value: BWS, `;`, or the CR of the line end.
    @inline(__always)
    private mutating func afterValue(_ b: UInt8, value: Int) throws(HTTPParseError) {
        if b == 0x0D {
            state = .sizeLineLF(value: value)
        } else if b == 0x3B {
            state = .extensionNameStart(value: value)
        } else if ByteClass.isWhitespace(b) {
            state = .extensionSpace(value: value)
        } else if b == 0x0A {
            throw Self.error("chunk line ended by a bare LF")
        } else {
            throw Self.error("invalid character in chunk line")
        }
    }

    @inline(__always)
    private mutating func lineByte() throws(HTTPParseError) {
        lineBytes += 1
        guard lineBytes < Self.maximumLineBytes else { throw Self.error("chunk extension too long") }
    }

    @inline(__always)
    private mutating func trailerByte() throws(HTTPParseError) {
        lineBytes += 1
        trailerBytes += 1
        guard lineBytes < Self.maximumLineBytes, trailerBytes < Self.maximumTrailerBytes else {
            throw Self.error("trailer section too large")
        }
    }

    static func error(_ reason: String) -> HTTPParseError {
        HTTPParseError(kind: .malformed, description: reason)
    }
}
