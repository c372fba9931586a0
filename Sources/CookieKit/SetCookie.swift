#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `Set-Cookie` field value, kept byte for byte (RFC 6265bis §4.1, §5.6).
///
/// Reading is lenient and lossless: every input parses, including malformed ones. The value keeps the
/// raw bytes, where the name and value sit, and every attribute in order with its original spelling,
/// spacing, duplicates and unknown or invalid attributes. ``bytes`` of an unedited value is the input.
/// What a user agent would make of it is ``attributes`` (§5.6), and whether it would ignore the line
/// entirely is ``problem``.
public struct SetCookie: Sendable, Hashable, CustomStringConvertible {
    /// The field value as it is now: the input, or the input with the edits applied.
    public internal(set) var bytes: [UInt8]
    @usableFromInline var layout: Layout

    /// Parses a field value. Never fails; see ``problem`` for lines a user agent ignores.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
        self.layout = bytes.withUnsafeBufferPointer { Layout.parse($0) }
    }

    /// Parses a field value given as text (its UTF-8 bytes).
    public init(_ string: String) {
        self.init(bytes: Array(string.utf8))
    }

    /// Parses the bytes of a header line value from a larger buffer (one copy, one allocation).
    public init(_ bytes: ArraySlice<UInt8>) {
        self.init(bytes: Array(bytes))
    }

    /// Parses the bytes of a header line value, leaving room for `spareCapacity` more bytes and a few more
    /// attributes, so that edits that follow do not reallocate (two allocations in all).
    public init(_ bytes: ArraySlice<UInt8>, spareCapacity: Int) {
        self.init(bytes: [])
        reset(to: bytes, spareCapacity: spareCapacity)
    }

    /// Makes this value the parse of `newBytes` with room for `spareCapacity` more bytes (and a few more
    /// attributes), in this value's storage when no copy shares it: a loop over the lines of a message allocates
    /// once, not twice per line.
    public mutating func reset(to newBytes: ArraySlice<UInt8>, spareCapacity: Int) {
        newBytes.withUnsafeBufferPointer { reset(to: $0, spareCapacity: spareCapacity) }
    }

    /// ``reset(to:spareCapacity:)`` from bytes in memory owned by someone else (the proxy's message head).
    public mutating func reset(to newBytes: UnsafeBufferPointer<UInt8>, spareCapacity: Int) {
        if bytes.capacity < newBytes.count + spareCapacity {
            bytes = []
            bytes.reserveCapacity(newBytes.count + spareCapacity)
            bytes.append(contentsOf: newBytes)
        } else {
            // One replacement in place (emptying then appending is two passes through the generic machinery).
            bytes.replaceSubrange(0..<bytes.count, with: newBytes)
        }
        // The spans are moved out (leaving the shared empty array), so their storage stays unique.
        var spans = ContiguousArray<Layout.Span>()
        swap(&spans, &layout.spans)
        layout = bytes.withUnsafeBufferPointer {
            Layout.parse($0, reusing: spans, spareSpans: spareCapacity > 0 ? 4 : 0)
        }
    }

    /// Parses bytes in memory owned by someone else (one copy, one allocation).
    public init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.init(bytes: Array(bytes))
    }

    public static func == (lhs: SetCookie, rhs: SetCookie) -> Bool { lhs.bytes == rhs.bytes }

    /// Whether the field value is exactly `other` (a memory comparison).
    public func hasBytes(_ other: ArraySlice<UInt8>) -> Bool {
        other.withUnsafeBufferPointer { hasBytes($0) }
    }

    /// Whether the field value is exactly the bytes in `other` (a memory comparison).
    public func hasBytes(_ other: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer { Self.same($0, other) }
    }

    /// Whether two buffers hold the same bytes (a memory comparison).
    static func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }

    /// The field value as text (invalid UTF-8 shown as U+FFFD).
    public var description: String { String(lossy: bytes) }

    // MARK: Name and value (§5.6 steps 2–4)

    /// The cookie-name bytes, without surrounding whitespace. Empty when the pair has no `=` (§5.6 step 3).
    public var nameBytes: ArraySlice<UInt8> { bytes[Int(layout.pair.nameStart)..<Int(layout.pair.nameEnd)] }
    /// The cookie-value bytes, without surrounding whitespace; quotes are kept (they are part of the value).
    public var valueBytes: ArraySlice<UInt8> { bytes[Int(layout.pair.valueStart)..<Int(layout.pair.valueEnd)] }
    /// Where the cookie-value is in ``bytes``.
    public var valueRange: Range<Int> { Int(layout.pair.valueStart)..<Int(layout.pair.valueEnd) }
    /// The cookie-name as text.
    public var name: String { String(lossy: nameBytes) }
    /// The cookie-value as text.
    public var value: String { String(lossy: valueBytes) }
    /// Whether the name-value-pair contains `=`; `Set-Cookie: foo` is a cookie with an empty name (§5.6 step 3).
    public var hasNameValueSeparator: Bool { layout.pair.pairHasEquals }
    /// Byte range of the name-value-pair (up to the first `;`), whitespace included.
    public var nameValuePairRange: Range<Int> { 0..<Int(layout.pair.pairEnd) }

    // MARK: Attributes as written

    /// The attributes as written, in order, duplicates and unknown ones included.
    public var writtenAttributes: [WrittenAttribute] {
        layout.spans.map { span in
            WrittenAttribute(
                kind: span.kind,
                name: String(lossy: bytes[Int(span.nameStart)..<Int(span.nameEnd)]),
                value: span.hasEquals ? String(lossy: bytes[Int(span.valueStart)..<Int(span.valueEnd)]) : nil,
                range: Int(span.start)..<Int(span.end),
                isIgnored: span.valueEnd - span.valueStart > SetCookie.maximumAttributeValueLength
            )
        }
    }

    /// Number of attributes as written (cookie-av segments after the first `;`).
    public var attributeCount: Int { layout.spans.count }

    /// Whether a user agent would ignore this line entirely (§5.6 steps 1 and 5, §5.7 step 2), and why.
    public var problem: Problem? { layout.pair.problem }

    /// RFC 6265bis §5.6 step 5: name plus value longer than this is ignored.
    public static let maximumNameValueLength = 4096
    /// RFC 6265bis §5.6 (attributes) step 6: an attribute value longer than this is ignored.
    public static let maximumAttributeValueLength: Int32 = 1024
}

