import CookieKit
import ExchangeFacts
import HTTPGrammar

/// The request and response a Set-Cookie arrived with, as the rules see them: the exchange's facts (its one record,
/// ``ExchangeContext``) and what the rules read that the proxy works out beside them, the request's site context.
public struct MessageContext: Sendable {
    /// The exchange, as the proxy recorded it.
    public var exchange: ExchangeContext
    /// The request's site context, when the caller worked it out (nil: unknown, as for a request without any of
    /// the headers that tell).
    public var site: RequestSite.Kind?
    /// The target's path without the query (`/` for none): worked out once per message, not for each `path`
    /// condition and each cached log record that compares it.
    public let path: String

    public init(_ exchange: ExchangeContext, site: RequestSite.Kind? = nil) {
        self.exchange = exchange
        self.site = site
        self.path = Self.path(of: exchange)
    }

    /// The target's path without the query, `/` for none (``path``): a target without a query is its own path, so
    /// no string is made for it.
    public static func path(of exchange: ExchangeContext) -> String {
        let path = exchange.path
        return path.isEmpty ? "/" : path
    }

    /// A message outside the proxy (`try`, `audit`, tests): an exchange of its parts, its host lowercased.
    public init(
        scheme: String, host: String, port: Int, path: String, method: String, status: Int?,
        site: RequestSite.Kind? = nil
    ) {
        self.init(
            ExchangeContext(
                requestID: 0, clientAddress: "", method: method, scheme: scheme, host: host.asciiLowercased,
                port: port, target: path, status: status),
            site: site)
    }

    public var scheme: String { exchange.scheme }
    public var host: String { exchange.host }
    public var port: Int { exchange.port }
    public var method: String { exchange.method }
    public var status: Int? {
        get { exchange.status }
        set { exchange.status = newValue }
    }

    /// The URL cookies are judged against (RFC 6265bis: the request-uri).
    public var requestURL: RequestURL { RequestURL(scheme: scheme, host: host, port: port, path: path) }

    /// A context with nothing in it, for the plans of an engine that never reads one
    /// (``RuleEngine/readsMessageContext`` is false): a caller that neither logs nor records need not build one.
    public static let unread = MessageContext(scheme: "", host: "", port: 0, path: "", method: "", status: nil)
}
