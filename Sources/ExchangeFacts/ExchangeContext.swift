/// A reverse route as the exchanges it serves carry it: its name as the banner lists it (`/api/ → https://api.example/`)
/// and its upstream's host (what a rule's `upstream` condition reads).
public final class RouteFacts: Sendable {
    public let name: String
    public let upstreamHost: String
    /// The route's upstream path and its prefix (`/v1/` and `/api/`), when they differ and the upstream is mounted
    /// under a path of its own: a cookie the upstream sets with a Path under its own path is mapped under the
    /// prefix, as its redirects are (nginx's `proxy_cookie_path`); nil when the target goes upstream as it came, or
    /// to the upstream's root (whose cookies' paths often name the public prefix already).
    public let pathMap: (upstream: String, client: String)?
    public init(name: String, upstreamHost: String, pathMap: (upstream: String, client: String)? = nil) {
        (self.name, self.upstreamHost, self.pathMap) = (name, upstreamHost, pathMap)
    }

    /// `path` (a cookie's Path) mapped from the upstream's path to the route's prefix: `/v1` → `/api`,
    /// `/v1/x` → `/api/x`; nil when it is not under the upstream's path (then it stays as it is), and for `/`,
    /// which covers the prefix already (narrowing it would keep the cookie from the site's other routes: a
    /// frontend rendered on the server that reads the API's session).
    public func clientPath(_ path: String) -> String? {
        guard let (upstream, client) = pathMap, path != "/" else { return nil }
        if path.hasPrefix(upstream) { return client + path.dropFirst(upstream.count) }
        // The upstream's path without its last `/` is the mount itself (a cookie for `/v1` covers `/v1/…`).
        let bare = upstream.hasSuffix("/") ? String(upstream.dropLast()) : upstream
        guard !bare.isEmpty, path == bare else { return nil }
        return client.hasSuffix("/") && client.count > 1 ? String(client.dropLast()) : client
    }
}

/// The facts of one request and its response, as the proxy has them: the one record of them that every module
/// reads (the connection machine makes it; the rules, the log, the inspector, the lifecycle and the command line's
/// `try` and `audit` read it). What is worked out from it lives beside its readers: the cookie URL (CookieKit's
/// ``RequestURL``, whose host is canonical as the jar compares hosts) and the request's site context (the rules'
/// `MessageContext`, the lifecycle's request).
public struct ExchangeContext: Sendable {
    public var requestID: UInt64
    /// The exchange's text (the client's address, the method, the host, the target) and its route, in one object
    /// that is never changed (a setter makes another): the context is copied with every exchange, by the machine,
    /// the stage and every observer, and a copy then counts one reference, not five.
    @usableFromInline var texts: Texts

    @usableFromInline final class Texts: Sendable {
        @usableFromInline let clientAddress: String
        @usableFromInline let method: String
        @usableFromInline let host: String
        @usableFromInline let target: String
        @usableFromInline let route: RouteFacts?

        @inlinable init(clientAddress: String, method: String, host: String, target: String, route: RouteFacts?) {
            (self.clientAddress, self.method, self.host, self.target) = (clientAddress, method, host, target)
            self.route = route
        }

        @usableFromInline static let empty = Texts(clientAddress: "", method: "", host: "", target: "", route: nil)

        /// The same with one part changed (a setter: rare, never per line).
        @inlinable func with(
            clientAddress: String? = nil, method: String? = nil, host: String? = nil, target: String? = nil,
            route: RouteFacts?? = nil
        ) -> Texts {
            Texts(
                clientAddress: clientAddress ?? self.clientAddress, method: method ?? self.method,
                host: host ?? self.host, target: target ?? self.target, route: route ?? self.route)
        }
    }