extension SetCookie {
    /// An attribute as written in the field value.
    public struct WrittenAttribute: Sendable, Hashable {
        /// Which attribute RFC 6265bis gives this name to (matched case-insensitively), or `.unknown`.
        public var kind: CookieAttributeKind
        /// The attribute name as written, without surrounding whitespace.
        public var name: String
        /// The attribute value as written without surrounding whitespace; nil when there is no `=`.
        public var value: String?
        /// Byte range of the cookie-av, between its `;` and the next one.
        public var range: Range<Int>
        /// Whether a user agent ignores it because its value is over 1024 bytes (§5.6 attributes step 6).
        public var isIgnored: Bool
    }

    /// Why a user agent ignores the whole line.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        enum Reason: Hashable {
            case controlCharacter(offset: Int, byte: UInt8)
            case emptyNameAndValue
            case nameValueTooLong(Int)
        }
        let reason: Reason

        /// A stable code for scripts.
        public var code: String {
            switch reason {
            case .controlCharacter: return "control-character"
            case .emptyNameAndValue: return "empty-cookie"
            case .nameValueTooLong: return "name-value-too-long"
            }
        }

        public var description: String {
            switch reason {
            case .controlCharacter(let offset, let byte):
                let hex = String(byte, radix: 16, uppercase: true)
                return
                    "control character 0x\(hex.count == 1 ? "0" + hex : hex) at byte \(offset) (RFC 6265bis §5.6 step 1)"
            case .emptyNameAndValue:
                return "empty name and value (RFC 6265bis §5.7 step 2)"
            case .nameValueTooLong(let length):
                return "name and value are \(length) bytes, over the 4096-byte limit (RFC 6265bis §5.6 step 5)"
            }
        }
    }
}

