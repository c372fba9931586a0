import ExchangeFacts
import HTTPGrammar
import HTTPHeads

/// One route of a reverse proxy (`--route [HOST]/PREFIX=URL`): the requests for `host` (any host when nil) whose
/// path starts with `prefix` go to `upstream`. The URL's path has nginx's `proxy_pass` meaning: with one, the
/// matched prefix is replaced by it (`/api/=https://api.example/` sends `/api/users` as `/users`); without one, the
/// target goes as it came. Pure: parsed once at start-up, matched for every request (``RouteTable``).
public struct ReverseRoute: Sendable, Hashable, CustomStringConvertible {
    public enum Scheme: String, Sendable, Hashable {
        case http
        /// TLS to the upstream, verified as intercepted origins are (system store, `--upstream-ca`,
        /// `--insecure-upstream HOST`); SNI from the URL's host.
        case https
        /// HTTP/2 with prior knowledge, without TLS (RFC 9113 §3.3).
        case h2c
    }

    /// Lowercase, no port; nil: every host.
    public var host: String?
    /// Starts with `/`.
    public var prefix: String
    public var upstream: Origin
    public var scheme: Scheme
    /// The URL's path (starting with `/`), when it has one: what replaces `prefix`.
    public var path: String?
    /// The client's Host goes upstream as it came (nginx's `proxy_set_header Host $host`); by default Host becomes
    /// the upstream's authority, as a virtual host behind it expects.
    public var preserveHost: Bool

    public init(
        host: String? = nil, prefix: String = "/", upstream: Origin, scheme: Scheme = .http, path: String? = nil,
        preserveHost: Bool = false
    ) {
        (self.host, self.prefix, self.upstream, self.scheme) = (host, prefix, upstream, scheme)
        (self.path, self.preserveHost) = (path, preserveHost)
    }

    /// `app.test/api/ → https://api.example:8443/`.
    public var description: String {
        (host ?? "") + prefix + " → \(scheme.rawValue)://\(upstreamAuthority)\(path ?? "")"
            + (preserveHost ? " (Host kept)" : "")
    }

    /// The upstream's origin as URLs name it (`https://api.example`, the port only when it is not the scheme's).
    public var upstreamOrigin: String { (scheme == .https ? "https" : "http") + "://" + upstreamAuthority }

    /// `host[:port]`, the port only when it is not the scheme's.
    var upstreamAuthority: String {
        upstream.port == (scheme == .https ? 443 : 80) ? HostPort.bracketed(upstream.host) : upstream.description
    }

    /// The options a route takes after its URL, each after a comma (`/api/=http://api:3000/,preserve-host`).
    public static let options = ["preserve-host"]

