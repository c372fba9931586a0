import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP/1.1 message head (RFC 9112 §2–§5) kept as the bytes received, with the positions of the
/// start line and each field line, so that a proxy can forward every line it does not change unchanged.
public struct HTTPHead: Sendable {
    /// The head bytes up to and including the empty line that ends it.
    public var bytes: [UInt8]
    /// The start line, without its line ending.
    public var startLine: Range<Int> {
        get { Int(UInt32(truncatingIfNeeded: startLineBounds))..<Int(startLineBounds >> 32) }
        set { startLineBounds = Self.bounds(newValue) }
    }
    /// ``startLine``, both ends in one word (a head is far smaller than 4 GiB): with ``knownFields`` the head is
    /// four scalars, which Swift passes and returns in registers (a fifth made every head and every outgoing head
    /// built from one be copied whole on its way out of an initialiser).
    private var startLineBounds: UInt64

    private static func bounds(_ range: Range<Int>) -> UInt64 {
        UInt64(UInt32(truncatingIfNeeded: range.lowerBound)) | UInt64(UInt32(truncatingIfNeeded: range.upperBound))
            << 32
    }
    public var fields: [Field]
    /// The known fields the head has, one bit per ``KnownField`` (by raw value): a head without one (most have no
    /// Connection or Transfer-Encoding field) is told so without looking at its fields.
    public private(set) var knownFields: UInt64

    /// A head from its parts (the ranges must lie in `bytes`).
    public init(bytes: [UInt8], startLine: Range<Int>, fields: [Field]) {
        var known: UInt64 = 0
        for field in fields { known |= field.known.bit }
        self.init(bytes: bytes, startLine: startLine, fields: fields, knownFields: known)
    }

    /// As the parser makes it: `knownFields` gathered while the fields were read.
    package init(bytes: [UInt8], startLine: Range<Int>, fields: [Field], knownFields: UInt64) {
        self.bytes = bytes
        self.startLineBounds = Self.bounds(startLine)
        self.fields = fields
        self.knownFields = knownFields
    }

    /// Whether the head has a field of this known name.
    @inlinable
    public func has(_ known: KnownField) -> Bool { knownFields & known.bit != 0 }

    /// One field line.
    public struct Field: Sendable {
        /// The whole line including its CRLF or LF.
        public var line: Range<Int>
        public var name: Range<Int>
        /// The value without leading and trailing whitespace (RFC 9112 §5).
        public var value: Range<Int>
        /// The name, when it is one the proxy acts on (classified once, while parsing).
        public var known: KnownField = .other

        @inlinable
        package init(line: Range<Int>, name: Range<Int>, value: Range<Int>, known: KnownField = .other) {
            (self.line, self.name, self.value, self.known) = (line, name, value, known)
        }
    }

    public func name(_ field: Field) -> String { String(decoding: bytes[field.name], as: UTF8.self) }
    public func value(_ field: Field) -> String { String(decoding: bytes[field.value], as: UTF8.self) }
    @inlinable
    public func valueBytes(_ field: Field) -> ArraySlice<UInt8> { bytes[field.value] }

    /// Whether a field's name equals `lowercaseName`, ignoring ASCII case.
    public func field(_ field: Field, is lowercaseName: String) -> Bool {
        ByteClass.equalsLowercase(bytes[field.name], lowercaseName.utf8)
    }

    /// Whether a field has a name the proxy acts on (no byte comparison: classified while parsing).
    @inlinable
    public func field(_ field: Field, is known: KnownField) -> Bool { field.known == known }

    /// The values of every field with a known name, in order.
    public func values(_ known: KnownField) -> [String] {
        fields.filter { $0.known == known }.map { value($0) }
    }

    /// The values of every field named `lowercaseName`, in order.
    public func values(_ lowercaseName: String) -> [String] {
        fields.filter { field($0, is: lowercaseName) }.map { value($0) }
    }

    /// The comma-separated list elements of every field named `lowercaseName` (RFC 9110 §5.6.1), lowercased.
    /// Works on bytes: Character-level string operations cost tens of thousands of instructions per request.
    public func listElements(_ lowercaseName: String) -> [String] {
        listElements { self.field($0, is: lowercaseName) }
    }

    /// The list elements of every field with a known name, lowercased.
    public func listElements(_ known: KnownField) -> [String] {
        listElements { $0.known == known }
    }