/// The attribute names RFC 6265bis §5.6 and CHIPS give meaning to. An open set: anything else is `.unknown`.
public struct CookieAttributeKind: Sendable, Hashable, CustomStringConvertible {
    @usableFromInline let rawValue: UInt8
    @usableFromInline init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A small dense number per kind (0 for unknown), for table lookups.
    public var index: Int { Int(rawValue) }

    public static let unknown = CookieAttributeKind(rawValue: 0)
    public static let expires = CookieAttributeKind(rawValue: 1)
    public static let maxAge = CookieAttributeKind(rawValue: 2)
    public static let domain = CookieAttributeKind(rawValue: 3)
    public static let path = CookieAttributeKind(rawValue: 4)
    public static let secure = CookieAttributeKind(rawValue: 5)
    public static let httpOnly = CookieAttributeKind(rawValue: 6)
    public static let sameSite = CookieAttributeKind(rawValue: 7)
    /// CHIPS (draft-cutler-httpbis-partitioned-cookies).
    public static let partitioned = CookieAttributeKind(rawValue: 8)

    /// The canonical spelling, used when an attribute is added.
    public var canonicalName: String {
        switch self {
        case .expires: return "Expires"
        case .maxAge: return "Max-Age"
        case .domain: return "Domain"
        case .path: return "Path"
        case .secure: return "Secure"
        case .httpOnly: return "HttpOnly"
        case .sameSite: return "SameSite"
        case .partitioned: return "Partitioned"
        default: return ""
        }
    }

    /// Whether the attribute is a flag (no value).
    public var isFlag: Bool { self == .secure || self == .httpOnly || self == .partitioned }

    public var description: String { self == .unknown ? "unknown" : canonicalName }

    /// The kind for an attribute name, matched case-insensitively.
    public init(name: String) {
        var utf8 = Array(name.utf8)
        self = utf8.withUnsafeMutableBufferPointer { Self.classify(UnsafeBufferPointer($0), 0, $0.count) }
    }

    /// Classifies an attribute name by packing its bytes, ASCII-lowercased (`| 0x20`), into two words and
    /// comparing them with the packed names. `| 0x20` only maps letters (and a CR, rejected anyway) onto
    /// the letters and `-` of these names, so nothing else can match.
    @usableFromInline
    static func classify(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> CookieAttributeKind {
        let n = end - start
        guard n >= 4 && n <= 11 else { return .unknown }
        var w0: UInt64 = 0
        var w1: UInt64 = 0
        if let base = b.baseAddress, end >= 8 {
            // Unaligned little-endian loads of eight bytes inside the buffer: from the name's start or, for a name
            // near the end of the line (a last attribute), ending where the name ends, shifted down.
            let raw = UnsafeRawPointer(base)
            let n0 = min(n, 8)
            let m0: UInt64 = n0 == 8 ? ~0 : (1 << UInt64(8 * n0)) - 1
            if start + 8 <= b.count {
                w0 = raw.loadUnaligned(fromByteOffset: start, as: UInt64.self).littleEndian & m0
            } else {
                w0 = raw.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self).littleEndian >> UInt64(64 - 8 * n0)
            }
            w0 |= 0x2020_2020_2020_2020 & m0
            if n > 8 {
                // The name's last n - 8 bytes (its end is at least 11 bytes into the buffer).
                w1 = raw.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self).littleEndian >> UInt64(128 - 8 * n)
                w1 |= 0x2020_2020_2020_2020 & ((1 << UInt64(8 * (n - 8))) - 1)
            }
        } else {
            for k in 0..<min(n, 8) { w0 |= UInt64(b[start + k] | 0x20) << UInt64(8 * k) }
            if n > 8 { for k in 8..<n { w1 |= UInt64(b[start + k] | 0x20) << UInt64(8 * (k - 8)) } }
        }
        switch n {
        case 4: return w0 == 0x6874_6170 ? .path : .unknown
        case 6:
            if w0 == 0x6e69_616d_6f64 { return .domain }
            if w0 == 0x6572_7563_6573 { return .secure }
            return .unknown
        case 7:
            if w0 == 0x73_6572_6970_7865 { return .expires }
            if w0 == 0x65_6761_2d78_616d { return .maxAge }
            return .unknown
        case 8:
            if w0 == 0x796c_6e6f_7074_7468 { return .httpOnly }
            if w0 == 0x6574_6973_656d_6173 { return .sameSite }
            return .unknown
        case 11: return w0 == 0x6f69_7469_7472_6170 && w1 == 0x64_656e ? .partitioned : .unknown
        default: return .unknown
        }
    }
}

