/// IP hosts as the URL Standard's host parser reads them (WHATWG URL §3.5, which draft-ietf-httpbis-layered-cookies
/// uses for request hosts and Domain values): `[v6]` is an IPv6 address, a host whose last label is a number is an
/// IPv4 address in any of the forms `inet_aton` takes (`127.1`, `0x7f.0.0.1`, `0177.0.0.1`, `2130706433`), and both
/// are compared in their serialised form (`::1` for `[0:0::1]`, `127.0.0.1` for `0x7f.1`).
public enum IPHost {
    /// What host parsing makes of an ASCII host string (no brackets stripped yet).
    public enum Parsed: Sendable, Hashable {
        /// Not an IP address: a domain, compared as written (lowercased).
        case domain(String)
        /// An IPv4 or IPv6 address, serialised (IPv6 without brackets).
        case ip(String)
        /// Host parsing fails: a bracketed value that is no IPv6 address, an unbracketed `:`, or a number out of range.
        case invalid(String)
    }

    public static func parse(_ host: String) -> Parsed {
        if let parsed = host.utf8.withContiguousStorageIfAvailable({ parse(host, $0) }) { return parsed }
        return Array(host.utf8).withUnsafeBufferPointer { parse(host, $0) }
    }

    private static func parse(_ host: String, _ b: UnsafeBufferPointer<UInt8>) -> Parsed {
        if b.first == 0x5B {
            guard b.last == 0x5D, b.count > 2, let pieces = ipv6(ArraySlice(b[1..<(b.count - 1)])) else {
                return .invalid("\(host) is not an IPv6 address")
            }
            return .ip(serialise(pieces))
        }
        if b.contains(0x3A) { return .invalid("\(host) has a ':' outside brackets") }
        if endsInANumber(b) {
            guard let v4 = ipv4(b) else { return .invalid("\(host) ends in a number but is not an IPv4 address") }
            return .ip(v4.isSerialised ? host : serialise(v4.address))
        }
        return .domain(host)
    }

    /// A request host (IPv6 already without brackets) in its serialised form; nil when host parsing fails.
    public static func canonicalRequestHost(_ host: String) -> String? {
        if host.utf8.contains(0x3A) {
            guard let pieces = ipv6(ArraySlice(host.utf8)) else { return nil }
            return serialise(pieces)
        }
        switch parse(host) {
        case .domain(let d): return d
        case .ip(let ip): return ip
        case .invalid: return nil
        }
    }

    /// WHATWG URL "ends in a number": the last label (a trailing empty label aside) is decimal digits, or `0x`
    /// and hex digits.
    static func endsInANumber(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        var end = b.count
        if end > 0 && b[end - 1] == 0x2E {
            // A trailing dot ends an empty label, which does not count; a host that is only "." has no label.
            guard end > 1 else { return false }
            end -= 1
        }
        var start = end
        while start > 0 && b[start - 1] != 0x2E { start -= 1 }
        guard start < end else { return false }
        var i = start
        while i < end && b[i] &- 0x30 < 10 { i += 1 }
        if i == end { return true }
        guard end - start >= 2, b[start] == 0x30, b[start + 1] | 0x20 == 0x78 else { return false }
        i = start + 2
        while i < end, hex(b[i]) != nil { i += 1 }
        return i == end
    }

    /// The WHATWG IPv4 parser: up to four parts, each decimal, octal (leading 0) or hex (`0x`); the last fills
    /// what the others leave. `isSerialised`: the input is already the address's serialisation (four decimal
    /// parts without leading zeros), so a caller can keep it instead of writing it again.
    static func ipv4(_ b: UnsafeBufferPointer<UInt8>) -> (address: UInt32, isSerialised: Bool)? {
        var end = b.count
        if end > 0 && b[end - 1] == 0x2E { end -= 1 }
        guard end > 0 else { return nil }
        var address: UInt64 = 0
        var count = 0
        var plainDecimal = true
        var i = 0
        while true {
            // One part, up to the next dot.
            guard count < 4, i < end, b[i] != 0x2E else { return nil }
            var radix: UInt64 = 10
            if end - i >= 2 && b[i] == 0x30 && b[i + 1] | 0x20 == 0x78 {
                radix = 16
                i += 2
                plainDecimal = false
            } else if end - i >= 2 && b[i] == 0x30 && b[i + 1] != 0x2E {
                radix = 8
                i += 1
                plainDecimal = false
            }
            var n: UInt64 = 0
            while i < end && b[i] != 0x2E {
                guard let v = hex(b[i]), UInt64(v) < radix else { return nil }
                n = n * radix + UInt64(v)
                guard n <= UInt64(UInt32.max) else { return nil }
                i += 1
            }
            count += 1
            if i == end {
                // The last part fills the bytes the others left.
                guard n < UInt64(1) << UInt64(8 * (5 - count)) else { return nil }
                address = address << UInt64(8 * (5 - count)) | n
                break
            }
            guard n <= 255 else { return nil }
            address = address << 8 | n
            i += 1
        }
        return (UInt32(address), plainDecimal && count == 4 && end == b.count)
    }

