import HTTPGrammar

/// Where a request goes, decided from its head alone (RFC 9112 §3.2, §3.3): a pure function of the request,
/// the proxy's mode and, inside an intercepted tunnel, the tunnel's origin.
public struct RequestRoute: Sendable, Hashable {
    public var origin: Origin
    /// `http` or `https` (inside an intercepted tunnel).
    public var scheme: String
    /// The request-target to send upstream: origin-form, or `*` (RFC 9112 §3.2.4). Empty for CONNECT.
    public var target: String
    public var isConnect: Bool
    /// The Host value the upstream must see (the target URI's authority, RFC 9112 §3.2.2), or nil to keep the
    /// client's Host as it is (origin-form to a fixed upstream).
    public var hostValue: [UInt8]?

    /// Why a request is refused: the status and a one-line reason.
    public struct Refusal: Error, Sendable, Hashable {
        public var status: Int
        public var reason: String
        /// Extra header lines of the answer (an `Allow` for `405`, RFC 9110 §15.5.6).
        public var fields: [(String, String)] { status == 405 ? [("Allow", RequestRoute.allowedInReverseMode)] : [] }
        init(_ status: Int, _ reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    static let allowedInReverseMode = "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE"

    /// The route of `request`.
    /// - Forward mode: absolute-form `http://` (userinfo refused, RFC 9110 §4.2.4), authority-form for CONNECT.
    /// - A fixed upstream (`--reverse`, or the origin of an intercepted tunnel): every request goes there and
    ///   nowhere else; an absolute-form target's path is used (a reverse proxy is an origin server to its client,
    ///   RFC 9112 §3.2.2), and inside a tunnel it must name the tunnel's own origin. `OPTIONS *` is forwarded.
    ///   In reverse mode CONNECT is `405`: it would open a tunnel to any host.
    /// - Hosts are checked against the host grammar (``HostName``) before anything resolves or mints them.
    public static func route(
        _ request: RequestHead, reverseUpstream: Origin?, interceptedOrigin: Origin?
    ) -> Result<RequestRoute, Refusal> {
        let fixed: (origin: Origin, scheme: String)? =
            interceptedOrigin.map { ($0, "https") } ?? reverseUpstream.map { ($0, "http") }
        let target = request.target
        if request.method == "CONNECT" {
            if reverseUpstream != nil && interceptedOrigin == nil {
                return .failure(Refusal(405, "CONNECT is not allowed: this is a reverse proxy for \(reverseUpstream!)"))
            }
            // RFC 9110 §9.3.6: authority-form, the port is required.
            guard target.utf8.first != 0x5B || target.contains("]:"), target.contains(":"),
                let origin = Authority.parse(Substring(target), defaultPort: 443)
            else { return .failure(Refusal(400, "CONNECT target must be host:port")) }
            return .success(RequestRoute(origin: origin, scheme: "https", target: "", isConnect: true, hostValue: nil))
        }
        let first = target.utf8.first
        if target == "*" {
            guard request.method == "OPTIONS" else {
                return .failure(Refusal(400, "only OPTIONS may have the target *"))
            }
            guard let fixed else {
                return .failure(Refusal(400, "this is a forward proxy: send OPTIONS with an absolute URL"))
            }
            return .success(RequestRoute(origin: fixed.origin, scheme: fixed.scheme, target: "*", isConnect: false))
        }
        if first == 0x2F {
            guard !target.utf8.contains(0x23) else { return .failure(Refusal(400, "fragment in request target")) }
            guard let fixed else {
                return .failure(
                    Refusal(
                        400,
                        "this is a forward proxy: send an absolute URL (curl -x http://this-proxy http://host/path)"))
            }
            return .success(RequestRoute(origin: fixed.origin, scheme: fixed.scheme, target: target, isConnect: false))
        }
        let scheme = schemePrefix(target)
        guard scheme != .other else { return .failure(Refusal(400, "request target must be an absolute http:// URL")) }
        if scheme == .https && fixed == nil {
            return .failure(
                Refusal(400, "https URLs go through CONNECT; this proxy does not fetch https:// targets itself"))
        }
        // RFC 3986 §3.2–3.5 on the UTF-8 view: the authority ends at '/', '?' or '#'; a fragment is never sent.
        let u = target.utf8
        let authorityStart = u.index(u.startIndex, offsetBy: scheme == .http ? 7 : 8)
        let authorityEnd = u[authorityStart...].firstIndex { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 } ?? u.endIndex
        let authority = target[authorityStart..<authorityEnd]
        if authority.utf8.contains(0x40) { return .failure(Refusal(400, "userinfo in request URL")) }
        guard let named = Authority.parse(authority, defaultPort: scheme == .http ? 80 : 443) else {
            return .failure(Refusal(400, "invalid host in request URL"))
        }
        let fragment = u[authorityEnd...].firstIndex(of: 0x23) ?? u.endIndex
        var path = String(target[authorityEnd..<fragment])
        if path.isEmpty && request.method == "OPTIONS" {
            path = "*"  // RFC 9112 §3.2.4: an empty path and no query is OPTIONS for the server as a whole
        } else if authorityEnd == fragment || u[authorityEnd] == 0x3F {
            path = "/" + path
        }
        let hostValue = named.hostFieldValue(defaultPort: scheme == .http ? 80 : 443)
        if let fixed {
            if interceptedOrigin != nil && (named != fixed.origin || scheme != .https) {
                return .failure(Refusal(400, "request URL names another origin than the tunnel's (\(fixed.origin))"))
            }
            return .success(
                RequestRoute(
                    origin: fixed.origin, scheme: fixed.scheme, target: path, isConnect: false, hostValue: hostValue)
            )
        }
        return .success(
            RequestRoute(origin: named, scheme: "http", target: path, isConnect: false, hostValue: hostValue))
    }

    init(origin: Origin, scheme: String, target: String, isConnect: Bool, hostValue: [UInt8]? = nil) {
        self.origin = origin
        self.scheme = scheme
        self.target = target
        self.isConnect = isConnect
        self.hostValue = hostValue
    }

    public enum SchemePrefix: Sendable { case http, https, other }

    /// Whether a request target begins with `http://` or `https://`, in any case.
    public static func schemePrefix(_ target: String) -> SchemePrefix {
        var target = target
        return target.withUTF8 { b in
            guard b.count >= 7 else { return .other }
            var word: UInt64 = 0
            for k in 0..<min(8, b.count) { word |= UInt64(b[k]) << UInt64(8 * k) }
            // The letters lowercased with | 0x20 (it maps only 'A'–'Z' onto these letters); ':' and '/' exact.
            if (word | 0x2020_2020) & 0x00FF_FFFF_FFFF_FFFF == 0x002F_2F3A_7074_7468 { return .http }  // "http://"
            if b.count >= 8 && word | 0x20_2020_2020 == 0x2F2F_3A73_7074_7468 { return .https }  // "https://"
            return .other
        }
    }
}

/// `host[:port]` or `[v6][:port]` (RFC 3986 §3.2.2–3.2.3), parsed on bytes.
public enum Authority {
    /// The origin an authority names, host lowercased and a trailing root dot dropped; nil when the host is not
    /// a DNS name or IP literal (``HostName``) or the port is not 1–65535 in at most five digits.
    public static func parse(_ authority: Substring, defaultPort: Int) -> Origin? {
        var authority = authority
        return authority.withUTF8 { parse($0, defaultPort: defaultPort) }
    }

