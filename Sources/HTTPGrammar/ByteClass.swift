// Byte classes of the HTTP grammars (RFC 9110 §5.5, §5.6; RFC 5234 Appendix B.1), shared by the proxy's codec
// and the TLS layer. Pure: no Foundation, no I/O.

/// Byte predicates of RFC 9110 and RFC 5234, on `UInt8` so that parsers never build Characters.
public enum ByteClass {
    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    /// (RFC 9110 §5.6.2).
    @inlinable
    public static func isTokenChar(_ byte: UInt8) -> Bool {
        // One bit per tchar in two 64-bit words (bytes 0–63 and 64–127).
        let low: UInt64 = 0x03FF_6CFA_0000_0000
        let high: UInt64 = 0x57FF_FFFF_C7FF_FFFE
        let word = byte < 64 ? low : (byte < 128 ? high : 0)
        return (word >> UInt64(byte & 63)) & 1 != 0
    }

    /// OWS / BWS characters: SP / HTAB (RFC 9110 §5.6.3).
    @inlinable
    public static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// DIGIT = %x30-39.
    @inlinable
    public static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    /// HEXDIG's value, or nil (RFC 5234: case-insensitive).
    @inlinable
    public static func hexValue(_ byte: UInt8) -> Int? {
        if byte &- 0x30 < 10 { return Int(byte &- 0x30) }
        let lower = byte | 0x20
        if lower &- 0x61 < 6 { return Int(lower &- 0x61 &+ 10) }
        return nil
    }

    /// A CTL other than HTAB: %x00-08 / %x0A-1F / %x7F. None of them is a field-vchar (RFC 9110 §5.5).
    @inlinable
    public static func isControl(_ byte: UInt8) -> Bool { (byte < 0x20 && byte != 0x09) || byte == 0x7F }

    /// Whether `count` bytes at `p` hold a CTL other than HTAB (``isControl(_:)``), eight bytes at a time: a word
    /// with no byte below 0x20 and no 0x7F is passed with a few instructions, any other is checked byte by byte.
    @inlinable
    public static func containsControl(_ p: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= count {
            let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
            let del = w ^ (0x7F &* ones)
            // Nonzero when some byte is < 0x20, or == 0x7F (a zero byte of `del`).
            if ((w &- 0x20 &* ones) & ~w | (del &- ones) & ~del) & highs != 0 {
                for k in i..<(i + 8) where isControl(p[k]) { return true }
            }
            i += 8
        }
        while i < count {
            if isControl(p[i]) { return true }
            i += 1
        }
        return false
    }

    /// qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text (RFC 9110 §5.6.4).
    @inlinable
    public static func isQuotedText(_ byte: UInt8) -> Bool {
        byte == 0x09 || byte == 0x20 || byte == 0x21 || (byte >= 0x23 && byte != 0x5C && byte != 0x7F)
    }

    /// What may follow a backslash in a quoted-pair: HTAB / SP / VCHAR / obs-text (RFC 9110 §5.6.4).
    @inlinable
    public static func isQuotedPairChar(_ byte: UInt8) -> Bool { byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }

    /// Whether every byte is ASCII (below 0x80), read eight at a time.
    public static func isASCII(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { b in
            var (i, high): (Int, UInt64) = (0, 0)
            while i + 8 <= b.count {
                high |= UnsafeRawPointer(b.baseAddress! + i).loadUnaligned(as: UInt64.self)
                i += 8
            }
            while i < b.count {
                high |= UInt64(b[i])
                i += 1
            }
            return high & 0x8080_8080_8080_8080 == 0
        }
    }

    /// ASCII lowercase of one byte; other bytes unchanged.
    @inlinable
    public static func lower(_ byte: UInt8) -> UInt8 { byte &- 0x41 < 26 ? byte | 0x20 : byte }

    /// Whether `bytes` are `lowercase` (lowercase ASCII) but for ASCII case: the one meaning of "case-insensitive"
    /// for field names, tokens and host names (RFC 9110 §5.1, §5.6.2; RFC 4343). Non-ASCII bytes compare exactly.
    @inlinable
    public static func equalsLowercase<A: Collection<UInt8>, B: Collection<UInt8>>(_ bytes: A, _ lowercase: B) -> Bool {
        guard bytes.count == lowercase.count else { return false }
        let contiguous = bytes.withContiguousStorageIfAvailable { a in
            lowercase.withContiguousStorageIfAvailable { b in equalsLowercase(contiguous: a, b) }
        }
        if let result = contiguous ?? nil { return result }
        var other = lowercase.makeIterator()
        for b in bytes where lower(b) != other.next() { return false }
        return true
    }

    /// `bytes` as a string, ASCII-lowercased while copied (other bytes unchanged; invalid UTF-8 is repaired, as
    /// `String(decoding:as:)` does).
    @inlinable
    public static func lowercasedString<C: Collection<UInt8>>(_ bytes: C) -> String {
        let count = bytes.count
        let contiguous = bytes.withContiguousStorageIfAvailable { b in
            String(unsafeUninitializedCapacity: count) { out in
                for i in 0..<count { out[i] = lower(b[i]) }
                return count
            }
        }
        if let contiguous { return contiguous }
        return String(unsafeUninitializedCapacity: count) { out in
            var k = 0
            for b in bytes {
                out[k] = lower(b)
                k += 1
            }
            return count
        }
    }

    /// Whether `bytes[start..<end]` is the lowercase ASCII `literal`, ignoring ASCII case (tokens compare
    /// case-insensitively, RFC 9110 §5.6.2).
    @inlinable
    public static func equalsLowercase(
        _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ literal: StaticString
    ) -> Bool {
        guard end - start == literal.utf8CodeUnitCount else { return false }
        return equalsLowercase(
            contiguous: UnsafeBufferPointer(rebasing: bytes[start..<end]),
            UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// ``equalsLowercase(_:_:)`` of two buffers of one length.
    @inlinable @inline(__always)
    static func equalsLowercase(contiguous a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = a.count
        if n >= 8, let pa = a.baseAddress, let pb = b.baseAddress {
            // Eight bytes at a time, the last word overlapping the one before it.
            var i = 0
            while true {
                let at = Swift.min(i, n - 8)
                let x = UnsafeRawPointer(pa + at).loadUnaligned(as: UInt64.self)
                if lowerWord(x) != UnsafeRawPointer(pb + at).loadUnaligned(as: UInt64.self) { return false }
                i += 8
                if i >= n { return true }
            }
        }
        for i in 0..<n where lower(a[i]) != b[i] { return false }
        return true
    }

    /// ``lower(_:)`` of eight bytes at once: a byte gets 0x20 when its low seven bits are at least `A` and at most
    /// `Z` and its top bit is clear (each sum stays within its byte: no carry reaches the next one).
    @inlinable @inline(__always)
    static func lowerWord(_ x: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let heptets = x & (ones &* 0x7F)
        let atLeastA = heptets &+ ones &* (0x80 - 0x41)
        let pastZ = heptets &+ ones &* (0x80 - 0x5B)
        let upper = atLeastA & ~pastZ & ~x & (ones &* 0x80)
        return x | upper >> 2
    }
}