    /// Dotted decimal.
    static func serialise(_ v4: UInt32) -> String {
        String(unsafeUninitializedCapacity: 15) { out in
            var n = 0
            for shift in stride(from: 24, through: 0, by: -8) {
                let octet = Int(v4 >> UInt32(shift) & 0xFF)
                if octet >= 100 {
                    out[n] = UInt8(0x30 + octet / 100)
                    n += 1
                }
                if octet >= 10 {
                    out[n] = UInt8(0x30 + octet / 10 % 10)
                    n += 1
                }
                out[n] = UInt8(0x30 + octet % 10)
                n += 1
                if shift > 0 {
                    out[n] = 0x2E
                    n += 1
                }
            }
            return n
        }
    }

    /// The WHATWG IPv6 parser: eight 16-bit pieces, one `::`, an IPv4 address in the last 32 bits (dotted decimal).
    static func ipv6(_ b: ArraySlice<UInt8>) -> [UInt16]? {
        var pieces = [UInt16](repeating: 0, count: 8)
        var index = 0
        var compress: Int? = nil
        var i = b.startIndex
        let end = b.endIndex
        if i < end && b[i] == 0x3A {
            guard i + 1 < end, b[i + 1] == 0x3A else { return nil }
            i += 2
            index += 1
            compress = index
        }
        while i < end {
            guard index < 8 else { return nil }
            if b[i] == 0x3A {
                guard compress == nil else { return nil }
                i += 1
                index += 1
                compress = index
                continue
            }
            var value = 0
            var length = 0
            while length < 4, i < end, let h = hex(b[i]) {
                value = value * 16 + h
                i += 1
                length += 1
            }
            if i < end && b[i] == 0x2E {
                // An IPv4 address: four decimal parts without leading zeros, in the last two pieces.
                guard length > 0, index <= 6 else { return nil }
                i -= length
                var seen = 0
                while i < end {
                    var part: Int? = nil
                    if seen > 0 {
                        guard b[i] == 0x2E, seen < 4 else { return nil }
                        i += 1
                    }
                    guard i < end, b[i] &- 0x30 < 10 else { return nil }
                    while i < end, b[i] &- 0x30 < 10 {
                        let d = Int(b[i] &- 0x30)
                        if part == 0 { return nil }
                        part = (part ?? 0) * 10 + d
                        guard part! <= 255 else { return nil }
                        i += 1
                    }
                    pieces[index] = pieces[index] * 0x100 + UInt16(part!)
                    seen += 1
                    if seen == 2 || seen == 4 { index += 1 }
                }
                guard seen == 4 else { return nil }
                break
            }
            if i < end && b[i] == 0x3A {
                i += 1
                guard i < end else { return nil }
            } else if i < end {
                return nil
            }
            guard length > 0 else { return nil }
            pieces[index] = UInt16(value)
            index += 1
        }
        if let c = compress {
            var swaps = index - c
            index = 7
            while index != 0 && swaps > 0 {
                pieces.swapAt(index, c + swaps - 1)
                index -= 1
                swaps -= 1
            }
        } else if index != 8 {
            return nil
        }
        return pieces
    }

    /// The WHATWG IPv6 serialiser: lowercase hex, the first longest run of two or more zero pieces as `::`.
    static func serialise(_ pieces: [UInt16]) -> String {
        var bestStart = -1
        var bestLength = 1
        var i = 0
        while i < 8 {
            if pieces[i] == 0 {
                var j = i
                while j < 8 && pieces[j] == 0 { j += 1 }
                if j - i > bestLength {
                    bestStart = i
                    bestLength = j - i
                }
                i = j
            } else {
                i += 1
            }
        }
        var out = ""
        var ignore0 = false
        for (k, piece) in pieces.enumerated() {
            if ignore0 && piece == 0 { continue }
            ignore0 = false
            if k == bestStart {
                out += k == 0 ? "::" : ":"
                ignore0 = true
                continue
            }
            out += String(piece, radix: 16)
            if k != 7 { out += ":" }
        }
        return out
    }

    static func hex(_ b: UInt8) -> Int? {
        if b &- 0x30 < 10 { return Int(b &- 0x30) }
        let l = b | 0x20
        return l &- 0x61 < 6 ? Int(l &- 0x61) + 10 : nil
    }
}
