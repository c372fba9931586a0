import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The options of a message's Connection fields (RFC 9110 §7.6.1).
public struct ConnectionOptions: Sendable, Equatable {
    public var close = false
    public var keepAlive = false
    public var upgrade = false
    /// Other options (lowercase): names of fields that are hop-by-hop for this message. `transfer-encoding` is
    /// left out (bodies are forwarded in their received framing).
    public var fieldNames: [String] = []
    public init() {}
}

/// The field names a proxy acts on (hop-by-hop fields, framing, Host, cookies, and the request fields that tell a
/// cookie's site context: Fetch Metadata, Origin, Referer, Accept), recognised once per field while parsing so later
/// decisions compare a byte instead of a name (as nginx's header hash does).
public enum KnownField: UInt8, Sendable {
    case other
    case host
    case connection
    case keepAlive
    case proxyConnection
    case te
    case upgrade
    case transferEncoding
    case contentLength
    case setCookie
    case cookie
    case proxyAuthorization
    case origin
    case referer
    case accept
    case secFetchSite
    case secFetchDest
    case secFetchMode

    /// The fields a request's site context is read from (RFC 6265bis §5.2 as a proxy can see it).
    public static let siteContext: UInt64 =
        origin.bit | referer.bit | secFetchSite.bit | secFetchDest.bit | secFetchMode.bit

    /// This field's bit in a set of known fields (``HTTPHead/knownFields``).
    @inlinable
    public var bit: UInt64 { 1 << UInt64(rawValue) }

    /// The name as compared (lowercase).
    public var lowercaseName: String {
        switch self {
        case .other: return ""
        case .host: return "host"
        case .connection: return "connection"
        case .keepAlive: return "keep-alive"
        case .proxyConnection: return "proxy-connection"
        case .te: return "te"
        case .upgrade: return "upgrade"
        case .transferEncoding: return "transfer-encoding"
        case .contentLength: return "content-length"
        case .setCookie: return "set-cookie"
        case .cookie: return "cookie"
        case .proxyAuthorization: return "proxy-authorization"
        case .origin: return "origin"
        case .referer: return "referer"
        case .accept: return "accept"
        case .secFetchSite: return "sec-fetch-site"
        case .secFetchDest: return "sec-fetch-dest"
        case .secFetchMode: return "sec-fetch-mode"
        }
    }

    /// The known field named by `b[start..<end]`, ASCII case-insensitively; `.other` for any other name.
    /// Dispatches on the length, then compares little-endian words of the name, `| 0x20`, with the packed
    /// lowercase names. For token characters (field names are validated as tokens first) `| 0x20` only maps
    /// capitals onto lowercase letters, so nothing else can compare equal.
    public static func classify(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> KnownField {
        let n = end - start
        guard n >= 2 && n <= 19 else { return .other }
        let w0 = word(b, start, end)
        switch n {
        case 2: return w0 == 0x6574 ? .te : .other
        case 4: return w0 == 0x7473_6F68 ? .host : .other
        case 6:
            if w0 == 0x6569_6B6F_6F63 { return .cookie }
            if w0 == 0x6E69_6769_726F { return .origin }
            return w0 == 0x7470_6563_6361 ? .accept : .other
        case 7:
            if w0 == 0x65_6461_7267_7075 { return .upgrade }
            return w0 == 0x72_6572_6566_6572 ? .referer : .other
        case 10:
            let w1 = word(b, start + 8, end)
            if w0 == 0x6B6F_6F63_2D74_6573 && w1 == 0x6569 { return .setCookie }
            if w0 == 0x6974_6365_6E6E_6F63 && w1 == 0x6E6F { return .connection }
            if w0 == 0x696C_612D_7065_656B && w1 == 0x6576 { return .keepAlive }
            return .other
        case 14:
            let w1 = word(b, start + 8, end)
            if w0 == 0x2D74_6E65_746E_6F63 && w1 == 0x6874_676E_656C { return .contentLength }
            guard w0 == 0x6374_6566_2D63_6573 else { return .other }
            switch w1 {
            case 0x6574_6973_2D68: return .secFetchSite
            case 0x7473_6564_2D68: return .secFetchDest
            case 0x6564_6F6D_2D68: return .secFetchMode
            default: return .other
            }
        case 16:
            return w0 == 0x6F63_2D79_786F_7270 && word(b, start + 8, end) == 0x6E6F_6974_6365_6E6E
                ? .proxyConnection : .other
        case 17:
            return w0 == 0x7265_6673_6E61_7274 && word(b, start + 8, end) == 0x6E69_646F_636E_652D
                && word(b, start + 16, end) == 0x67 ? .transferEncoding : .other
        case 19:
            return w0 == 0x7561_2D79_786F_7270 && word(b, start + 8, end) == 0x7461_7A69_726F_6874
                && word(b, start + 16, end) == 0x6E_6F69 ? .proxyAuthorization : .other
        default: return .other
        }
    }

    /// Bytes `from ..< min(end, from + 8)` of `b`, `| 0x20`, packed little-endian (one load when eight bytes lie
    /// inside the buffer, as they do for every name followed by its colon and value).
    @inline(__always)
    package static func word(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ end: Int) -> UInt64 {
        let count = min(8, end - from)
        let mask: UInt64 = count == 8 ? ~0 : (1 << UInt64(8 * count)) - 1
        var w: UInt64 = 0
        if from + 8 <= b.count, let base = b.baseAddress {
            w = UnsafeRawPointer(base + from).loadUnaligned(as: UInt64.self).littleEndian & mask
        } else {
            for i in 0..<count { w |= UInt64(b[from + i]) << UInt64(8 * i) }
        }
        return w | (0x2020_2020_2020_2020 & mask)
    }

    /// The known field for a name given as text.
    public init(name: String) {
        var name = name
        self = name.withUTF8 { Self.classify($0, 0, $0.count) }
    }
}

extension KnownField {
    /// Fields a trailer section must not carry, dropped when one is passed on (RFC 9110 §6.5.1: framing, routing,
    /// the connection's own; nghttp2 refuses some of them itself, not `host`): an HTTP/1.1 recipient that merges
    /// trailers into the head would otherwise read a second Host or a length.
    public var isForbiddenInTrailers: Bool {
        isConnectionSpecific || self == .host || self == .te || self == .contentLength
    }

    /// Fields that are about one connection and are never sent in HTTP/2 (RFC 9113 §8.2.2).
    public var isConnectionSpecific: Bool {
        switch self {
        case .connection, .keepAlive, .proxyConnection, .transferEncoding, .upgrade: true
        default: false
        }
    }
}
