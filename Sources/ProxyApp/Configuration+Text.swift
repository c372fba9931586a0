import ExchangeFacts
import Foundation
import HTTPGrammar
import ProxyCore
import ProxyTLS

/// A ``ProxyApp/Configuration``'s values read from text as a person writes them (a command line, a settings file):
/// each reader says why a text is not one, so that a front end only names where the text came from.
extension ProxyApp.Configuration {
    /// Why a text is not the value asked for.
    public struct TextError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The configuration folder (the CA, the log key, the inspector's token and address): `$COOKIE_PROXY_HOME`, else
    /// `$XDG_CONFIG_HOME/cookie-proxy`, else `~/.config/cookie-proxy`.
    public static func defaultHome(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        CertificateAuthority.defaultDirectory(environment: environment)
    }

    /// `HOST:PORT` (an IPv6 host in brackets; `localhost` is 127.0.0.1; a port alone is loopback's), nil when not.
    public static func address(_ text: String) -> (host: String, port: Int)? {
        HostPort.listenAddress(text).map { (host: $0.0, port: $0.1) }
    }

    /// The `http://HOST:PORT` URL of a local service at `host` and `port` (an IPv6 host in brackets).
    public static func serviceURL(host: String, port: Int) -> String { "http://\(HostPort.format(host, port))" }

    /// A `--resolve HOST:ADDRESS` entry (as curl's, without the port): the host lowercased and a numeric address.
    public static func resolveEntry(_ text: String) -> (host: String, address: String)? { HostPort.resolveEntry(text) }

    /// The upstream proxies of `value` (a proxy URL, or `env` for `HTTP_PROXY`/`HTTPS_PROXY`/`NO_PROXY`; nil:
    /// direct) with the hosts in `bypass` going direct (``UpstreamProxyRoutes/configured(_:bypass:environment:)``).
    public mutating func setUpstreamProxies(
        _ value: String?, bypass: [String], environment: (String) -> String?
    ) -> TextError? {
        switch UpstreamProxyRoutes.configured(value, bypass: bypass, environment: environment) {
        case .success(let routes):
            upstreamProxies = routes
            return nil
        case .failure(let error): return TextError(description: error.description)
        }
    }

    /// The routes of `--reverse URL` (the route `/=URL`) and `--route [HOST]/PREFIX=URL` values, in that order:
    /// each read (``ReverseRoute/parse(_:)``) or refused with the reason, and a second route for a host and prefix
    /// refused (only the first would ever be tried).
    public static func routes(reverse: String?, routes texts: [String]) -> Result<[ReverseRoute], TextError> {
        var routes: [ReverseRoute] = []
        if let reverse {
            guard case .success(let route) = ReverseRoute.parse("/=" + reverse) else {
                return .failure(
                    TextError(
                        description:
                            "--reverse '\(reverse)' must be an http://, https:// or h2c:// URL such as"
                            + " http://localhost:3000"))
            }
            routes.append(route)
        }
        for text in texts {
            switch ReverseRoute.parse(text) {
            case .success(let route):
                if let earlier = routes.first(where: { $0.host == route.host && $0.prefix == route.prefix }) {
                    return .failure(
                        TextError(
                            description:
                                "--route '\(text)' repeats the prefix \(route.host ?? "")\(route.prefix) of \(earlier);"
                                + " give each prefix one route"))
                }
                routes.append(route)
            case .failure(let error): return .failure(TextError(description: "--route \(error)"))
            }
        }
        return .success(routes)
    }

    /// The route of `texts` that a request for `path` on `host` takes (as the running proxy chooses), nil without
    /// routes; refused when none does, naming the routes, as the running proxy's `404` does.
    public static func route(_ texts: [String], host: String, path: String) -> Result<RouteFacts?, TextError> {
        guard !texts.isEmpty else { return .success(nil) }
        switch routes(reverse: nil, routes: texts) {
        case .failure(let error): return .failure(error)
        case .success(let routes):
            let table = RouteTable(routes)
            guard let index = table.match(host: host, target: path) else {
                return .failure(
                    TextError(description: "no --route takes \(path) on \(host) (the routes: \(table.summary))"))
            }
            return .success(table.facts[index])
        }
    }
}
