import CookieKit

/// An HTTP/1.1 message head (RFC 9112 §2–§5) kept as the bytes received, with the positions of the
/// start line and each field line, so that a proxy can forward every line it does not change unchanged.
public struct HTTPHead: Sendable {
    /// The head bytes up to and including the empty line that ends it.
    public var bytes: [UInt8]
    /// The start line, without its line ending.
    public var startLine: Range<Int>
    public var fields: [Field]

    /// One field line.
    public struct Field: Sendable {
        /// The whole line including its CRLF or LF.
        public var line: Range<Int>
        public var name: Range<Int>
        /// The value without leading and trailing whitespace (RFC 9112 §5).
        public var value: Range<Int>
    }

    public func name(_ field: Field) -> String { String(decoding: bytes[field.name], as: UTF8.self) }
    public func value(_ field: Field) -> String { String(decoding: bytes[field.value], as: UTF8.self) }
    public func valueBytes(_ field: Field) -> ArraySlice<UInt8> { bytes[field.value] }

    /// Whether a field's name equals `lowercaseName`, ignoring ASCII case.
    public func field(_ field: Field, is lowercaseName: String) -> Bool {
        let count = field.name.count
        guard count == lowercaseName.utf8.count else { return false }
        var name = lowercaseName
        return name.withUTF8 { target in
            var i = 0
            var k = field.name.lowerBound
            while i < count {
                let b = bytes[k]
                if (b &- 0x41 < 26 ? b | 0x20 : b) != target[i] { return false }
                i += 1
                k += 1
            }
            return true
        }
    }

    /// The values of every field named `lowercaseName`, in order.
    public func values(_ lowercaseName: String) -> [String] {
        fields.filter { field($0, is: lowercaseName) }.map { value($0) }
    }

    /// The comma-separated list elements of every field named `lowercaseName` (RFC 9110 §5.6.1), lowercased.
    /// Works on bytes: Character-level string operations cost tens of thousands of instructions per request.
    public func listElements(_ lowercaseName: String) -> [String] {
        var result: [String] = []
        for field in fields where self.field(field, is: lowercaseName) {
            var start = field.value.lowerBound
            let end = field.value.upperBound
            while start <= end {
                var stop = start
                while stop < end && bytes[stop] != 0x2C { stop += 1 }
                var a = start
                var b = stop
                while a < b && (bytes[a] == 0x20 || bytes[a] == 0x09) { a += 1 }
                while b > a && (bytes[b - 1] == 0x20 || bytes[b - 1] == 0x09) { b -= 1 }
                if a < b {
                    var element = Array(bytes[a..<b])
                    for i in element.indices where element[i] &- 0x41 < 26 { element[i] |= 0x20 }
                    result.append(String(decoding: element, as: UTF8.self))
                }
                start = stop + 1
            }
        }
        return result
    }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}

/// HTTP-version (RFC 9112 §2.3).
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// A parsed request head (RFC 9112 §3).
public struct RequestHead: Sendable {
    public var head: HTTPHead
    public var method: String
    public var target: String
    public var version: HTTPVersion
}

/// A parsed response head (RFC 9112 §4).
public struct ResponseHead: Sendable {
    public var head: HTTPHead
    public var version: HTTPVersion
    public var status: Int
}

/// Parser limits: an explicit, documented configuration (as swift-nio's HTTP decoder has).
public struct HTTPParserLimits: Sendable, Hashable {
    /// Largest head accepted, start line and fields included; larger gets `431` (requests) or `502`.
    public var maximumHeadBytes: Int
    /// Most field lines in one head.
    public var maximumFieldCount: Int
    public init(maximumHeadBytes: Int = 64 * 1024, maximumFieldCount: Int = 200) {
        self.maximumHeadBytes = maximumHeadBytes
        self.maximumFieldCount = maximumFieldCount
    }
}

/// Why a head could not be parsed; `description` is the one-line reason sent in a `400`.
public struct HTTPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case headTooLarge
        case tooManyFields
        case malformed
    }
    public var kind: Kind
    public var description: String
    public init(kind: Kind, description: String) {
        self.kind = kind
        self.description = description
    }
}

/// Finds and parses message heads in a growing buffer. Sans-I/O: bytes in, heads out; feeding one byte
/// at a time costs no more than feeding all at once, because scanning resumes where it stopped.
public struct HTTPHeadParser: Sendable {
    public var limits: HTTPParserLimits
    private var scanned = 0

    public init(limits: HTTPParserLimits = HTTPParserLimits()) { self.limits = limits }

    /// Looks for a complete head at the start of `buffer`. Returns the head length (bytes to consume), nil if
    /// more bytes are needed; throws when the head is too large. Leading empty lines are skipped by callers
    /// through ``leadingEmptyLines(_:)``.
    public mutating func headLength(_ buffer: ArraySlice<UInt8>) throws(HTTPParseError) -> Int? {
        let start = buffer.startIndex
        var i = start + max(0, scanned - 3)
        let end = buffer.endIndex
        while i < end {
            if buffer[i] == 0x0A {
                // "\n\n" or "\n\r\n" ends the head (RFC 9112 §2.2 allows a bare LF line terminator).
                if i + 1 < end && buffer[i + 1] == 0x0A {
                    scanned = 0
                    return try checked(i + 2 - start)
                }
                if i + 2 < end && buffer[i + 1] == 0x0D && buffer[i + 2] == 0x0A {
                    scanned = 0
                    return try checked(i + 3 - start)
                }
            }
            i += 1
        }
        scanned = end - start
        if scanned > limits.maximumHeadBytes {
            throw HTTPParseError(kind: .headTooLarge, description: "message head is over \(limits.maximumHeadBytes) bytes")
        }
        return nil
    }

