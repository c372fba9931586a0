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
    init(bytes: [UInt8], startLine: Range<Int>, fields: [Field], knownFields: UInt64) {
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
    }

    public func name(_ field: Field) -> String { String(decoding: bytes[field.name], as: UTF8.self) }
    public func value(_ field: Field) -> String { String(decoding: bytes[field.value], as: UTF8.self) }
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
    func forEachListElement<E: Error>(
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
    /// Where the request-target lies in the head's bytes: made a string only when asked (the routing reads the
    /// bytes; an absolute URL is too long for a string stored inline, and would be allocated for every request).
    public var targetRange: Range<Int>
    public var version: HTTPVersion

    /// The request-target (RFC 9112 §3.2).
    public var target: String { String(decoding: head.bytes[targetRange], as: UTF8.self) }

    /// The request-target's bytes, in place for the duration of `body`.
    public func withTargetBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        head.bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[targetRange])) }
    }
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
        /// The head is too large and its first line alone is over the limit: for a request, a request-target longer
        /// than the proxy parses (`414`, RFC 9112 §3).
        case startLineTooLong
        case tooManyFields
        case malformed
        /// A transfer coding the proxy does not implement (`501`, RFC 9112 §6.1).
        case notImplemented
    }
    public var kind: Kind
    /// One line, without the offset.
    public var reason: String
    /// Where in the received bytes the problem is: an index into the head, or, for a chunked body, into the
    /// body's framed bytes. Nil when it is about the whole (a head too large, two Content-Length values).
    public var offset: Int?
    public init(kind: Kind, description: String, offset: Int? = nil) {
        self.kind = kind
        self.reason = description
        self.offset = offset
    }
    /// The reason, and the offset when there is one: what the `400` says.
    public var description: String { offset.map { "\(reason) (at byte \($0))" } ?? reason }
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
        let resume = max(0, scanned - 3)
        let found: Int? = buffer.withUnsafeBufferPointer { b in
            // From one LF to the next: "\n\n" or "\n\r\n" ends the head (RFC 9112 §2.2 allows a bare LF).
            var i = Self.nextLF(b, from: resume)
            while i < b.count {
                if i + 1 < b.count && b[i + 1] == 0x0A { return i + 2 }
                if i + 2 < b.count && b[i + 1] == 0x0D && b[i + 2] == 0x0A { return i + 3 }
                i = Self.nextLF(b, from: i + 1)
            }
            return nil
        }
        if let found {
            scanned = 0
            if found > limits.maximumHeadBytes { throw tooLarge(buffer) }
            return found
        }
        scanned = buffer.count
        if scanned > limits.maximumHeadBytes { throw tooLarge(buffer) }
        return nil
    }

    /// The error for a head over the limit: ``HTTPParseError/Kind/startLineTooLong`` when no line ends within it.
    private func tooLarge(_ buffer: ArraySlice<UInt8>) -> HTTPParseError {
        if !buffer.prefix(limits.maximumHeadBytes).contains(0x0A) {
            return HTTPParseError(
                kind: .startLineTooLong, description: "the first line is over \(limits.maximumHeadBytes) bytes")
        }
        return HTTPParseError(
            kind: .headTooLarge, description: "message head is over \(limits.maximumHeadBytes) bytes")
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

    /// Splits a complete head into its start line and field lines (RFC 9112 §5), in one pass over the bytes
    /// that also classifies the field names the proxy acts on.
    ///
    /// The framing policy (RFC 9112 §2.2, §5; RFC 9110 §5.5): a NUL, or a CR not followed by LF, anywhere in the
    /// head is refused; with `strictValues` (requests) so is every other CTL but HTAB in a field value. A bare LF
    /// ends a line, as RFC 9112 §2.2 lets a recipient read it, and the head is then re-serialised with CRLF line
    /// ends: the proxy's reading becomes the only one, since every later hop sees CRLF. `bytes` of the result
    /// are the normalised head.
    ///
    /// `fieldStorage`: an array whose storage the fields are written into (emptied first), so that a caller parsing
    /// head after head allocates no field list (``HeadStorage``).
    public func parseHead(
        _ bytes: [UInt8], strictValues: Bool = false, fieldStorage: consuming [HTTPHead.Field] = []
    ) throws(HTTPParseError) -> HTTPHead {
        var startLine = 0..<0
        var fields = fieldStorage
        fields.removeAll(keepingCapacity: true)
        if fields.capacity < 16 { fields.reserveCapacity(16) }
        var bareLF = false
        var known: UInt64 = 0
        let failure = bytes.withUnsafeBufferPointer { b -> HTTPParseError? in
            if let (invalid, at) = Self.nulOrBareCR(b) { return Self.malformed(invalid, at: at) }
            return Self.scanHead(
                b, checkValues: strictValues, maximumFieldCount: limits.maximumFieldCount, startLine: &startLine,
                fields: &fields, knownFields: &known, bareLF: &bareLF)
        }
        if let failure { throw failure }
        if bareLF {
            return try parseHead(Self.normalisingLineEnds(bytes), strictValues: strictValues, fieldStorage: fields)
        }
        return HTTPHead(bytes: bytes, startLine: startLine, fields: fields, knownFields: known)
    }

    /// The index of the next LF at or after `from`, or `b.count` (libc's vectorised memchr).
    @inline(__always)
    static func nextLF(_ b: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        guard from < b.count, let base = b.baseAddress, let hit = memchr(base + from, 0x0A, b.count - from) else {
            return b.count
        }
        return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
    }

    /// Why a head is refused before it is split into lines: a NUL, or a CR not followed by LF, anywhere in it
    /// (libc's memchr does the scanning: a head has a CR per line).
    static func nulOrBareCR(_ b: UnsafeBufferPointer<UInt8>) -> (String, Int)? {
        guard let base = b.baseAddress else { return nil }
        if let nul = memchr(base, 0x00, b.count) {
            return ("NUL in message head", UnsafeRawPointer(nul) - UnsafeRawPointer(base))
        }
        var from = 0
        while from < b.count, let hit = memchr(base + from, 0x0D, b.count - from) {
            let at = UnsafeRawPointer(hit) - UnsafeRawPointer(base)
            guard at + 1 < b.count, b[at + 1] == 0x0A else { return ("CR not followed by LF in message head", at) }
            from = at + 2
        }
        return nil
    }

    /// The head with a CR inserted before every LF that has none.
    static func normalisingLineEnds(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 32)
        var previous: UInt8 = 0
        for c in bytes {
            if c == 0x0A && previous != 0x0D { out.append(0x0D) }
            out.append(c)
            previous = c
        }
        return out
    }

    /// `checkValues`: refuse a CTL other than HTAB in a field value. `bareLF`: set when a line ends with an LF
    /// alone (the caller then parses the head again with CRLF line ends).
    private static func scanHead(
        _ b: UnsafeBufferPointer<UInt8>, checkValues: Bool, maximumFieldCount: Int, startLine: inout Range<Int>,
        fields: inout [HTTPHead.Field], knownFields: inout UInt64, bareLF: inout Bool
    ) -> HTTPParseError? {
        let count = b.count
        // The start line.
        var lineEnd = nextLF(b, from: 0)
        guard lineEnd < count else { return malformed("incomplete message head", at: count) }
        let startLineHasCR = lineEnd > 0 && b[lineEnd - 1] == 0x0D
        if !startLineHasCR { bareLF = true }
        startLine = 0..<(startLineHasCR ? lineEnd - 1 : lineEnd)
        var lineStart = lineEnd + 1
        while true {
            guard lineStart < count else { return malformed("incomplete message head", at: count) }
            let first = b[lineStart]
            if first == 0x0A || (first == 0x0D && lineStart + 1 < count && b[lineStart + 1] == 0x0A) {
                // The empty line ends the head; nothing may follow it here.
                guard lineStart + (first == 0x0A ? 1 : 2) == count else {
                    return malformed("empty header line", at: lineStart)
                }
                if first == 0x0A { bareLF = true }
                return nil
            }
            if fields.count == maximumFieldCount {
                return HTTPParseError(
                    kind: .tooManyFields, description: "more than \(maximumFieldCount) header fields", offset: lineStart
                )
            }
            if first == 0x20 || first == 0x09 {
                // RFC 9112 §5.2: obs-fold (and whitespace after the start line, §2.2) is rejected, not guessed at.
                return malformed("obsolete line folding in header field", at: lineStart)
            }
            lineEnd = nextLF(b, from: lineStart)
            guard lineEnd < count else { return malformed("incomplete message head", at: count) }
            let hasCR = b[lineEnd - 1] == 0x0D
            if !hasCR { bareLF = true }
            let contentEnd = hasCR ? lineEnd - 1 : lineEnd
            // The name: tchars up to the colon (whitespace before the colon included: RFC 9112 §5.1, MUST reject).
            let (colon, nameIsToken) = scanName(b, from: lineStart, to: contentEnd)
            guard colon < contentEnd else { return malformed("header line without a colon", at: lineStart) }
            guard nameIsToken else {
                let at = (lineStart..<colon).first { !isTokenChar(b[$0]) } ?? lineStart
                return malformed("invalid character in header field name", at: at)
            }
            guard colon > lineStart else { return malformed("header field with an empty name", at: lineStart) }
            if checkValues && ByteClass.containsControl(b.baseAddress! + colon + 1, contentEnd - colon - 1) {
                let at = ((colon + 1)..<contentEnd).first { ByteClass.isControl(b[$0]) } ?? colon
                return malformed("control character in header field value", at: at)
            }
            var vs = colon + 1
            var ve = contentEnd
            while vs < ve && (b[vs] == 0x20 || b[vs] == 0x09) { vs += 1 }
            while ve > vs && (b[ve - 1] == 0x20 || b[ve - 1] == 0x09) { ve -= 1 }
            let known = KnownField.classify(b, lineStart, colon)
            knownFields |= known.bit
            fields.append(
                HTTPHead.Field(line: lineStart..<(lineEnd + 1), name: lineStart..<colon, value: vs..<ve, known: known))
            lineStart = lineEnd + 1
        }
    }

    /// Parses a request head (RFC 9112 §3): method SP request-target SP HTTP-version.
    public func parseRequest(_ bytes: [UInt8], fieldStorage: consuming [HTTPHead.Field] = []) throws(HTTPParseError)
        -> RequestHead
    {
        let head = try parseHead(bytes, strictValues: true, fieldStorage: fieldStorage)
        let bytes = head.bytes
        // Exactly two single spaces split the line (RFC 9112 §3).
        let line = head.startLine
        guard let firstSpace = bytes[line].firstIndex(of: 0x20),
            let secondSpace = bytes[(firstSpace + 1)..<line.upperBound].firstIndex(of: 0x20),
            !bytes[(secondSpace + 1)..<line.upperBound].contains(0x20)
        else { throw Self.malformed("request line is not 'METHOD target HTTP/1.1'", at: line.lowerBound) }
        let method = bytes[line.lowerBound..<firstSpace]
        let target = bytes[(firstSpace + 1)..<secondSpace]
        guard !method.isEmpty, method.allSatisfy(Self.isTokenChar) else {
            throw Self.malformed("invalid method", at: line.lowerBound)
        }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Self.malformed(
                "invalid request target", at: target.firstIndex { !($0 > 0x20 && $0 < 0x7F) } ?? firstSpace + 1)
        }
        guard let version = Self.parseVersion(bytes[(secondSpace + 1)..<line.upperBound]) else {
            throw Self.malformed("unsupported HTTP version", at: secondSpace + 1)
        }
        return RequestHead(
            head: head, method: String(decoding: method, as: UTF8.self), targetRange: target.indices, version: version)
    }

    /// Parses a response head (RFC 9112 §4): HTTP-version SP status-code SP [reason-phrase].
    public func parseResponse(_ bytes: [UInt8], fieldStorage: consuming [HTTPHead.Field] = []) throws(HTTPParseError)
        -> ResponseHead
    {
        let head = try parseHead(bytes, fieldStorage: fieldStorage)
        let bytes = head.bytes
        // HTTP-version SP 3DIGIT, then SP and a reason phrase (possibly empty) or nothing.
        let line = head.startLine
        let v = line.lowerBound
        guard line.count >= 12, let version = Self.parseVersion(bytes[v..<(v + 8)]), bytes[v + 8] == 0x20,
            bytes[(v + 9)..<(v + 12)].allSatisfy({ $0 &- 0x30 < 10 }), line.count == 12 || bytes[v + 12] == 0x20
        else { throw Self.malformed("invalid status line", at: v) }
        let status = bytes[(v + 9)..<(v + 12)].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard status >= 100 else { throw Self.malformed("invalid status code", at: v + 9) }
        // reason-phrase = *( HTAB / SP / VCHAR / obs-text ).
        if let control = bytes[line].firstIndex(where: ByteClass.isControl) {
            throw Self.malformed("control character in the status line", at: control)
        }
        return ResponseHead(head: head, version: version, status: status)
    }

    static func parseVersion(_ a: ArraySlice<UInt8>) -> HTTPVersion? {
        let s = a.startIndex
        guard a.count == 8, a[s] == 0x48, a[s + 1] == 0x54, a[s + 2] == 0x54, a[s + 3] == 0x50, a[s + 4] == 0x2F,
            a[s + 6] == 0x2E, a[s + 5] == 0x31, a[s + 7] &- 0x30 < 10
        else { return nil }
        return HTTPVersion(major: 1, minor: Int(a[s + 7] - 0x30))
    }

    static func malformed(_ reason: String, at offset: Int? = nil) -> HTTPParseError {
        HTTPParseError(kind: .malformed, description: reason, offset: offset)
    }

    /// tchar (RFC 9110 §5.6.2), shared with the cookie grammar.
    static func isTokenChar(_ byte: UInt8) -> Bool { ByteClass.isTokenChar(byte) }

    /// A field name from `start`: the index of the first `:` before `end` (or `end`), and whether every byte before
    /// it is a tchar (RFC 9110 §5.6.2). Eight bytes at a time while all are letters, digits or `-` (the bytes of
    /// nearly every field name), each byte tested exactly; from the first word with any other byte (a rarer
    /// tchar, or one that is not) on, one byte at a time.
    @inline(__always)
    static func scanName(_ b: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> (colon: Int, isToken: Bool) {
        var i = start
        if let base = b.baseAddress {
            let high: UInt64 = 0x8080_8080_8080_8080
            while i &+ 8 <= end {
                let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self).littleEndian
                // The range tests below hold for bytes under 0x80 only.
                if w & high != 0 { break }
                let common =
                    bytes(w | 0x2020_2020_2020_2020, from: 0x61, to: 0x7A) | bytes(w, from: 0x30, to: 0x39)
                    | bytes(w, from: 0x2D, to: 0x2D)
                let colons = bytes(w, from: 0x3A, to: 0x3A)
                if colons == 0 {
                    if common != high { break }
                    i &+= 8
                    continue
                }
                // The first colon, with only common bytes before it: the name ends there.
                let k = colons.trailingZeroBitCount &>> 3
                let before: UInt64 = k == 0 ? 0 : high & ((1 &<< UInt64(8 &* k)) &- 1)
                if common & before != before { break }
                return (i &+ k, true)
            }
        }
        // Every byte before `i` is a tchar and not a colon.
        var isToken = true
        while i < end && b[i] != 0x3A {
            isToken = isToken && isTokenChar(b[i])
            i += 1
        }
        return (i, isToken)
    }

    /// The high bit of each byte of `w` within `low...high`, exactly, for words whose bytes are all under 0x80 (no
    /// sum below carries into the next byte): a byte is at least `low` when `byte + 0x80 - low` has its high bit,
    /// and above `high` when `byte + 0x7F - high` has it.
    @inline(__always)
    static func bytes(_ w: UInt64, from low: UInt64, to high: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        return (w &+ ones &* (0x80 &- low)) & ~(w &+ ones &* (0x7F &- high)) & (ones &* 0x80)
    }
}

