// Byte classes used by the cookie grammars (RFC 6265bis §4.1.1, §5.1.1, §5.6; RFC 5234 Appendix B.1).

import HTTPGrammar

@usableFromInline
enum ASCII {
    /// WSP = SP / HTAB (RFC 5234 Appendix B.1); RFC 6265bis §5.6 step 4 trims these.
    @inlinable
    static func isWSP(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// CTL characters other than HTAB: %x00-08 / %x0A-1F / %x7F (RFC 6265bis §5.6 step 1).
    @inlinable
    static func isForbiddenControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    /// DIGIT = %x30-39.
    @inlinable
    static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    /// ALPHA = %x41-5A / %x61-7A.
    @inlinable
    static func isAlpha(_ byte: UInt8) -> Bool { (byte | 0x20) &- 0x61 < 26 }

    @inlinable
    static func lower(_ byte: UInt8) -> UInt8 { ByteClass.lower(byte) }

    /// cookie-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E (RFC 6265bis §4.1.1):
    /// US-ASCII excluding CTLs, whitespace, DQUOTE, comma, semicolon and backslash.
    @inlinable
    static func isCookieOctet(_ byte: UInt8) -> Bool {
        byte == 0x21 || (byte >= 0x23 && byte <= 0x2B) || (byte >= 0x2D && byte <= 0x3A)
            || (byte >= 0x3C && byte <= 0x5B) || (byte >= 0x5D && byte <= 0x7E)
    }

    /// tchar (RFC 9110 §5.6.2), the characters of a `token` such as a cookie-name (the one table, in HTTPGrammar).
    @inlinable
    static func isTokenChar(_ byte: UInt8) -> Bool { ByteClass.isTokenChar(byte) }

    /// Case-insensitive ASCII comparison of a byte range against a lowercase ASCII literal.
    @inlinable
    static func equalsLowercase(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ literal: StaticString)
        -> Bool
    {
        ByteClass.equalsLowercase(bytes, start, end, literal)
    }

    /// Whether `bytes` begins with the lowercase ASCII `prefix`, ignoring case. Inlinable: a generic called
    /// from another module is otherwise not specialised (thousands of instructions per call).
    @inlinable
    static func hasPrefixIgnoringCase<C: Collection<UInt8>>(_ bytes: C, _ prefix: String) -> Bool {
        var iterator = bytes.makeIterator()
        for p in prefix.utf8 {
            guard let b = iterator.next(), lower(b) == p else { return false }
        }
        return true
    }
}

extension String {
    /// Decodes bytes as UTF-8, replacing invalid sequences with U+FFFD (display only, never re-encoded).
    @inlinable
    init<C: Collection<UInt8>>(lossy bytes: C) {
        self = String(decoding: bytes, as: UTF8.self)
    }

    /// ASCII-only lowercase, leaving other bytes untouched (host names and attribute names).
    /// (Scanned in place when the string is contiguous, as native strings are: per-message hosts pass here.)
    package var asciiLowercased: String {
        let upper = { (b: UInt8) in b &- 0x41 < 26 }
        let hasUpper =
            utf8.withContiguousStorageIfAvailable { $0.contains(where: upper) } ?? utf8.contains(where: upper)
        return hasUpper ? ByteClass.lowercasedString(utf8) : self
    }
}