extension SetCookie {
    /// Where each part of the field value lies; recomputed after every edit.
    @usableFromInline
    struct Layout: Sendable {
        var pair: Pair
        var spans: ContiguousArray<Span>

        /// The name-value-pair (RFC 6265bis §5.6 steps 2–4) and the reason a user agent would ignore the line.
        @usableFromInline
        struct Pair: Sendable {
            var pairEnd: Int32
            var nameStart: Int32
            var nameEnd: Int32
            var valueStart: Int32
            var valueEnd: Int32
            var pairHasEquals: Bool
            var problem: Problem?
        }

        /// One cookie-av: `start` is just after its `;`, `end` at the next `;` or the end.
        @usableFromInline
        struct Span: Sendable {
            var start: Int32
            var end: Int32
            var nameStart: Int32
            var nameEnd: Int32
            var valueStart: Int32
            var valueEnd: Int32
            var hasEquals: Bool
            var kind: CookieAttributeKind
        }

        /// RFC 6265bis §5.6, both algorithms, recording positions instead of copying.
        static func parse(_ b: UnsafeBufferPointer<UInt8>, spareSpans: Int = 0) -> Layout {
            parse(b, reusing: ContiguousArray(), spareSpans: spareSpans)
        }

        /// ``parse(_:spareSpans:)`` into `spans`' storage (emptied first): no allocation when it is unique and
        /// large enough.
        static func parse(
            _ b: UnsafeBufferPointer<UInt8>, reusing spans: consuming ContiguousArray<Span>, spareSpans: Int
        ) -> Layout {
            var list = ArraySpans(spans: spans, room: 8 + spareSpans)
            list.spans.removeAll(keepingCapacity: true)
            let pair = parse(b, into: &list)
            return Layout(pair: pair, spans: list.spans)
        }

        /// A ``SetCookie``'s own attribute list, with room made for the usual number of attributes at once when the
        /// line turns out to have any (a line with more grows the list).
        struct ArraySpans: SetCookieSpans {
            var spans: ContiguousArray<Span>
            let room: Int
            mutating func reserveForAttributes() { if spans.capacity < room { spans.reserveCapacity(room) } }
            mutating func append(_ span: Span) { spans.append(span) }
        }

