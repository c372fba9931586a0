import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Parser limits: an explicit, documented configuration (as swift-nio's HTTP decoder has).
public struct HTTPParserLimits: Sendable, Hashable {
    /// Largest head accepted, start line and fields included; larger gets `431` (requests; `414` when the request
    /// line alone is) or `502`.
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
        let limit = min(buffer.count, limits.maximumHeadBytes)
        let firstLineEnd = buffer.withUnsafeBufferPointer {
            Self.nextLF(UnsafeBufferPointer(rebasing: $0[..<limit]), from: 0)
        }
        if firstLineEnd == limit {
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
    package static func nextLF(_ b: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        guard from < b.count, let base = b.baseAddress, let hit = memchr(base + from, 0x0A, b.count - from) else {
            return b.count
        }
        return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
    }

    /// Why a head is refused before it is split into lines: a NUL, or a CR not followed by LF, anywhere in it
    /// (libc's memchr does the scanning: a head has a CR per line).
    package static func nulOrBareCR(_ b: UnsafeBufferPointer<UInt8>) -> (String, Int)? {
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
    package static func normalisingLineEnds(_ bytes: [UInt8]) -> [UInt8] {
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

    package static func parseVersion(_ a: ArraySlice<UInt8>) -> HTTPVersion? {
        let s = a.startIndex
        guard a.count == 8, a[s] == 0x48, a[s + 1] == 0x54, a[s + 2] == 0x54, a[s + 3] == 0x50, a[s + 4] == 0x2F,
            a[s + 6] == 0x2E, a[s + 5] == 0x31, a[s + 7] &- 0x30 < 10
        else { return nil }
        return HTTPVersion(major: 1, minor: Int(a[s + 7] - 0x30))
    }

    package static func malformed(_ reason: String, at offset: Int? = nil) -> HTTPParseError {
        HTTPParseError(kind: .malformed, description: reason, offset: offset)
    }

    /// tchar (RFC 9110 §5.6.2), shared with the cookie grammar.
    package static func isTokenChar(_ byte: UInt8) -> Bool { ByteClass.isTokenChar(byte) }

    /// A field name from `start`: the index of the first `:` before `end` (or `end`), and whether every byte before
    /// it is a tchar (RFC 9110 §5.6.2). Eight bytes at a time while all are letters, digits or `-` (the bytes of
    /// nearly every field name), each byte tested exactly; from the first word with any other byte (a rarer
    /// tchar, or one that is not) on, one byte at a time.
    @inline(__always)
    package static func scanName(_ b: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> (
        colon: Int, isToken: Bool
    ) {
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
    package static func bytes(_ w: UInt64, from low: UInt64, to high: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        return (w &+ ones &* (0x80 &- low)) & ~(w &+ ones &* (0x7F &- high)) & (ones &* 0x80)
    }
}