    /// Reads `[HOST]/PREFIX=URL[,OPTION…]`; the reason when it is not one. Options follow the URL's first comma (a
    /// comma in the URL's own path is written `%2C`); an unknown one is refused with the list of known ones, where
    /// reading it as part of the URL would route every request to a path nobody meant.
    public static func parse(_ text: String) -> Result<ReverseRoute, RouteError> {
        var spec = Substring(text)
        var preserveHost = false
        if let equals = spec.firstIndex(of: "="), let comma = spec[equals...].firstIndex(of: ",") {
            for option in spec[spec.index(after: comma)...].split(separator: ",", omittingEmptySubsequences: false) {
                switch option {
                case "preserve-host": preserveHost = true
                default:
                    return .failure(
                        RouteError(
                            "'\(text)': unknown route option '\(option)'; the options are: "
                                + options.joined(separator: ", ")))
                }
            }
            spec = spec[..<comma]
        }
        guard let equals = spec.firstIndex(of: "=") else {
            return .failure(RouteError("'\(text)' must be [HOST]/PREFIX=URL, e.g. /api/=https://api.example/"))
        }
        let left = spec[..<equals]
        guard let slash = left.firstIndex(of: "/") else {
            return .failure(RouteError("'\(text)': the prefix must start with '/', e.g. /api/ or app.test/"))
        }
        let host = left[..<slash].lowercased()
        if !host.isEmpty {
            guard HostName.kind(host) == .dnsName else {
                return .failure(RouteError("'\(text)': '\(host)' is not a host name"))
            }
        }
        let prefix = String(left[slash...])
        guard prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x3F && $0 != 0x23 }) else {
            return .failure(RouteError("'\(text)': the prefix '\(prefix)' may not hold spaces, '?' or '#'"))
        }
        return upstream(String(spec[spec.index(after: equals)...])).map { (scheme, origin, path) in
            ReverseRoute(
                host: host.isEmpty ? nil : host, prefix: prefix, upstream: origin, scheme: scheme, path: path,
                preserveHost: preserveHost)
        }
    }

    /// nginx's `proxy_pass` trap, said at start-up: a prefix and a path that disagree on their last `/` glue or
    /// double the slash where one replaces the other (`/=http://host/api` sends `/x` as `/apix`; `/v1=…/v2/` sends
    /// `/v1/users` as `/v2//users`). Nil when they agree, or when the URL has no path (the target goes as it came).
    public var slashWarning: String? {
        guard let path, prefix.hasSuffix("/") != path.hasSuffix("/") else { return nil }
        let example = prefix.hasSuffix("/") ? prefix + "x" : prefix + "/x"
        let sent = path + example.dropFirst(prefix.utf8.count)
        let fixed =
            prefix.hasSuffix("/")
            ? "\(host ?? "")\(prefix)=\(upstreamOrigin)\(path)/"
            : "\(host ?? "")\(prefix)/=\(upstreamOrigin)\(path), or \(host ?? "")\(prefix)=\(upstreamOrigin)\(path.dropLast())"
        return "route \(self): \(example) goes upstream as \(sent) (the prefix and the URL's path differ in their"
            + " last '/'); did you mean \(fixed)?"
    }

    /// `http://`, `https://` or `h2c://` `host[:port]` and an optional path (no query or fragment).
    public static func upstream(_ url: String) -> Result<(Scheme, Origin, String?), RouteError> {
        let lower = url.lowercased()
        let scheme: Scheme
        let rest: Substring
        if lower.hasPrefix("http://") {
            (scheme, rest) = (.http, url.dropFirst(7))
        } else if lower.hasPrefix("https://") {
            (scheme, rest) = (.https, url.dropFirst(8))
        } else if lower.hasPrefix("h2c://") {
            (scheme, rest) = (.h2c, url.dropFirst(6))
        } else {
            return .failure(
                RouteError("'\(url)' must be an http://, https:// or h2c:// URL such as http://localhost:3000"))
        }
        let authority = rest.prefix { $0 != "/" }
        guard !authority.contains("@"),
            let origin = Authority.parse(authority, defaultPort: scheme == .https ? 443 : 80),
            !origin.host.isEmpty
        else {
            return .failure(RouteError("'\(url)': '\(authority)' is not host[:port]"))
        }
        let path = rest.dropFirst(authority.count)
        guard !path.contains("?"), !path.contains("#"), !path.contains(" ") else {
            return .failure(RouteError("'\(url)': an upstream URL has a path at most (no query or fragment)"))
        }
        return .success((scheme, origin, path.isEmpty ? nil : String(path)))
    }

    public struct RouteError: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}

/// The routes in the order they are tried: routes for a host before routes for any host, then longer prefixes
/// first (Caddy's and nginx's longest-prefix match); the first whose host and prefix match wins.
public struct RouteTable: Sendable, Hashable {
    public private(set) var routes: [ReverseRoute]
    /// Each route's name and upstream host, made once (an exchange's context carries its route's).
    public private(set) var facts: [RouteFacts]

    public init(_ routes: [ReverseRoute]) {
        // A stable order: as given among equals.
        self.routes = routes.enumerated().sorted { a, b in
            let (x, y) = (a.element, b.element)
            if (x.host != nil) != (y.host != nil) { return x.host != nil }
            if x.prefix.utf8.count != y.prefix.utf8.count { return x.prefix.utf8.count > y.prefix.utf8.count }
            return a.offset < b.offset
        }.map(\.element)
        facts = self.routes.map { route in
            RouteFacts(
                name: route.description, upstreamHost: route.upstream.host,
                // Only an upstream mounted under a path of its own (`/v1/`): one at its root often knows its public
                // prefix already (it sets `Path=/api` itself), and its paths are not told apart from the site's.
                pathMap: route.path.flatMap { $0 == route.prefix || $0 == "/" ? nil : ($0, route.prefix) })
        }
    }

    public var isEmpty: Bool { routes.isEmpty }

    public static func == (a: RouteTable, b: RouteTable) -> Bool { a.routes == b.routes }
    public func hash(into hasher: inout Hasher) { hasher.combine(routes) }

    /// The index of the route for a request to `host` (as the client named it, lowercase, no port) with `target`
    /// (origin-form or `*`): nil when none matches. What it sends upstream is ``upstreamTarget(_:_:)``'s, made
    /// where the request line is written.
    public func match(host: String?, target: String) -> Int? {
        // `OPTIONS *` is for the server as a whole: the route of `/`.
        let path = target == "*" ? "/" : target
        return routes.firstIndex { route in
            (route.host == nil || route.host == host) && path.hasPrefix(route.prefix)
        }
    }

    /// The target to send to route `index`'s upstream for the client's `target` (the route matched it): the
    /// route's path in place of its prefix, or the target as it came.
    public func upstreamTarget(_ index: Int, _ target: String) -> String {
        let route = routes[index]
        guard let path = route.path, target != "*" else { return target }
        return path + target.dropFirst(route.prefix.utf8.count)
    }

    /// The routes as a `404` lists them.
    public var summary: String { facts.map(\.name).joined(separator: "; ") }
}