        /// RFC 6265bis §5.6, both algorithms: the pair's positions returned, each cookie-av's appended to `spans`.
        @inline(__always)
        static func parse<Spans: SetCookieSpans & ~Copyable>(_ b: UnsafeBufferPointer<UInt8>, into spans: inout Spans)
            -> Pair
        {
            let count = b.count
            // Step 1 (control characters) rides on the scans for ';' and '=' below, which look at every byte: they
            // flag a word with a byte under 0x20 or a 0x7F (an allowed HTAB too), and a flagged line is then
            // decided by the exact test.
            var controls: UInt64 = 0
            var pair = scanPair(b, controls: &controls)
            var position = Int(pair.pairEnd)
            if position < count { spans.reserveForAttributes() }
            while position < count {
                // Attributes steps 2–3: skip the ';', consume up to the next one.
                let start = position + 1
                let (end, avEquals) = scanSegment(b, from: start, controls: &controls)
                spans.append(span(b, from: start, to: end, equals: avEquals))
                position = end
            }
            if controls != 0, let offset = (0..<count).first(where: { ASCII.isForbiddenControl(b[$0]) }) {
                pair.problem = Problem(reason: .controlCharacter(offset: offset, byte: b[offset]))
            } else {
                pair.problem = lengthProblem(pair)
            }
            return pair
        }

        /// The name-value-pair's bounds (RFC 6265bis §5.6 steps 2–4), its problem not looked for: it ends at the
        /// first `;` (or the end), step 3 splits it at its first `=`, and both sides are trimmed; without `=` the
        /// name is empty, at the value's start. Control characters are flagged into `controls` as by
        /// ``scanSegment(_:from:controls:)``.
        @inline(__always)
        static func scanPair(_ b: UnsafeBufferPointer<UInt8>, controls: inout UInt64) -> Pair {
            let (end, equals) = scanSegment(b, from: 0, controls: &controls)
            var (nameStart, nameEnd) = (0, 0)
            var valueStart = 0
            if equals >= 0 {
                (nameStart, nameEnd) = trim(b, 0, equals)
                valueStart = equals + 1
            }
            let valueEnd: Int
            (valueStart, valueEnd) = trim(b, valueStart, end)
            if equals < 0 { (nameStart, nameEnd) = (valueStart, valueStart) }
            return Pair(
                pairEnd: Int32(end), nameStart: Int32(nameStart), nameEnd: Int32(nameEnd),
                valueStart: Int32(valueStart), valueEnd: Int32(valueEnd), pairHasEquals: equals >= 0, problem: nil)
        }

        /// Step 4's reasons to ignore a line that the pair's length gives: no name and no value, or the two over
        /// ``SetCookie/maximumNameValueLength`` together.
        @inline(__always)
        static func lengthProblem(_ pair: Pair) -> Problem? {
            let length = Int(pair.nameEnd - pair.nameStart) + Int(pair.valueEnd - pair.valueStart)
            if length == 0 { return Problem(reason: .emptyNameAndValue) }
            if length > SetCookie.maximumNameValueLength { return Problem(reason: .nameValueTooLong(length)) }
            return nil
        }

