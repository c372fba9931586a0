import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a request goes.
public struct Origin: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
    /// `host:port`, IPv6 in brackets.
    public var description: String { HostPort.format(host, port) }

    /// Whether `value` is exactly ``hostFieldValue(defaultPort:)``, compared without building it (a request whose
    /// Host already names its URL's authority, the usual case, costs no allocation).
    public func isHostFieldValue(_ value: ArraySlice<UInt8>, defaultPort: Int) -> Bool {
        var host = self.host
        return host.withUTF8 { h in
            value.withUnsafeBufferPointer { v in
                let v6 = h.contains(0x3A)
                var i = 0
                let end = v.count
                if v6 {
                    guard i < end, v[i] == 0x5B else { return false }
                    i += 1
                }
                guard end - i >= h.count, h.isEmpty || memcmp(v.baseAddress! + i, h.baseAddress!, h.count) == 0 else {
                    return false
                }
                i += h.count
                if v6 {
                    guard i < end, v[i] == 0x5D else { return false }
                    i += 1
                }
                if port == defaultPort { return i == end }
                guard i < end, v[i] == 0x3A else { return false }
                i += 1
                // The port in decimal, as written by hostFieldValue: no sign, no leading zero.
                let digits = i
                var n = 0
                while i < end, v[i] &- 0x30 < 10, n <= 65535 {
                    n = n * 10 + Int(v[i] &- 0x30)
                    i += 1
                }
                return i == end && i > digits && v[digits] != 0x30 && n == port
            }
        }
    }

    /// The authority as a Host field value (RFC 9110 §7.2): `host`, or `host:port` when the port is not
    /// `defaultPort`; IPv6 in brackets. Written as bytes, without string interpolation.
    public func hostFieldValue(defaultPort: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(host.utf8.count + 8)
        // A native string's bytes are scanned in place (the generic `contains` on its UTF-8 view cost ~300
        // instructions).
        let v6 = host.utf8.withContiguousStorageIfAvailable { $0.contains(0x3A) } ?? host.utf8.contains(0x3A)
        if v6 { out.append(0x5B) }
        out.append(contentsOf: host.utf8)
        if v6 { out.append(0x5D) }
        if port != defaultPort {
            out.append(0x3A)
            var divisor = 1
            while divisor * 10 <= port { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(truncatingIfNeeded: 0x30 + (port / divisor) % 10))
                divisor /= 10
            }
        }
        return out
    }
}
