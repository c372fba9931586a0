/// Percent-encoding (RFC 3986 §2.1): `%` and two hex digits for one byte.
public enum PercentEncoding {
    /// What to do with a `%` that is not followed by two hex digits.
    public enum Invalid: Sendable {
        /// Keep it as written (a query string typed by a person: the WHATWG URL parser does the same).
        case keep
        /// The whole input is invalid (credentials in a URL, where a guess would send the wrong ones).
        case refuse
    }

    /// The bytes `bytes` encode. `plusIsSpace`: `+` is a space (application/x-www-form-urlencoded queries).
    public static func decode<C: Collection<UInt8>>(_ bytes: C, plusIsSpace: Bool = false, invalid: Invalid)
        -> [UInt8]?
    {
        let b = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        while i < b.count {
            let c = b[i]
            if c == 0x25 {
                if i + 2 < b.count, let hi = ByteClass.hexValue(b[i + 1]), let lo = ByteClass.hexValue(b[i + 2]) {
                    out.append(UInt8(hi << 4 | lo))
                    i += 3
                    continue
                }
                if invalid == .refuse { return nil }
            }
            out.append(plusIsSpace && c == 0x2B ? 0x20 : c)
            i += 1
        }
        return out
    }
}
