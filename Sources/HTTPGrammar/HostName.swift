/// The host of an authority (RFC 3986 §3.2.2) as the proxy accepts it: a DNS name, a dotted-decimal IPv4
/// address, or an IPv6 address (without its brackets). Anything else is refused, because a host the proxy reads
/// one way can be read another way by the resolver, the upstream or a certificate: `0x7f.1` and `2130706433` are
/// 127.0.0.1 to `inet_aton`, `a,DNS:b` is two names to OpenSSL's SAN syntax, `%` starts a zone or an escape.
public enum HostName {
    public enum Kind: Sendable, Hashable {
        case dnsName
        case ipv4
        case ipv6
    }

    /// What `bytes` is, or nil when it is none of the three. A DNS name: labels of letters, digits, `-` and `_`
    /// (underscores are common in development host names), 1–63 bytes each, 253 in all, no label starting or
    /// ending with `-`, and a last label that is not a number (WHATWG URL: such a host is read as IPv4).
    @inlinable
    public static func kind<C: Collection<UInt8>>(_ bytes: C) -> Kind? where C.Index == Int {
        if isIPv4(bytes) { return .ipv4 }
        if bytes.contains(0x3A) { return isIPv6(bytes) ? .ipv6 : nil }
        return isDNSName(bytes) ? .dnsName : nil
    }

    /// `kind` of a string's UTF-8 bytes.
    public static func kind(_ host: String) -> Kind? { kind(Array(host.utf8)) }

    /// dec-octet "." dec-octet "." dec-octet "." dec-octet (RFC 3986 §3.2.2): no leading zeros, each at most 255.
    @inlinable
    public static func isIPv4<C: Collection<UInt8>>(_ bytes: C) -> Bool where C.Index == Int {
        var parts = 0
        var value = 0
        var digits = 0
        var leadingZero = false
        for b in bytes {
            if b == 0x2E {
                guard digits > 0, parts < 3 else { return false }
                parts += 1
                (value, digits, leadingZero) = (0, 0, false)
            } else if ByteClass.isDigit(b) {
                if digits == 0 { leadingZero = b == 0x30 } else if leadingZero { return false }
                digits += 1
                value = value * 10 + Int(b &- 0x30)
                guard digits <= 3, value <= 255 else { return false }
            } else {
                return false
            }
        }
        return parts == 3 && digits > 0
    }

    /// IPv6address (RFC 3986 §3.2.2): eight groups of 1–4 hex digits, one `::` standing for one or more zero
    /// groups, and optionally an IPv4 address as the last 32 bits. No zone identifier.
    @inlinable
    public static func isIPv6<C: Collection<UInt8>>(_ bytes: C) -> Bool where C.Index == Int {
        let b = Array(bytes)
        guard b.count >= 2, b.count <= 45 else { return false }
        var groups = 0
        var sawDoubleColon = false
        var i = 0
        if b[0] == 0x3A {
            guard b[1] == 0x3A else { return false }
            sawDoubleColon = true
            i = 2
            if i == b.count { return true }  // "::"
        }
        while i < b.count {
            // A group, or the embedded IPv4 address at the end.
            var j = i
            while j < b.count && ByteClass.hexValue(b[j]) != nil { j += 1 }
            if j < b.count && b[j] == 0x2E {
                guard isIPv4(b[i...]), groups + 2 <= (sawDoubleColon ? 7 : 8) else { return false }
                groups += 2
                i = b.count
                break
            }
            guard j > i, j - i <= 4 else { return false }
            groups += 1
            i = j
            if i == b.count { break }
            guard b[i] == 0x3A else { return false }
            i += 1
            if i < b.count && b[i] == 0x3A {
                guard !sawDoubleColon else { return false }
                sawDoubleColon = true
                i += 1
                if i == b.count { break }
            } else if i == b.count {
                return false  // a trailing single colon
            }
        }
        return sawDoubleColon ? groups <= 7 : groups == 8
    }