/// The options of a message's Connection fields (RFC 9110 §7.6.1).
public struct ConnectionOptions: Sendable, Equatable {
    public var close = false
    public var keepAlive = false
    public var upgrade = false
    /// Other options (lowercase): names of fields that are hop-by-hop for this message. `transfer-encoding` is
    /// left out (bodies are forwarded in their received framing).
    public var fieldNames: [String] = []
    public init() {}
}

/// The field names a proxy acts on (hop-by-hop fields, framing, Host, cookies), recognised once per field
/// while parsing so later decisions compare a byte instead of a name (as nginx's header hash does).
public enum KnownField: UInt8, Sendable {
    case other
    case host
    case connection
    case keepAlive
    case proxyConnection
    case te
    case upgrade
    case transferEncoding
    case contentLength
    case setCookie
    case cookie
    case proxyAuthorization

    /// This field's bit in a set of known fields (``HTTPHead/knownFields``).
    @inlinable
    public var bit: UInt64 { 1 << UInt64(rawValue) }

    /// The name as compared (lowercase).
    public var lowercaseName: String {
        switch self {
        case .other: return ""
        case .host: return "host"
        case .connection: return "connection"
        case .keepAlive: return "keep-alive"
        case .proxyConnection: return "proxy-connection"
        case .te: return "te"
        case .upgrade: return "upgrade"
        case .transferEncoding: return "transfer-encoding"
        case .contentLength: return "content-length"
        case .setCookie: return "set-cookie"
        case .cookie: return "cookie"
        case .proxyAuthorization: return "proxy-authorization"
        }
    }

