import CookieKit

/// What became of one cookie in one request: the jar's prediction (RFC 6265bis §5.8.3, from every Set-Cookie the
/// client was sent through the proxy) against the `Cookie` header the client really sent.
public struct CookieVerdict: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Sent with the value the jar holds.
        case sentAsExpected = "sent-as-expected"
        /// The jar would send it; the client did not.
        case expectedNotSent = "expected-not-sent"
        /// Sent, but no Set-Cookie through the proxy put it where this request goes.
        case sentNotSet = "sent-not-set"
        /// Sent under a name the jar holds here, with another value.
        case sentOtherValue = "sent-other-value"

        /// The reasons a verdict of this kind is given (``ClientCookies``' judgement, docs/lifecycle.md's table):
        /// none for sent-as-expected; the metrics list exactly these pairs.
        public var reasons: [Reason.Code] {
            switch self {
            case .sentAsExpected: []
            case .expectedNotSent: [.expiring, .setCrossSite, .thirdPartyBlocking, .lint, .unexplained]
            case .sentNotSet:
                [.withheld, .thirdPartyBlocking, .jarMismatch, .rejectedOnSet, .evicted, .expiredInJar, .notSeen]
            case .sentOtherValue: [.changedElsewhere]
            }
        }
    }

    public var kind: Kind
    public var name: String
    /// The value as sent (nil when not sent).
    public var sent: String?
    /// The value the jar holds (nil when the jar holds none for this request).
    public var expected: String?
    /// The jar's cookie: its domain (with a leading dot when not host-only) and path.
    public var domain: String?
    public var path: String?
    /// The request whose response set the jar's cookie.
    public var setBy: UInt64?
    /// Why, for every kind but sent-as-expected.
    public var reason: Reason?

    public init(
        kind: Kind, name: String, sent: String? = nil, expected: String? = nil, domain: String? = nil,
        path: String? = nil, setBy: UInt64? = nil, reason: Reason? = nil
    ) {
        (self.kind, self.name, self.sent, self.expected) = (kind, name, sent, expected)
        (self.domain, self.path, self.setBy, self.reason) = (domain, path, setBy, reason)
    }

    /// The likely cause, with a stable code for tools.
    public struct Reason: Sendable, Hashable {
        public enum Code: String, Sendable, Hashable, CaseIterable {
            /// The cookie expires within seconds of the request: clocks differ by that much.
            case expiring
            /// A lint finding on the line that set it says browsers refuse or alter it.
            case lint
            /// Set by a cross-site response, unpartitioned: engines that block third-party cookies never kept it.
            case setCrossSite = "set-cross-site"
            /// A cross-site subresource or frame, and the cookie is not Partitioned.
            case thirdPartyBlocking = "third-party-blocking"
            /// Nothing the proxy saw explains it.
            case unexplained
            /// The jar holds the name for another domain or path.
            case jarMismatch = "jar-mismatch"
            /// The jar holds it for this URL but withholds it in this request's context (SameSite, Secure over
            /// http, a partition): the message says which, and the engines that send it anyway.
            case withheld
            /// The jar refused its Set-Cookie; the client kept it.
            case rejectedOnSet = "rejected-on-set"
            /// Its Set-Cookie gave it an expiry that has passed.
            case expiredInJar = "expired-in-jar"
            /// The jar's store limit evicted it (the message names the limit and the engine whose it is).
            case evicted
            /// Never set through the proxy.
            case notSeen = "not-seen"
            /// The value changed where the proxy cannot see.
            case changedElsewhere = "changed-elsewhere"
        }
        public var code: Code
        /// The lint finding's code, for `lint`.
        public var finding: String?
        /// The engines that behave so, when the reason is an engine's choice.
        public var engines: [String]
        public var message: String

        public init(_ code: Code, finding: String? = nil, engines: [String] = [], _ message: String) {
            (self.code, self.finding, self.engines, self.message) = (code, finding, engines, message)
        }
    }
}

/// The engines that block unpartitioned third-party cookies by default (in a cross-site subresource or frame):
/// WebKit (Safari, every WKWebView app: Intelligent Tracking Prevention's full third-party cookie blocking),
/// Firefox (Total Cookie Protection keeps a third-party cookie in a jar of the top-level site's, so the first-party
/// one is not sent), and Chrome in Incognito or with third-party cookies blocked.
public let thirdPartyBlockingEngines = ["Safari", "WKWebView", "Firefox", "Chrome (Incognito)"]

/// What the proxy made of one request's cookies: whose they were, the site context, and each cookie's verdict.
public struct RequestJudgement: Sendable {
    public var id: UInt64
    /// The client (its address, or the `--client-by` header's value).
    public var client: String
    public var site: RequestSite
    public var verdicts: [CookieVerdict]
    /// Whether the request carried a Cookie header.
    public var sentCookies: Bool
    /// Whose jar judged it (``CookieJar/Profile``): the client's engine, or the draft's when unknown.
    public var engine: CookieJar.Profile.Engine
    public init(
        id: UInt64, client: String, site: RequestSite, verdicts: [CookieVerdict], sentCookies: Bool,
        engine: CookieJar.Profile.Engine = .rfc6265bis
    ) {
        (self.id, self.client, self.site, self.verdicts, self.sentCookies) = (id, client, site, verdicts, sentCookies)
        self.engine = engine
    }

    /// How many verdicts of each kind.
    public func count(_ kind: CookieVerdict.Kind) -> Int { verdicts.reduce(0) { $0 + ($1.kind == kind ? 1 : 0) } }
}