    private func checked(_ length: Int) throws(HTTPParseError) -> Int {
        if length > limits.maximumHeadBytes {
            throw HTTPParseError(kind: .headTooLarge, description: "message head is over \(limits.maximumHeadBytes) bytes")
        }
        return length
    }

    /// Empty lines a recipient ignores before a request line (RFC 9112 §2.2).
    public static func leadingEmptyLines(_ buffer: ArraySlice<UInt8>) -> Int {
        var i = buffer.startIndex
        while i < buffer.endIndex {
            if buffer[i] == 0x0A {
                i += 1
            } else if buffer[i] == 0x0D && i + 1 < buffer.endIndex && buffer[i + 1] == 0x0A {
                i += 2
            } else {
                break
            }
        }
        return i - buffer.startIndex
    }

    /// Splits a complete head into its start line and field lines (RFC 9112 §5).
    public func parseHead(_ bytes: [UInt8]) throws(HTTPParseError) -> HTTPHead {
        var lines: [Range<Int>] = []  // content ranges without line endings
        var lineRanges: [Range<Int>] = []  // with line endings
        var lineStart = 0
        for i in 0..<bytes.count where bytes[i] == 0x0A {
            var contentEnd = i
            if contentEnd > lineStart && bytes[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            lines.append(lineStart..<contentEnd)
            lineRanges.append(lineStart..<(i + 1))
            lineStart = i + 1
        }
        guard lines.count >= 2 else { throw Self.malformed("incomplete message head") }
        let fieldLines = lines.count - 2  // minus start line and the final empty line
        if fieldLines > limits.maximumFieldCount {
            throw HTTPParseError(kind: .tooManyFields, description: "more than \(limits.maximumFieldCount) header fields")
        }
        var fields: [HTTPHead.Field] = []
        fields.reserveCapacity(fieldLines)
        for index in 1..<(lines.count - 1) {
            let r = lines[index]
            guard !r.isEmpty else { throw Self.malformed("empty header line") }
            let first = bytes[r.lowerBound]
            if first == 0x20 || first == 0x09 {
                // RFC 9112 §5.2: obs-fold is rejected rather than guessed at.
                throw Self.malformed("obsolete line folding in header field")
            }
            guard let colon = bytes[r].firstIndex(of: 0x3A) else {
                throw Self.malformed("header line without a colon")
            }
            guard colon > r.lowerBound else { throw Self.malformed("header field with an empty name") }
            for k in r.lowerBound..<colon where !Self.isTokenChar(bytes[k]) {
                // Includes whitespace between name and colon (RFC 9112 §5.1: MUST reject with 400).
                throw Self.malformed("invalid character in header field name")
            }
            var vs = colon + 1
            var ve = r.upperBound
            while vs < ve && (bytes[vs] == 0x20 || bytes[vs] == 0x09) { vs += 1 }
            while ve > vs && (bytes[ve - 1] == 0x20 || bytes[ve - 1] == 0x09) { ve -= 1 }
            for k in vs..<ve where bytes[k] == 0x00 || bytes[k] == 0x0D || bytes[k] == 0x0A {
                throw Self.malformed("invalid character in header field value")
            }
            fields.append(HTTPHead.Field(line: lineRanges[index], name: r.lowerBound..<colon, value: vs..<ve))
        }
        return HTTPHead(bytes: bytes, startLine: lines[0], fields: fields)
    }

    /// Parses a request head (RFC 9112 §3): method SP request-target SP HTTP-version.
    public func parseRequest(_ bytes: [UInt8]) throws(HTTPParseError) -> RequestHead {
        let head = try parseHead(bytes)
        let parts = bytes[head.startLine].split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Self.malformed("request line is not 'METHOD target HTTP/1.1'") }
        guard !parts[0].isEmpty, parts[0].allSatisfy(Self.isTokenChar) else { throw Self.malformed("invalid method") }
        guard !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Self.malformed("invalid request target")
        }
        guard let version = Self.parseVersion(parts[2]) else { throw Self.malformed("unsupported HTTP version") }
        return RequestHead(
            head: head, method: String(decoding: parts[0], as: UTF8.self),
            target: String(decoding: parts[1], as: UTF8.self), version: version)
    }

    /// Parses a response head (RFC 9112 §4): HTTP-version SP status-code SP [reason-phrase].
    public func parseResponse(_ bytes: [UInt8]) throws(HTTPParseError) -> ResponseHead {
        let head = try parseHead(bytes)
        let line = bytes[head.startLine]
        let parts = line.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let version = Self.parseVersion(parts[0]), parts[1].count == 3,
            parts[1].allSatisfy({ $0 &- 0x30 < 10 })
        else { throw Self.malformed("invalid status line") }
        let status = parts[1].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard status >= 100 else { throw Self.malformed("invalid status code") }
        return ResponseHead(head: head, version: version, status: status)
    }

    static func parseVersion(_ b: ArraySlice<UInt8>) -> HTTPVersion? {
        let a = Array(b)
        guard a.count == 8, a[0] == 0x48, a[1] == 0x54, a[2] == 0x54, a[3] == 0x50, a[4] == 0x2F, a[6] == 0x2E,
            a[5] == 0x31, a[7] &- 0x30 < 10
        else { return nil }
        return HTTPVersion(major: 1, minor: Int(a[7] - 0x30))
    }

    static func malformed(_ reason: String) -> HTTPParseError {
        HTTPParseError(kind: .malformed, description: reason)
    }

    /// tchar (RFC 9110 §5.6.2), shared with the cookie grammar.
    static func isTokenChar(_ byte: UInt8) -> Bool { HTTPToken.isTokenChar(byte) }
}