    /// The known field named by `b[start..<end]`, ASCII case-insensitively; `.other` for any other name.
    /// Dispatches on the length, then compares little-endian words of the name, `| 0x20`, with the packed
    /// lowercase names. For token characters (field names are validated as tokens first) `| 0x20` only maps
    /// capitals onto lowercase letters, so nothing else can compare equal.
    public static func classify(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> KnownField {
        let n = end - start
        guard n >= 2 && n <= 19 else { return .other }
        let w0 = word(b, start, end)
        switch n {
        case 2: return w0 == 0x6574 ? .te : .other
        case 4: return w0 == 0x7473_6F68 ? .host : .other
        case 6: return w0 == 0x6569_6B6F_6F63 ? .cookie : .other
        case 7: return w0 == 0x65_6461_7267_7075 ? .upgrade : .other
        case 10:
            let w1 = word(b, start + 8, end)
            if w0 == 0x6B6F_6F63_2D74_6573 && w1 == 0x6569 { return .setCookie }
            if w0 == 0x6974_6365_6E6E_6F63 && w1 == 0x6E6F { return .connection }
            if w0 == 0x696C_612D_7065_656B && w1 == 0x6576 { return .keepAlive }
            return .other
        case 14:
            return w0 == 0x2D74_6E65_746E_6F63 && word(b, start + 8, end) == 0x6874_676E_656C ? .contentLength : .other
        case 16:
            return w0 == 0x6F63_2D79_786F_7270 && word(b, start + 8, end) == 0x6E6F_6974_6365_6E6E
                ? .proxyConnection : .other
        case 17:
            return w0 == 0x7265_6673_6E61_7274 && word(b, start + 8, end) == 0x6E69_646F_636E_652D
                && word(b, start + 16, end) == 0x67 ? .transferEncoding : .other
        case 19:
            return w0 == 0x7561_2D79_786F_7270 && word(b, start + 8, end) == 0x7461_7A69_726F_6874
                && word(b, start + 16, end) == 0x6E_6F69 ? .proxyAuthorization : .other
        default: return .other
        }
    }

    /// Bytes `from ..< min(end, from + 8)` of `b`, `| 0x20`, packed little-endian (one load when eight bytes lie
    /// inside the buffer, as they do for every name followed by its colon and value).
    @inline(__always)
    static func word(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ end: Int) -> UInt64 {
        let count = min(8, end - from)
        let mask: UInt64 = count == 8 ? ~0 : (1 << UInt64(8 * count)) - 1
        var w: UInt64 = 0
        if from + 8 <= b.count, let base = b.baseAddress {
            w = UnsafeRawPointer(base + from).loadUnaligned(as: UInt64.self).littleEndian & mask
        } else {
            for i in 0..<count { w |= UInt64(b[from + i]) << UInt64(8 * i) }
        }
        return w | (0x2020_2020_2020_2020 & mask)
    }

    /// The known field for a name given as text.
    public init(name: String) {
        var name = name
        self = name.withUTF8 { Self.classify($0, 0, $0.count) }
    }
}
