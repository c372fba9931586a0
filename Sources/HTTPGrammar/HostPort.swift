/// `host[:port]` and `[IPv6][:port]` (RFC 3986 §3.2.2–3.2.3), split and written in one place. What a host may be
/// is ``HostName``'s to judge; this only finds where it and the port are.
public enum HostPort {
    /// Where the host and the port are in an authority.
    public struct Split: Sendable, Hashable {
        /// The host, without brackets.
        public var host: Range<Int>
        /// Whether the host was in brackets (an IP literal, RFC 3986 §3.2.2).
        public var bracketed: Bool
        /// The bytes after the port's `:` (possibly none: `port = *DIGIT`); nil when there is no `:`.
        public var port: Range<Int>?

        @inlinable
        public init(host: Range<Int>, bracketed: Bool, port: Range<Int>?) {
            self.host = host
            self.bracketed = bracketed
            self.port = port
        }
    }

    /// Splits `a`: a leading `[` opens a host that ends at the first `]`, after which only `:port` may follow;
    /// otherwise the last `:` (if any) starts the port. Nil for an unclosed bracket or bytes after one.
    @inlinable @inline(__always)
    public static func split(_ a: UnsafeBufferPointer<UInt8>) -> Split? {
        if a.first == 0x5B {
            guard let close = a.firstIndex(of: 0x5D) else { return nil }
            if close + 1 == a.count { return Split(host: 1..<close, bracketed: true, port: nil) }
            guard a[close + 1] == 0x3A else { return nil }
            return Split(host: 1..<close, bracketed: true, port: (close + 2)..<a.count)
        }
        guard let colon = a.lastIndex(of: 0x3A) else { return Split(host: 0..<a.count, bracketed: false, port: nil) }
        return Split(host: 0..<colon, bracketed: false, port: (colon + 1)..<a.count)
    }

    /// ``split(_:)`` of a string's bytes, as substrings: the host (unbracketed) and the port's text (nil without a
    /// `:`).
    public static func split(_ text: Substring) -> (host: Substring, port: Substring?)? {
        var text = text
        return text.withUTF8 { b -> (Range<Int>, Range<Int>?)? in
            guard let s = split(b) else { return nil }
            return (s.host, s.port)
        }.map { host, port in
            let u = text.utf8
            func sub(_ r: Range<Int>) -> Substring {
                Substring(
                    u[u.index(u.startIndex, offsetBy: r.lowerBound)..<u.index(u.startIndex, offsetBy: r.upperBound)])
            }
            return (sub(host), port.map(sub))
        }
    }

    /// A port: one to five decimal digits, at most 65535 (RFC 3986 §3.2.3 allows more digits; no port has them).
    @inlinable @inline(__always)
    public static func port(_ a: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
        guard !range.isEmpty, range.count <= 5 else { return nil }
        var n = 0
        for i in range {
            guard ByteClass.isDigit(a[i]) else { return nil }
            n = n * 10 + Int(a[i] &- 0x30)
        }
        return n <= 65535 ? n : nil
    }

    /// ``port(_:_:)`` of a string.
    public static func port(_ text: Substring) -> Int? {
        var text = text
        return text.withUTF8 { port($0, 0..<$0.count) }
    }

    /// The host as it is written in an authority or URL: an IPv6 address (it has a `:`) in brackets.
    public static func bracketed(_ host: String) -> String {
        host.utf8.contains(0x3A) && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    /// `host:port`, an IPv6 host in brackets.
    public static func format(_ host: String, _ port: Int) -> String { "\(bracketed(host)):\(port)" }

    /// A listen address: `host:port`, `[v6]:port`, or a bare port (loopback); `localhost` is 127.0.0.1. Port 0 picks
    /// a free one. Nil when it is none of these.
    public static func listenAddress(_ s: String) -> (String, Int)? {
        guard let (host, portText) = split(s[...]) else { return nil }
        guard let portText else { return port(host).map { ("127.0.0.1", $0) } }
        guard let port = port(portText) else { return nil }
        return (host == "localhost" ? "127.0.0.1" : String(host), port)
    }

    /// A `--resolve HOST:ADDRESS` entry (as curl's, without the port): the host lowercased and a numeric address;
    /// nil when it is not one.
    public static func resolveEntry(_ entry: String) -> (host: String, address: String)? {
        guard let colon = entry.firstIndex(of: ":"), colon != entry.startIndex,
            HostName.isIPLiteral(String(entry[entry.index(after: colon)...]))
        else { return nil }
        return (entry[..<colon].lowercased(), String(entry[entry.index(after: colon)...]))
    }
}
