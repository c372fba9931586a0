import HTTPGrammar
import HTTPHeads

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a request goes, decided from its head alone (RFC 9112 §3.2, §3.3): a pure function of the request,
/// the proxy's configuration and, inside an intercepted tunnel, the tunnel's origin. Target forms, authority
/// parsing, the Host field and the own-address check are all decided here, so that the connection machine only
/// carries the result out.
public struct RequestRoute: Sendable, Hashable {
    /// Where the connection goes.
    public var origin: Origin
    /// The host and port the client addressed: towards a fixed upstream, the Host it sent (or the URL's
    /// authority); otherwise ``origin``. What rules and the log see as the request's host.
    public var addressed: Origin { named ?? origin }
    /// ``addressed`` when it is not ``origin``.
    var named: Origin? = nil
    /// `http` or `https` (inside an intercepted tunnel).
    public var scheme: String
    /// The request-target to send upstream: origin-form, or `*` (RFC 9112 §3.2.4). Empty for CONNECT.
    public var target: String
    public var isConnect: Bool
    /// The authority of an absolute-form target and its scheme's default port: the Host the upstream must see
    /// (RFC 9112 §3.2.2). Nil for origin-form to a fixed upstream (the client's Host goes on as it is).
    public var authority: Origin?
    /// 80 or 443. Small fields, as the next ones: the route is copied a few times per request, and kept under the
    /// size Swift copies with memcpy.
    public var authorityDefaultPort: Int {
        get { Int(defaultPort) }
        set { defaultPort = UInt16(truncatingIfNeeded: newValue) }
    }
    var defaultPort: UInt16 = 80
    /// Whether the request's one Host field already is ``authority``'s Host value (the usual case): the rewrite
    /// then leaves it as it is without comparing it again.
    var hostFieldIsAuthority = false
    /// The reverse route that matched (its index in the configuration's ``RouteTable``). Its path, if any, replaces
    /// the prefix of ``target`` (the target as the client sent it: what cookies, rules and the log see) only in the
    /// request line sent upstream (``RouteTable/upstreamTarget(_:_:)``).
    public var routeIndex: Int? {
        get { routeNumber == 0 ? nil : Int(routeNumber) - 1 }
        set { routeNumber = newValue.map { UInt16(truncatingIfNeeded: $0 + 1) } ?? 0 }
    }
    var routeNumber: UInt16 = 0
    /// The connection to ``origin`` is TLS: inside an intercepted tunnel, or a route to an `https://` upstream.
    public var upstreamTLS = false

    /// Why a request is refused: the status and a one-line reason.
    public struct Refusal: Error, Sendable, Hashable {
        public var status: Int
        public var reason: String
        /// Extra header lines of the answer (an `Allow` for `405`, RFC 9110 §15.5.6).
        public var fields: [ProxyAnswer.Field] {
            status == 405 ? [ProxyAnswer.Field("Allow", RequestRoute.allowedInReverseMode)] : []
        }
        /// An origin-form request to a forward proxy: addressed to the proxy itself, as a browser opening its URL.
        public var addressesTheProxy = false
        init(_ status: Int, _ reason: String, addressesTheProxy: Bool = false) {
            self.status = status
            self.reason = reason
            self.addressesTheProxy = addressesTheProxy
        }
    }

    static let allowedInReverseMode = "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE"

