import CookieKit
import ExchangeFacts
import HTTPGrammar

/// What the lifecycle is told and what it keeps: requests, Set-Cookie lines, and the events of a timeline.
extension ClientCookies {
    /// What the lifecycle keeps of a request: the exchange's facts as the proxy recorded them (nothing parsed or
    /// formatted until asked for: most requests are never looked at), when it was made and its site context. A
    /// reference: it is kept and passed along whole, one retain rather than one per string.
    public final class Request: Sendable {
        public let exchange: ExchangeContext
        /// Milliseconds since the epoch.
        public let time: Int64
        public let site: RequestSite

        public init(_ exchange: ExchangeContext, time: Int64, site: RequestSite) {
            (self.exchange, self.time, self.site) = (exchange, time, site)
        }

        /// A request outside the proxy (a HAR entry's, a test's): an exchange of its parts.
        public convenience init(
            id: UInt64, time: Int64, method: String, scheme: String, host: String, port: Int, target: String,
            site: RequestSite
        ) {
            self.init(
                ExchangeContext(
                    requestID: id, clientAddress: "", method: method, scheme: scheme, host: host, port: port,
                    target: target, status: nil),
                time: time, site: site)
        }

        /// From a URL's text (a HAR entry's, a test's).
        public convenience init(
            id: UInt64, time: Int64, method: String, url: RequestURL, urlText: String, site: RequestSite
        ) {
            var target = "/"
            let u = Array(urlText.utf8)
            if let colon = u.firstIndex(of: 0x3A), u[colon...].starts(with: [0x3A, 0x2F, 0x2F]),
                let start = u[(colon + 3)...].firstIndex(where: { $0 == 0x2F || $0 == 0x3F })
            {
                target = (u[start] == 0x3F ? "/" : "") + String(decoding: u[start...], as: UTF8.self)
            }
            self.init(
                id: id, time: time, method: method, scheme: url.scheme, host: url.host,
                port: url.port ?? (url.scheme == "https" || url.scheme == "wss" ? 443 : 80), target: target, site: site)
        }

        public var id: UInt64 { exchange.requestID }
        public var method: String { exchange.method }
        public var host: String { exchange.host }
        /// Path and query as requested.
        public var target: String { exchange.target }

        /// The same request with another id and time.
        public func with(id: UInt64, time: Int64) -> Request {
            var exchange = self.exchange
            exchange.requestID = id
            return Request(exchange, time: time, site: site)
        }

        /// Whether `other` is a request for the same thing in the same context (its id and time aside).
        func sameTarget(_ other: Request) -> Bool { isFor(other.exchange, site: other.site) }

        /// Whether this is a request for what `exchange` asks, in the site context `site` (ids and times aside).
        public func isFor(_ b: ExchangeContext, site: RequestSite) -> Bool {
            let a = exchange
            return a.port == b.port && self.site.kind == site.kind && self.site.isSafeMethod == site.isSafeMethod
                && a.target == b.target && a.host == b.host && a.scheme == b.scheme && a.method == b.method
        }

        /// The URL as cookies see it (no query).
        public var url: RequestURL { exchange.requestURL }

        /// `scheme://host:port/target`, as the log writes URLs.
        public var urlText: String { exchange.url }
    }

    /// One Set-Cookie line of a response: as received and as forwarded (nil: a rule dropped it; a line the proxy
    /// added has no received form), and the rules that matched it. Bytes: parsed only when the line is replayed.
    public struct SetLine: Sendable {
        public var received: [UInt8]?
        public var forwarded: [UInt8]?
        public var rules: [String]
        public init(received: [UInt8]?, forwarded: [UInt8]?, rules: [String] = []) {
            (self.received, self.forwarded, self.rules) = (received, forwarded, rules)
        }
        public init(received: SetCookie?, forwarded: SetCookie?, rules: [String] = []) {
            self.init(received: received?.bytes, forwarded: forwarded?.bytes, rules: rules)
        }
    }

    /// What happened to a cookie name, once or several times in a row (the same line again, the same value sent
    /// again): ``count`` times, from ``requestID`` to ``lastRequestID``.
    public struct Event: Sendable {
        public enum Kind: String, Sendable, Hashable {
            /// A Set-Cookie the jar stored.
            case stored
            /// A Set-Cookie that deleted the jar's cookie (already expired).
            case deleted
            /// A Set-Cookie the jar refused.
            case rejected
            /// A Set-Cookie a rule dropped: the client never saw it.
            case dropped
            /// The jar's store limit took the cookie out (another cookie's Set-Cookie went over it).
            case evicted
            case sentAsExpected = "sent-as-expected"
            case expectedNotSent = "expected-not-sent"
            case sentNotSet = "sent-not-set"
            case sentOtherValue = "sent-other-value"

            /// A request's verdict (not a Set-Cookie's).
            var isRequest: Bool {
                switch self {
                case .sentAsExpected, .expectedNotSent, .sentNotSet, .sentOtherValue: return true
                default: return false
                }
            }
        }
        public var kind: Kind
        public var requestID: UInt64
        public var lastRequestID: UInt64
        public var count = 1
        public var time: Int64
        public var lastTime: Int64
        public var method: String
        public var url: String
        public var site: RequestSite.Kind
        var receivedBytes: [UInt8]?
        var forwardedBytes: [UInt8]?
        public var rules: [String]
        /// The value sent or stored.
        public var value: String?
        /// The jar's reason for a rejection, the verdict's reason for a request.
        public var detail: String? {
            switch why {
            case .none: return nil
            case .text(let t): return t
            case .rejection(let r): return "\(r.code): \(r.reason)"
            case .stored(let c): return ClientCookies.describe(c)
            }
        }
        enum Why: Sendable {
            case text(String)
            case rejection(CookieRejection)
            case stored(StoredCookie)
        }
        var why: Why?
        /// The stored cookie's expiry (milliseconds since the epoch; nil for a session cookie).
        public var expiry: Int64?
        /// What else is worth knowing (a Partitioned and an unpartitioned cookie of one name both held).
        public var note: String?
        /// For Set-Cookie events: the line as received and as forwarded.
        public var received: String? { receivedBytes.map { String(decoding: $0, as: UTF8.self) } }
        public var forwarded: String? { forwardedBytes.map { String(decoding: $0, as: UTF8.self) } }

        init(kind: Kind, _ r: Request, rules: [String] = []) {
            (self.kind, self.requestID, self.lastRequestID, self.time, self.lastTime) = (
                kind, r.id, r.id, r.time, r.time
            )
            (self.method, self.url, self.site, self.rules) = (r.method, r.urlText, r.site.kind, rules)
        }

        /// Whether `other` is this again (the same line, or the same value sent).
        func repeats(_ other: Event) -> Bool {
            kind == other.kind && receivedBytes == other.receivedBytes && forwardedBytes == other.forwardedBytes
                && value == other.value && site == other.site
        }
    }
}
