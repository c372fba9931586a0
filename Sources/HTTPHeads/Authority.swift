import HTTPGrammar

/// `host[:port]` or `[v6][:port]` (RFC 3986 §3.2.2–3.2.3), parsed on bytes.
public enum Authority {
    /// The origin an authority names, host lowercased and a trailing root dot dropped; nil when the host is not
    /// a DNS name or IP literal (``HostName``) or the port is not 1–65535 in at most five digits.
    public static func parse(_ authority: Substring, defaultPort: Int) -> Origin? {
        var authority = authority
        return authority.withUTF8 { parse($0, defaultPort: defaultPort) }
    }

    public static func parse(_ a: UnsafeBufferPointer<UInt8>, defaultPort: Int) -> Origin? {
        guard let (host, port) = scan(a, defaultPort: defaultPort) else { return nil }
        // Lowercased while copied into the string.
        let text = String(unsafeUninitializedCapacity: host.count) { out in
            for i in 0..<host.count { out[i] = ByteClass.lower(a[host.lowerBound + i]) }
            return host.count
        }
        return Origin(host: text, port: port)
    }

    /// Whether `a` is an authority ``parse(_:defaultPort:)`` accepts, without building its host.
    public static func isValid(_ a: UnsafeBufferPointer<UInt8>) -> Bool { scan(a, defaultPort: 80) != nil }

    /// Where the host is (brackets and a trailing root dot excluded) and the port.
    package static func scan(_ a: UnsafeBufferPointer<UInt8>, defaultPort: Int) -> (Range<Int>, Int)? {
        guard let split = HostPort.split(a) else { return nil }
        let bracketed = split.bracketed
        let hostStart = split.host.lowerBound
        var hostEnd = split.host.upperBound
        var port = defaultPort
        // port = *DIGIT (RFC 3986 §3.2.3): an empty port is the scheme's default.
        if let digits = split.port, !digits.isEmpty {
            guard let p = HostPort.port(a, digits) else { return nil }
            port = p
        }
        guard hostStart < hostEnd, port > 0 else { return nil }
        if !bracketed && hostEnd - hostStart > 1 && a[hostEnd - 1] == 0x2E { hostEnd -= 1 }
        let host = UnsafeBufferPointer(rebasing: a[hostStart..<hostEnd])
        if bracketed {
            guard HostName.isIPv6(host) else { return nil }
        } else {
            guard let kind = HostName.kind(host), kind != .ipv6 else { return nil }
        }
        return (hostStart..<hostEnd, port)
    }
}
