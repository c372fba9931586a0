import CookieKit
import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The request and response a Set-Cookie arrived with, as the rules see them.
public struct MessageContext: Sendable {
    public var scheme: String
    public var host: String
    public var port: Int
    /// Path without the query.
    public var path: String
    public var method: String
    public var status: Int?
    /// The request's site context, when the caller worked it out (nil: unknown, as for a request without any of
    /// the headers that tell).
    public var site: RequestSite.Kind?

    public init(
        scheme: String, host: String, port: Int, path: String, method: String, status: Int?,
        site: RequestSite.Kind? = nil
    ) {
        self.scheme = scheme
        self.host = host.asciiLowercased
        self.port = port
        self.path = path.isEmpty ? "/" : path
        self.method = method
        self.status = status
        self.site = site
    }

    /// The URL cookies are judged against (RFC 6265bis: the request-uri).
    public var requestURL: RequestURL { RequestURL(scheme: scheme, host: host, port: port, path: path) }

    /// A context with nothing in it, for the plans of an engine that never reads one
    /// (``RuleEngine/readsMessageContext`` is false): a caller that neither logs nor records need not build one.
    public static let unread = MessageContext(scheme: "", host: "", port: 0, path: "", method: "", status: nil)
}