        /// From `from`, the index of the next `;` (or the end) and of the first `=` before it (or -1). Eight bytes
        /// at a time: a word without either byte is skipped whole (the SWAR zero-byte test: a word has a byte
        /// equal to `c` when `(x - 0x01…01) & ~x & 0x80…80` is non-zero for `x = w ^ c·0x01…01`; it may also
        /// flag a byte after a true match, so flagged words are looked at byte by byte). The bytes after the last
        /// whole word are read as the line's last eight, shifted down (a line under eight bytes, byte by byte). Every
        /// word and byte looked at is also tested for control characters (under 0x20, or 0x7F), or-ed into
        /// `controls`: zero means none.
        @inline(__always)
        static func scanSegment(_ b: UnsafeBufferPointer<UInt8>, from: Int, controls: inout UInt64) -> (
            end: Int, equals: Int
        ) {
            let count = b.count
            var i = from
            var equals = -1
            if let base = b.baseAddress {
                while i + 8 <= count {
                    let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self).littleEndian
                    controls |= controlFlags(w)
                    var flagged = flags(w, equalTo: 0x3B)
                    if equals < 0 { flagged |= flags(w, equalTo: 0x3D) }
                    if flagged == 0 {
                        i += 8
                        continue
                    }
                    // The lowest flagged byte is a true match (false flags only sit above one).
                    let k = i + flagged.trailingZeroBitCount >> 3
                    if b[k] == 0x3B { return (k, equals) }
                    equals = k
                    i = k + 1
                }
                if i < count && count >= 8 {
                    // The last bytes: the line's last word shifted down to byte `i` (zeros above it, not looked at).
                    let shift = UInt64(8 &* (i &- (count &- 8)))
                    let w = UnsafeRawPointer(base + (count &- 8)).loadUnaligned(as: UInt64.self).littleEndian &>> shift
                    let valid: UInt64 = 0x8080_8080_8080_8080 &>> shift
                    controls |= controlFlags(w) & valid
                    let semicolons = flags(w, equalTo: 0x3B) & valid
                    let at = semicolons == 0 ? count : i &+ semicolons.trailingZeroBitCount &>> 3
                    if equals < 0 {
                        let equalSigns = flags(w, equalTo: 0x3D) & valid
                        // Each mask's lowest bit is a true match; an '=' counts when it comes before the ';'.
                        let k = i &+ equalSigns.trailingZeroBitCount &>> 3
                        if equalSigns != 0 && k < at { equals = k }
                    }
                    return (at, equals)
                }
            }
            while i < count {
                let byte = b[i]
                controls |= UInt64((byte < 0x20 ? 1 : 0) | (byte == 0x7F ? 1 : 0))
                if byte == 0x3B { return (i, equals) }
                if byte == 0x3D && equals < 0 { equals = i }
                i += 1
            }
            return (count, equals)
        }

        /// The high bit of each byte of `w` that may equal `c` (the SWAR zero-byte test on `w ^ c·0x01…01`): the
        /// lowest flagged byte is a true match; a byte just above a true match may be flagged too.
        @inline(__always)
        static func flags(_ w: UInt64, equalTo c: UInt64) -> UInt64 {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let x = w ^ (ones &* c)
            return (x &- ones) & ~x & (ones &* 0x80)
        }

        /// The high bit of each byte of `w` that may be a control character (under 0x20, or 0x7F; an allowed HTAB
        /// too), as ``flags(_:equalTo:)``: none flagged means none there.
        @inline(__always)
        static func controlFlags(_ w: UInt64) -> UInt64 {
            let ones: UInt64 = 0x0101_0101_0101_0101
            return (w &- ones &* 0x20) & ~w & (ones &* 0x80) | flags(w, equalTo: 0x7F)
        }

        /// One cookie-av between `start` (after its ';') and `end`, its first `=` at `equals` or -1 (RFC 6265bis
        /// §5.6 attributes steps 4–5).
        @inline(__always)
        static func span(_ b: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, equals: Int) -> Span {
            let (ns, ne) = trim(b, start, equals >= 0 ? equals : end)
            var (vs, ve) = (end, end)
            if equals >= 0 { (vs, ve) = trim(b, equals + 1, end) }
            return Span(
                start: Int32(truncatingIfNeeded: start), end: Int32(truncatingIfNeeded: end),
                nameStart: Int32(truncatingIfNeeded: ns), nameEnd: Int32(truncatingIfNeeded: ne),
                valueStart: Int32(truncatingIfNeeded: vs), valueEnd: Int32(truncatingIfNeeded: ve),
                hasEquals: equals >= 0, kind: CookieAttributeKind.classify(b, ns, ne))
        }

        /// One cookie-av between `start` (after its ';') and `end` (RFC 6265bis §5.6 attributes steps 3–5).
        static func span(in b: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Span {
            var equals = start
            while equals < end && b[equals] != 0x3D { equals += 1 }
            return span(b, from: start, to: end, equals: equals < end ? equals : -1)
        }

        @inline(__always)
        static func trim(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> (Int, Int) {
            var s = start
            var e = end
            while s < e && ASCII.isWSP(b[s]) { s += 1 }
            while e > s && ASCII.isWSP(b[e - 1]) { e -= 1 }
            return (s, e)
        }
    }
}