    /// The route of `request`, or why it is refused.
    /// - The target (``target(_:reverseUpstream:interceptedOrigin:)``).
    /// - RFC 9112 §3.2: at most one Host, with a valid value, and one in every HTTP/1.1 request but a CONNECT (its
    ///   authority-form target is its whole route, clients that tunnel do not all send Host with it, and Host
    ///   cannot change where a tunnel goes). A Host that already names the target's authority (the usual case) is
    ///   valid without another parse.
    /// - In forward mode, a request addressed to the proxy's own listening ports on one of its own addresses is
    ///   refused: it would loop.
    /// - In reverse mode, the route for the Host and path (``RouteTable/match(host:target:)``): its upstream, the
    ///   target with the route's path, Host the upstream's authority unless the route keeps it; `404` naming the
    ///   routes when none matches. `listenerTLS`: the client reached a TLS listener (its URLs are https).
    public static func route(
        _ request: RequestHead, configuration: ProxyConfiguration, interceptedOrigin: Origin?, listenerTLS: Bool = false
    ) throws(Refusal) -> RequestRoute {
        var route = try target(
            request, reverseUpstream: configuration.reverseUpstream, interceptedOrigin: interceptedOrigin
        ).get()
        let reverse = configuration.isReverse
        // Behind a TLS listener a route's URLs are https (a forward proxy over TLS reads the scheme from the target).
        if listenerTLS && reverse && interceptedOrigin == nil { route.scheme = "https" }
        let head = request.head
        // Towards a fixed upstream the client's Host is what it addressed, unless the target names an authority.
        let namesByHost = reverse && interceptedOrigin == nil && !route.isConnect
        var hostField: HTTPHead.Field? = nil
        for field in head.fields where field.known == .host {
            guard hostField == nil else { throw Refusal(400, "more than one Host header field") }
            hostField = field
        }
        if let hostField {
            let value = head.valueBytes(hostField)
            let valid: Bool
            if let authority = route.authority {
                route.hostFieldIsAuthority = authority.isHostFieldValue(value, defaultPort: route.authorityDefaultPort)
                valid = value.isEmpty || route.hostFieldIsAuthority || value.withUnsafeBufferPointer(Authority.isValid)
            } else if namesByHost {
                // Read once: the check and the name.
                route.named = value.withUnsafeBufferPointer { Authority.parse($0, defaultPort: 80) }
                valid = route.named != nil
            } else {
                valid = value.withUnsafeBufferPointer(Authority.isValid)
            }
            guard valid else { throw Refusal(400, "invalid Host header field") }
        } else if !request.version.isHTTP1_0 && !route.isConnect {
            throw Refusal(400, "HTTP/1.1 request without a Host header field")
        }
        let fixed = reverse || interceptedOrigin != nil
        if !fixed && isOwnAddress(route.origin, ownPorts: configuration.ownPorts, ownHosts: configuration.ownHosts) {
            throw Refusal(400, "refusing a request addressed to the proxy itself (\(route.origin))")
        }
        if namesByHost, let authority = route.authority { route.named = authority }
        if interceptedOrigin != nil { route.upstreamTLS = true }
        if namesByHost { try choose(&route, configuration.routes) }
        return route
    }

    /// The reverse route for `route`'s host and target, carried into it.
    static func choose(_ route: inout RequestRoute, _ table: RouteTable) throws(Refusal) {
        let host = route.named?.host
        guard let index = table.match(host: host, target: route.target) else {
            throw Refusal(
                404, "no route for \(host ?? "this host")\(route.target.prefix(200)); the routes: \(table.summary)")
        }
        let chosen = table.routes[index]
        route.routeIndex = index
        route.origin = chosen.upstream
        route.upstreamTLS = chosen.scheme == .https
        if !chosen.preserveHost {
            // RFC 9110 §7.2: Host names the upstream, as a virtual host behind it expects.
            route.authority = chosen.upstream
            route.authorityDefaultPort = chosen.scheme == .https ? 443 : 80
            route.hostFieldIsAuthority = false
        }
    }

    /// Whether `origin` is the proxy itself: one of its ports on a loopback, unspecified or own address.
    static func isOwnAddress(_ origin: Origin, ownPorts: Set<Int>, ownHosts: Set<String>) -> Bool {
        guard ownPorts.contains(origin.port) else { return false }
        let h = origin.host
        return HostName.isLoopback(h) || HostName.isUnspecified(h) || ownHosts.contains(h)
    }