    public var clientAddress: String {
        @inlinable get { texts.clientAddress }
        @inlinable set { texts = texts.with(clientAddress: newValue) }
    }
    public var method: String {
        @inlinable get { texts.method }
        @inlinable set { texts = texts.with(method: newValue) }
    }
    /// `http` or `https` (intercepted, or behind a TLS listener). Kept as a flag.
    public var scheme: String {
        @inlinable get { isHTTPS ? "https" : "http" }
        @inlinable set { isHTTPS = Self.isSecure(newValue) }
    }
    @usableFromInline var isHTTPS: Bool

    /// `https` (or `wss`, its WebSocket form).
    @inlinable static func isSecure(_ scheme: String) -> Bool {
        // By length first: the proxy's own are `http` and `https` (a count is read without comparing).
        switch scheme.utf8.count {
        case 5: return scheme.utf8.first == 0x68 && scheme.utf8.last == 0x73  // https
        case 3: return scheme == "wss"
        default: return false
        }
    }
    public var host: String {
        @inlinable get { texts.host }
        @inlinable set { texts = texts.with(host: newValue) }
    }
    public var port: Int
    /// Path and query as requested.
    public var target: String {
        @inlinable get { texts.target }
        @inlinable set { texts = texts.with(target: newValue) }
    }
    /// The response status, once known. Kept in two bytes (0: not known).
    public var status: Int? {
        @inlinable get { statusCode == 0 ? nil : Int(statusCode) }
        @inlinable set { statusCode = newValue.map { UInt16(clamping: $0) } ?? 0 }
    }
    @usableFromInline var statusCode: UInt16 = 0
    /// The protocol the client spoke (HTTP/2: the exchange is one of its streams) and the one the upstream spoke
    /// (ALPN chose h2, or an h2c origin): a value per side, so that another protocol is one more case.
    public var clientSide: HTTPProtocol
    public var upstreamSide: HTTPProtocol
    /// The reverse route that served the exchange; nil for a forward proxy's. A reference made once per route.
    public var route: RouteFacts? {
        @inlinable get { texts.route }
        @inlinable set { texts = texts.with(route: .some(newValue)) }
    }
    /// The client's protocol as the log names it (`HTTP/2`); nil for HTTP/1.x (whose version is in the request
    /// line).
    public var clientProtocol: StaticString? { clientSide == .http1 ? nil : clientSide.name }
    /// The upstream's protocol as the log names it; nil for HTTP/1.1.
    public var upstreamProtocol: StaticString? { upstreamSide == .http1 ? nil : upstreamSide.name }

    /// Inlinable, as ``empty``: the machine makes one per request from another module.
    @inlinable
    public init(
        requestID: UInt64, clientAddress: String, method: String, scheme: String, host: String, port: Int,
        target: String, status: Int?, clientSide: HTTPProtocol = .http1, upstreamSide: HTTPProtocol = .http1,
        route: RouteFacts? = nil
    ) {
        self.requestID = requestID
        texts = Texts(clientAddress: clientAddress, method: method, host: host, target: target, route: route)
        self.isHTTPS = Self.isSecure(scheme)
        self.port = port
        self.statusCode = status.map { UInt16(clamping: $0) } ?? 0
        (self.clientSide, self.upstreamSide) = (clientSide, upstreamSide)
    }

    /// A context with nothing in it, for a machine without an exchange (one object shared by all: making one
    /// allocates nothing).
    @inlinable package static var empty: ExchangeContext {
        ExchangeContext(requestID: 0, texts: Texts.empty)
    }

    @inlinable init(requestID: UInt64, texts: Texts) {
        (self.requestID, self.texts, isHTTPS, port, statusCode) = (requestID, texts, false, 0, 0)
        (clientSide, upstreamSide) = (.http1, .http1)
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

/// The HTTP protocol one side of an exchange spoke.
public enum HTTPProtocol: UInt8, Sendable, Hashable, CaseIterable {
    /// HTTP/1.0 or HTTP/1.1 (RFC 9112).
    case http1
    /// HTTP/2 (RFC 9113).
    case http2

    /// As logs and metrics name it.
    public var name: StaticString {
        switch self {
        case .http1: "HTTP/1.1"
        case .http2: "HTTP/2"
        }
    }
}