    private func listElements(where wanted: (Field) -> Bool) -> [String] {
        var result: [String] = []
        forEachListElement(where: wanted) { (element: Range<Int>) in
            guard !element.isEmpty else { return }  // empty elements are allowed and ignored (RFC 9110 §5.6.1)
            result.append(ByteClass.lowercasedString(bytes[element]))
        }
        return result
    }

    /// The options of the Connection fields (RFC 9110 §7.6.1), on the bytes: `close`, `keep-alive` and `upgrade` as
    /// flags, and the other options, the names of fields that go no further, as lowercase strings (a head with
    /// only the usual options builds no string).
    public func connectionOptions() -> ConnectionOptions {
        var options = ConnectionOptions()
        guard has(.connection) else { return options }
        bytes.withUnsafeBufferPointer { b in
            forEachListElement(where: { $0.known == .connection }) { (element: Range<Int>) in
                guard !element.isEmpty else { return }  // empty elements are allowed and ignored (RFC 9110 §5.6.1)
                // Options are field names, or `close`: the field-name classifier knows the others.
                let (e0, e1) = (element.lowerBound, element.upperBound)
                switch KnownField.classify(b, e0, e1) {
                case .keepAlive: options.keepAlive = true
                case .upgrade: options.upgrade = true
                // Framing and Host are never hop-by-hop here: removing the field the proxy framed the message by
                // (or routed it by) would let the next hop read the bytes as another message (RFC 9112 §11.2).
                case .transferEncoding, .contentLength, .host: break
                case _ where ByteClass.equalsLowercase(b, e0, e1, "close"): options.close = true
                default:
                    options.fieldNames.append(ByteClass.lowercasedString(b[e0..<e1]))
                }
            }
        }
        return options
    }

    /// Calls `body` with the byte range of each comma-separated element (RFC 9110 §5.6.1) of the fields `wanted`
    /// selects, optional whitespace trimmed, in order; empty elements included (callers decide about them).
    @inlinable
    package func forEachListElement<E: Error>(
        where wanted: (Field) -> Bool, _ body: (Range<Int>) throws(E) -> Void
    ) throws(E) {
        for field in fields where wanted(field) {
            var start = field.value.lowerBound
            let end = field.value.upperBound
            while start <= end {
                var stop = start
                while stop < end && bytes[stop] != 0x2C { stop += 1 }
                var a = start
                var b = stop
                while a < b && (bytes[a] == 0x20 || bytes[a] == 0x09) { a += 1 }
                while b > a && (bytes[b - 1] == 0x20 || bytes[b - 1] == 0x09) { b -= 1 }
                try body(a..<b)
                start = stop + 1
            }
        }
    }
}

/// HTTP-version (RFC 9112 §2.3): of a head read from HTTP/1.x text, or the protocol a codec built a head for
/// (``http2``: HTTP/2 has no minor version, RFC 9113 §3).
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public static let http2 = HTTPVersion(major: 2, minor: 0)
    public var description: String { major == 1 ? "HTTP/\(major).\(minor)" : "HTTP/\(major)" }

    /// HTTP/1.0, the one version whose connections close by default (RFC 9112 §9.3), that has no chunked coding
    /// (§7) and no interim responses (RFC 9110 §15.2), and whose requests may leave out Host (§3.2).
    public var isHTTP1_0: Bool { major == 1 && minor == 0 }
}

/// A parsed request head (RFC 9112 §3).
public struct RequestHead: Sendable {
    public var head: HTTPHead
    public var method: String
    /// Where the request-target lies in the head's bytes: made a string only when asked (the routing reads the
    /// bytes; an absolute URL is too long for a string stored inline, and would be allocated for every request).
    public var targetRange: Range<Int>
    public var version: HTTPVersion

    package init(head: HTTPHead, method: String, targetRange: Range<Int>, version: HTTPVersion) {
        (self.head, self.method, self.targetRange, self.version) = (head, method, targetRange, version)
    }

    /// The request-target (RFC 9112 §3.2).
    public var target: String { String(decoding: head.bytes[targetRange], as: UTF8.self) }

    /// The request-target's bytes, in place for the duration of `body`.
    @inlinable
    public func withTargetBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        head.bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[targetRange])) }
    }
}

/// A parsed response head (RFC 9112 §4).
public struct ResponseHead: Sendable {
    public var head: HTTPHead
    public var version: HTTPVersion
    public var status: Int

    package init(head: HTTPHead, version: HTTPVersion, status: Int) {
        (self.head, self.version, self.status) = (head, version, status)
    }
}