    /// A DNS name as described at ``kind(_:)``; a single trailing dot (the root) is not part of it.
    @inlinable
    public static func isDNSName<C: Collection<UInt8>>(_ bytes: C) -> Bool where C.Index == Int {
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        var labelStart = bytes.startIndex
        var lastLabelIsNumber = false
        var i = bytes.startIndex
        while true {
            let atEnd = i == bytes.endIndex
            if atEnd || bytes[i] == 0x2E {
                let count = i - labelStart
                guard count >= 1, count <= 63, bytes[labelStart] != 0x2D, bytes[i - 1] != 0x2D else { return false }
                lastLabelIsNumber = isNumber(bytes[labelStart..<i])
                if atEnd { break }
                labelStart = i + 1
            } else {
                let c = bytes[i]
                guard ByteClass.isDigit(c) || (c | 0x20) &- 0x61 < 26 || c == 0x2D || c == 0x5F else { return false }
            }
            i += 1
        }
        return !lastLabelIsNumber
    }

    /// A label that an IPv4 parser reads as a number: decimal digits, or `0x` and hex digits (WHATWG URL §4.3).
    @inlinable
    static func isNumber<S: Collection<UInt8>>(_ label: S) -> Bool where S.Index == Int {
        guard !label.isEmpty else { return false }
        if label.allSatisfy(ByteClass.isDigit) { return true }
        let s = label.startIndex
        if label.count >= 2 && label[s] == 0x30 && label[s + 1] | 0x20 == 0x78 {
            return label.dropFirst(2).allSatisfy { ByteClass.hexValue($0) != nil }
        }
        return false
    }
}

extension HostName {
    /// Whether `host` is an IP literal (IPv4, or IPv6 without brackets) as ``kind(_:)`` reads it.
    /// Whether `host` is longer than `suffix` and ends with its bytes (exactly: callers pass lowercase names). On
    /// the UTF-8 bytes: the generic `elementsEqual` over `UTF8View` and `hasSuffix` (Unicode-canonical) cost
    /// hundreds of instructions, and a rule's `host *.example.com` asks once per response.
    public static func hasStrictSuffix(_ host: String, _ suffix: String) -> Bool {
        var (h, d) = (host, suffix)
        return h.withUTF8 { hb in
            d.withUTF8 { db in
                guard hb.count > db.count else { return false }
                let offset = hb.count - db.count
                for i in 0..<db.count where hb[offset + i] != db[i] { return false }
                return true
            }
        }
    }

    public static func isIPLiteral(_ host: String) -> Bool {
        switch kind(host) {
        case .ipv4, .ipv6: return true
        case .dnsName, nil: return false
        }
    }

    /// Whether `host` names this machine's loopback interface: `localhost` or a name under `.localhost`
    /// (RFC 6761 §6.3), an address in 127.0.0.0/8, `::1`, or 127.0.0.0/8 as an IPv4-mapped IPv6 address
    /// (`::ffff:127.0.0.1`, the form the kernel gives for IPv4 clients of a dual-stack socket). Lowercase input;
    /// IP addresses in their usual text form (dotted decimal, inet_ntop's IPv6).
    public static func isLoopback(_ host: String) -> Bool {
        // On the bytes: every accepted client's address passes here (String's hasSuffix and a generic starts(with:)
        // cost more than the rest of accepting it).
        var host = host
        return host.withUTF8 { b in
            func at(_ i: Int, _ text: StaticString) -> Bool {
                let n = text.utf8CodeUnitCount
                guard i >= 0 && i + n <= b.count else { return false }
                for k in 0..<n where b[i + k] != text.utf8Start[k] { return false }
                return true
            }
            let n = b.count
            if (n == 9 && at(0, "localhost")) || at(n - 10, ".localhost") || (n == 3 && at(0, "::1")) { return true }
            let start = at(0, "::ffff:") ? 7 : 0
            return at(start, "127.") && isIPv4(UnsafeBufferPointer(rebasing: b[start...]))
        }
    }

    /// Whether `host` is an unspecified address (`0.0.0.0`, `::`, `::ffff:0.0.0.0`): connecting to one reaches
    /// this machine.
    public static func isUnspecified(_ host: String) -> Bool {
        host == "0.0.0.0" || host == "::" || host == "::ffff:0.0.0.0"
    }
}
