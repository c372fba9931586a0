/// The facts of one request and its response, as the proxy has them: the one record of them that every module
/// reads (the connection machine makes it; the rules, the log, the inspector, the lifecycle and the command line's
/// `try` and `audit` read it). What is worked out from it lives beside its readers: the cookie URL (CookieKit's
/// ``RequestURL``, whose host is canonical as the jar compares hosts) and the request's site context (the rules'
/// `MessageContext`, the lifecycle's request).
public struct ExchangeContext: Sendable {
    public var requestID: UInt64
    public var clientAddress: String
    public var method: String
    /// `http` or `https` (intercepted).
    public var scheme: String
    public var host: String
    public var port: Int
    /// Path and query as requested.
    public var target: String
    /// The response status, once known.
    public var status: Int?
    /// Which side spoke HTTP/2: the client (the exchange is one of its streams) and the upstream (ALPN chose h2, or
    /// an h2c origin); a side not in it spoke HTTP/1.x. Flags, not strings: the context is copied with every
    /// exchange.
    public var protocols: Protocols
    /// The reverse route that served the exchange, as the banner names it (`/api/ → https://api.example/`); nil
    /// for a forward proxy's.
    public var route: String? = nil
    /// The host of that route's upstream (what a rule's `upstream` condition reads).
    public var upstreamHost: String? = nil
    /// `HTTP/2` when the client spoke it; nil for HTTP/1.x (whose version is in the request line).
    public var clientProtocol: StaticString? { protocols.contains(.clientHTTP2) ? "HTTP/2" : nil }
    /// `HTTP/2` when the upstream spoke it; nil for HTTP/1.1.
    public var upstreamProtocol: StaticString? { protocols.contains(.upstreamHTTP2) ? "HTTP/2" : nil }

    public struct Protocols: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let clientHTTP2 = Protocols(rawValue: 1)
        public static let upstreamHTTP2 = Protocols(rawValue: 2)
    }

    /// Inlinable, as ``empty``: the machine makes one per request from another module.
    @inlinable
    public init(
        requestID: UInt64, clientAddress: String, method: String, scheme: String, host: String, port: Int,
        target: String, status: Int?, protocols: Protocols = []
    ) {
        (self.requestID, self.clientAddress, self.method, self.scheme) = (requestID, clientAddress, method, scheme)
        (self.host, self.port, self.target, self.status) = (host, port, target, status)
        self.protocols = protocols
    }

    /// A context with nothing in it, for a machine without an exchange (empty strings: making one retains nothing).
    @inlinable package static var empty: ExchangeContext {
        ExchangeContext(
            requestID: 0, clientAddress: "", method: "", scheme: "", host: "", port: 0, target: "", status: nil)
    }

    /// `scheme://host:port/path` (the port always written, as the log wants it).
    public var url: String {
        var url = ""
        withURL { url = String(decoding: $0, as: UTF8.self) }
        return url
    }

    /// ``url``'s bytes, in temporary memory for the duration of `body` (the log writes them as they are: no string
    /// is made per logged response). Written byte by byte: string interpolation costs thousands of instructions.
    /// Not generic, so that callers in other modules get it specialised.
    public func withURL(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        var (scheme, host, target) = (self.scheme, self.host, self.target)
        return scheme.withUTF8 { s in
            host.withUTF8 { h in
                target.withUTF8 { t in
                    let v6 = h.contains(0x3A)
                    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: s.count + h.count + t.count + 11) {
                        out in
                        var i = 0
                        func put(_ b: UnsafeBufferPointer<UInt8>) {
                            guard let from = b.baseAddress, b.count > 0 else { return }
                            (out.baseAddress! + i).initialize(from: from, count: b.count)
                            i += b.count
                        }
                        func put(_ byte: UInt8) {
                            out[i] = byte
                            i += 1
                        }
                        put(s)
                        put(0x3A)
                        put(0x2F)
                        put(0x2F)
                        if v6 { put(0x5B) }
                        put(h)
                        if v6 { put(0x5D) }
                        put(0x3A)
                        var divisor = 10000
                        while divisor > 1 && port / divisor == 0 { divisor /= 10 }
                        while divisor > 0 {
                            put(UInt8(truncatingIfNeeded: 0x30 + (port / divisor) % 10))
                            divisor /= 10
                        }
                        put(t)
                        return body(UnsafeBufferPointer(rebasing: out[0..<i]))
                    }
                }
            }
        }
    }
    public var path: String {
        let u = target.utf8
        // A target without a query is its own path: no new string.
        guard let end = u.firstIndex(where: { $0 == 0x3F || $0 == 0x23 }) else { return target }
        return String(target[..<end])
    }
}
