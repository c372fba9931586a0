/// How a message body is delimited (RFC 9112 §6).
public enum BodyFraming: Sendable, Hashable {
    /// No body (HEAD responses, 1xx, 204, 304, requests without Content-Length or Transfer-Encoding).
    case none
    case contentLength(Int)
    /// Transfer-Encoding ending in chunked (RFC 9112 §7.1).
    case chunked
    /// Until the connection closes (responses only, RFC 9112 §6.3 rule 8).
    case untilClose

    /// RFC 9112 §6.3 for a request. Transfer-Encoding with Content-Length, a final coding other than chunked,
    /// or a bad or conflicting Content-Length is refused (they are how requests are smuggled).
    public static func forRequest(_ head: HTTPHead) throws(HTTPParseError) -> BodyFraming {
        let te = head.listElements(.transferEncoding)
        if !te.isEmpty {
            guard !head.fields.contains(where: { $0.known == .contentLength }) else {
                throw HTTPParseError(kind: .malformed, description: "both Transfer-Encoding and Content-Length")
            }
            guard te.last == "chunked" else {
                throw HTTPParseError(kind: .malformed, description: "Transfer-Encoding does not end in chunked")
            }
            return .chunked
        }
        guard let length = try contentLength(head) else { return .none }
        return length == 0 ? .none : .contentLength(length)
    }

    /// RFC 9112 §6.3 for a response to `method` with `status`.
    public static func forResponse(_ head: HTTPHead, status: Int, requestMethod: String) throws(HTTPParseError)
        -> BodyFraming
    {
        if requestMethod == "HEAD" || (100..<200).contains(status) || status == 204 || status == 304 { return .none }
        let te = head.listElements(.transferEncoding)
        if !te.isEmpty { return te.last == "chunked" ? .chunked : .untilClose }
        guard let length = try contentLength(head) else { return .untilClose }
        return length == 0 ? .none : .contentLength(length)
    }

    /// Content-Length values must agree and be digits (RFC 9110 §8.6); `5, 5` is accepted as 5. Read from the
    /// head's bytes: elements between commas, optional whitespace around each.
    static func contentLength(_ head: HTTPHead) throws(HTTPParseError) -> Int? {
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
    /// to whatever follows. With `payload`, chunked data (without framing) is appended to it.
    public mutating func consume(_ bytes: ArraySlice<UInt8>, payload: UnsafeMutablePointer<[UInt8]>? = nil)
        throws(HTTPParseError) -> Int
    {
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
            let n = try chunked.consume(bytes, payload: payload)
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

/// The chunked transfer coding (RFC 9112 §7.1) as a state machine over bytes.
public struct ChunkedDecoder: Sendable {
    enum State: Sendable {
        /// Reading chunk-size hex digits; `digits` counts them.
        case size(value: Int, digits: Int)
        /// After the size: chunk extensions or whitespace until LF.
        case sizeLineRest(value: Int)
        /// In chunk-data with this many bytes left.
        case data(Int)
        /// Expecting the CRLF after chunk-data; `sawCR` after the CR.
        case dataEnd(sawCR: Bool)
        /// At the start of a trailer line (or the final empty line).
        case trailerLineStart
        /// Inside a trailer field line.
        case trailerLine
        /// Saw CR of the final empty line.
        case finalCR
        case done
    }
    var state: State = .size(value: 0, digits: 0)
    var lineBytes = 0
    public static let maximumLineBytes = 8192

    public var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    public mutating func consume(_ bytes: ArraySlice<UInt8>, payload: UnsafeMutablePointer<[UInt8]>?)
        throws(HTTPParseError) -> Int
    {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            switch state {
            case .size(let value, let digits):
                if let d = Self.hex(b) {
                    guard digits < 15 else { throw Self.error("chunk size too large") }
                    state = .size(value: value * 16 + d, digits: digits + 1)
                } else {
                    guard digits > 0 else { throw Self.error("missing chunk size") }
                    state = .sizeLineRest(value: value)
                    lineBytes = 0
                    continue  // re-examine this byte
                }
            case .sizeLineRest(let value):
                if b == 0x0A {
                    state = value == 0 ? .trailerLineStart : .data(value)
                } else {
                    lineBytes += 1
                    guard lineBytes < Self.maximumLineBytes else { throw Self.error("chunk extension too long") }
                }
            case .data(let left):
                let n = min(left, bytes.endIndex - i)
                payload?.pointee.append(contentsOf: bytes[i..<(i + n)])
                i += n
                state = left - n == 0 ? .dataEnd(sawCR: false) : .data(left - n)
                continue
            case .dataEnd(let sawCR):
                if b == 0x0D && !sawCR {
                    state = .dataEnd(sawCR: true)
                } else if b == 0x0A {
                    state = .size(value: 0, digits: 0)
                } else {
                    throw Self.error("chunk data not followed by CRLF")
                }
            case .trailerLineStart:
                if b == 0x0A {
                    state = .done
                } else if b == 0x0D {
                    state = .finalCR
                } else {
                    state = .trailerLine
                    lineBytes = 1
                }
            case .finalCR:
                guard b == 0x0A else { throw Self.error("bad end of chunked body") }
                state = .done
            case .trailerLine:
                if b == 0x0A {
                    state = .trailerLineStart
                } else {
                    lineBytes += 1
                    guard lineBytes < Self.maximumLineBytes else { throw Self.error("trailer line too long") }
                }
            case .done:
                return i - bytes.startIndex
            }
            i += 1
            if case .done = state { return i - bytes.startIndex }
        }
        return i - bytes.startIndex
    }

    static func hex(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }

    static func error(_ reason: String) -> HTTPParseError {
        HTTPParseError(kind: .malformed, description: reason)
    }
}