    /// The route the request target names, before the Host field and the proxy's own addresses are looked at.
    /// - Forward mode: absolute-form `http://` (userinfo refused, RFC 9110 §4.2.4), authority-form for CONNECT.
    /// - A fixed upstream (`--reverse`, or the origin of an intercepted tunnel): every request goes there and
    ///   nowhere else; an absolute-form target's path is used (a reverse proxy is an origin server to its client,
    ///   RFC 9112 §3.2.2), and inside a tunnel it must name the tunnel's own origin. `OPTIONS *` is forwarded.
    ///   In reverse mode CONNECT is `405`: it would open a tunnel to any host.
    /// - Hosts are checked against the host grammar (``HostName``) before anything resolves or mints them.
    @inline(__always)
    static func target(
        _ request: RequestHead, reverseUpstream: Origin?, interceptedOrigin: Origin?
    ) -> Result<RequestRoute, Refusal> {
        let fixed: Origin? = interceptedOrigin ?? reverseUpstream
        let fixedScheme = interceptedOrigin != nil ? "https" : "http"
        if request.method == "CONNECT" {
            if reverseUpstream != nil && interceptedOrigin == nil {
                return .failure(Refusal(405, "CONNECT is not allowed: this is a reverse proxy for \(reverseUpstream!)"))
            }
            // RFC 9110 §9.3.6: authority-form, the port is required.
            let origin = request.withTargetBytes { t -> Origin? in
                guard HostPort.split(t)?.port != nil else { return nil }
                return Authority.parse(t, defaultPort: 443)
            }
            guard let origin else { return .failure(Refusal(400, "CONNECT target must be host:port")) }
            return .success(RequestRoute(origin: origin, scheme: "https", target: "", isConnect: true))
        }
        return request.withTargetBytes { t -> Result<RequestRoute, Refusal> in
            if t.count == 1 && t[0] == 0x2A {
                guard request.method == "OPTIONS" else {
                    return .failure(Refusal(400, "only OPTIONS may have the target *"))
                }
                guard let fixed else {
                    return .failure(Refusal(400, "this is a forward proxy: send OPTIONS with an absolute URL"))
                }
                return .success(RequestRoute(origin: fixed, scheme: fixedScheme, target: "*", isConnect: false))
            }
            if t.first == 0x2F {
                guard fixed != nil else {
                    return .failure(
                        Refusal(
                            400,
                            "this is a forward proxy: send an absolute URL (curl -x http://this-proxy http://host/path)",
                            addressesTheProxy: true))
                }
                guard memchr(t.baseAddress!, 0x23, t.count) == nil else {
                    return .failure(Refusal(400, "fragment in request target"))
                }
                return .success(
                    RequestRoute(origin: fixed!, scheme: fixedScheme, target: request.target, isConnect: false))
            }
            let scheme = schemePrefix(t)
            guard scheme != .other else {
                return .failure(Refusal(400, "request target must be an absolute http:// URL"))
            }
            if scheme == .https && fixed == nil {
                return .failure(
                    Refusal(400, "https URLs go through CONNECT; this proxy does not fetch https:// targets itself"))
            }
            // RFC 3986 §3.2–3.5: the authority ends at '/', '?' or '#'; a fragment is never sent.
            let authorityStart = scheme == .http ? 7 : 8
            var authorityEnd = authorityStart
            while authorityEnd < t.count {
                let c = t[authorityEnd]
                if c == 0x2F || c == 0x3F || c == 0x23 { break }
                if c == 0x40 { return .failure(Refusal(400, "userinfo in request URL")) }
                authorityEnd += 1
            }
            let defaultPort = scheme == .http ? 80 : 443
            guard
                let named = Authority.parse(
                    UnsafeBufferPointer(rebasing: t[authorityStart..<authorityEnd]), defaultPort: defaultPort)
            else { return .failure(Refusal(400, "invalid host in request URL")) }
            var fragment = authorityEnd
            while fragment < t.count && t[fragment] != 0x23 { fragment += 1 }
            let path: String
            if authorityEnd == fragment {
                // RFC 9112 §3.2.4: an empty path and no query is OPTIONS for the server as a whole.
                path = request.method == "OPTIONS" ? "*" : "/"
            } else if t[authorityEnd] == 0x3F {
                path = "/" + String(decoding: UnsafeBufferPointer(rebasing: t[authorityEnd..<fragment]), as: UTF8.self)
            } else {
                path = String(decoding: UnsafeBufferPointer(rebasing: t[authorityEnd..<fragment]), as: UTF8.self)
            }
            if let fixed {
                if interceptedOrigin != nil && (named != fixed || scheme != .https) {
                    return .failure(Refusal(400, "request URL names another origin than the tunnel's (\(fixed))"))
                }
                return .success(
                    RequestRoute(
                        origin: fixed, scheme: fixedScheme, target: path, isConnect: false, authority: named,
                        authorityDefaultPort: defaultPort))
            }
            return .success(
                RequestRoute(
                    origin: named, scheme: "http", target: path, isConnect: false, authority: named,
                    authorityDefaultPort: defaultPort))
        }
    }

    init(
        origin: Origin, scheme: String, target: String, isConnect: Bool, authority: Origin? = nil,
        authorityDefaultPort: Int = 80
    ) {
        self.origin = origin
        self.scheme = scheme
        self.target = target
        self.isConnect = isConnect
        self.authority = authority
        self.defaultPort = UInt16(truncatingIfNeeded: authorityDefaultPort)
    }

    public enum SchemePrefix: Sendable { case http, https, other }

    /// Whether a request target begins with `http://` or `https://`, in any case.
    public static func schemePrefix(_ target: String) -> SchemePrefix {
        var target = target
        return target.withUTF8 { schemePrefix($0) }
    }

    static func schemePrefix(_ b: UnsafeBufferPointer<UInt8>) -> SchemePrefix {
        guard b.count >= 7 else { return .other }
        var word: UInt64 = 0
        for k in 0..<min(8, b.count) { word |= UInt64(b[k]) << UInt64(8 * k) }
        // The letters lowercased with | 0x20 (it maps only 'A'–'Z' onto these letters); ':' and '/' exact.
        if (word | 0x2020_2020) & 0x00FF_FFFF_FFFF_FFFF == 0x002F_2F3A_7074_7468 { return .http }  // "http://"
        if b.count >= 8 && word | 0x20_2020_2020 == 0x2F2F_3A73_7074_7468 { return .https }  // "https://"
        return .other
    }
}