    public static func parse(_ a: UnsafeBufferPointer<UInt8>, defaultPort: Int) -> Origin? {
        var hostStart = 0
        var hostEnd = a.count
        var port = defaultPort
        func number(_ from: Int, _ to: Int) -> Int? {
            guard from < to, to - from <= 5 else { return nil }
            var n = 0
            for i in from..<to {
                guard a[i] &- 0x30 < 10 else { return nil }
                n = n * 10 + Int(a[i] - 0x30)
            }
            return n
        }
        let bracketed = a.first == 0x5B
        if bracketed {
            guard let close = a.firstIndex(of: 0x5D) else { return nil }
            hostStart = 1
            hostEnd = close
            if close + 1 < a.count {
                guard a[close + 1] == 0x3A, let p = number(close + 2, a.count) else { return nil }
                port = p
            }
        } else if let colon = a.lastIndex(of: 0x3A) {
            hostEnd = colon
            guard let p = number(colon + 1, a.count) else { return nil }
            port = p
        }
        guard hostStart < hostEnd, (1...65535).contains(port) else { return nil }
        if !bracketed && hostEnd - hostStart > 1 && a[hostEnd - 1] == 0x2E { hostEnd -= 1 }
        let host = UnsafeBufferPointer(rebasing: a[hostStart..<hostEnd])
        if bracketed {
            guard HostName.isIPv6(host) else { return nil }
        } else {
            guard let kind = HostName.kind(host), kind != .ipv6 else { return nil }
        }
        // Lowercased while copied into the string.
        let text = String(unsafeUninitializedCapacity: host.count) { out in
            for i in 0..<host.count { out[i] = ByteClass.lower(host[i]) }
            return host.count
        }
        return Origin(host: text, port: port)
    }
}
