import CookieKit
import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A validated, compiled rule (see rules/README.md for the language). Conditions combine with AND; the
/// values of one condition with OR; each condition can be negated.
public struct Rule: Sendable {
    public var name: String
    public var location: SourceLocation
    public var conditions: [Condition]
    public var cookieActions: [CookieAction]
    public var requestHeaderActions: [HeaderAction]
    public var responseHeaderActions: [HeaderAction]
    /// Edits of the request's `Cookie` header.
    public var requestCookieActions: [RequestCookieAction]
    /// `stop`: later rules do not apply to a cookie this rule matched.
    public var stops: Bool

    public init(
        name: String, location: SourceLocation, conditions: [Condition], cookieActions: [CookieAction],
        requestHeaderActions: [HeaderAction], responseHeaderActions: [HeaderAction],
        requestCookieActions: [RequestCookieAction] = [], stops: Bool
    ) {
        (self.name, self.location, self.conditions, self.cookieActions) = (name, location, conditions, cookieActions)
        (self.requestHeaderActions, self.responseHeaderActions) = (requestHeaderActions, responseHeaderActions)
        (self.requestCookieActions, self.stops) = (requestCookieActions, stops)
    }

    /// Whether the rule looks at Set-Cookie lines at all (a request-cookie rule's `where` looks at the client's
    /// cookies, not at Set-Cookie lines).
    public var isCookieRule: Bool {
        requestCookieActions.isEmpty
            && (!cookieActions.isEmpty || stops || conditions.contains { $0.isCookieCondition })
    }
}

public struct Condition: Sendable {
    public var test: Test
    public var negated: Bool

    public enum Test: Sendable {
        case host([HostPattern])
        case path([PathPattern])
        case method(Set<String>)
        /// `http` or `https` (an intercepted request is https).
        case scheme(Set<String>)
        case status([StatusPattern])
        case cookie([NamePattern])
        case state([StatePredicate])
        /// The cookie's Domain attribute (leading dot dropped, lowercased) matches one of these.
        case cookieDomain([HostPattern])
        /// The request's site context (RFC 6265bis §5.2, as ``RequestSite`` reads it from the request's headers).
        case site(Set<RequestSite.Kind>)
        /// The host of the reverse route's upstream (`--route`) the exchange went to; never for a forward proxy's.
        case upstream([HostPattern])
    }

    var isCookieCondition: Bool {
        switch test {
        case .cookie, .state, .cookieDomain: return true
        default: return false
        }
    }
}

/// `example.com` (exactly), `*.example.com` (any subdomain), `*` (any host).
public enum HostPattern: Sendable, Hashable {
    case exact(String)
    /// `suffix` without the dot; `dotted` is `.suffix`, kept so matching allocates nothing.
    case subdomains(of: String, dotted: String)
    case any

    static func subdomains(of suffix: String) -> HostPattern { .subdomains(of: suffix, dotted: "." + suffix) }

    /// `@local` in a `host` or `upstream` condition: every name a local development origin goes by — `localhost`
    /// and its subdomains (RFC 6761 §6.3: they resolve to loopback, and browsers treat them as secure contexts),
    /// and the loopback addresses `127.0.0.1` and `::1`. One definition, so that presets written for local hosts
    /// (`host @local`) and presets that leave them alone (`not host @local`) agree whatever order they load in.
    static let localName = "@local"
    static let local: [HostPattern] = [
        .exact("localhost"), .subdomains(of: "localhost"), .exact("127.0.0.1"), .exact("::1"),
    ]

    func matches(_ host: String) -> Bool {
        switch self {
        // Host names are ASCII here: String == compares their bytes (its fast path).
        case .exact(let h): return host == h
        case .subdomains(_, let dotted): return HostName.hasStrictSuffix(host, dotted)
        case .any: return true
        }
    }
}

/// `/api/` (a prefix) or `/api/*.json` (a glob over the whole path).
public enum PathPattern: Sendable, Hashable {
    case prefix(String)
    case glob(Glob)

    func matches(_ path: String) -> Bool {
        switch self {
        case .prefix(let p): return path.utf8.starts(with: p.utf8)
        case .glob(let g): return g.matches(path)
        }
    }
}

/// `200`, or a class such as `3xx`.
public enum StatusPattern: Sendable, Hashable {
    case exact(Int)
    case hundreds(Int)

    func matches(_ status: Int) -> Bool {
        switch self {
        case .exact(let s): return s == status
        case .hundreds(let h): return status / 100 == h
        }
    }
}

/// A cookie name: exact and case-sensitive, a glob, or a regular expression `/…/`. `@unchecked`: Swift's `Regex`
/// is not `Sendable`, but a compiled one is never mutated (matching makes its own state).
public enum NamePattern: @unchecked Sendable {
    case exact(String)
    case glob(Glob)
    case regex(Regex<AnyRegexOutput>, source: String)

    /// As written in the rules file (a regular expression without its slashes).
    public var source: String {
        switch self {
        case .exact(let name): return name
        case .glob(let glob): return glob.source
        case .regex(_, let source): return source
        }
    }

    func matches(_ name: String) -> Bool {
        switch self {
        case .exact(let exact): return name == exact
        case .glob(let glob): return glob.matches(name)
        case .regex(let regex, _): return (try? regex.firstMatch(in: name)) != nil
        }
    }
}

/// What a cookie is like before any rule changes it.
public enum StatePredicate: String, Sendable, Hashable, CaseIterable {
    case hostOnly = "host-only"
    case hasDomain = "has-domain"
    case secure
    case httpOnly = "httponly"
    case partitioned
    case session
    case persistent
    case sameSiteStrict = "samesite-strict"
    case sameSiteLax = "samesite-lax"
    case sameSiteNone = "samesite-none"
    case sameSiteDefault = "samesite-default"
    /// Browsers would reject it from this URL.
    case rejected

    func holds(_ cookie: SetCookie, _ attributes: CookieAttributes, rejected: Bool) -> Bool {
        switch self {
        case .hostOnly: return (attributes.domain ?? "").isEmpty
        case .hasDomain: return !(attributes.domain ?? "").isEmpty
        case .secure: return attributes.secure
        case .httpOnly: return attributes.httpOnly
        case .partitioned: return attributes.partitioned
        case .session: return attributes.maxAge == nil && attributes.expires == nil
        case .persistent: return attributes.maxAge != nil || attributes.expires != nil
        case .sameSiteStrict: return attributes.sameSite == .strict
        case .sameSiteLax: return attributes.sameSite == .lax
        case .sameSiteNone: return attributes.sameSite == .none
        case .sameSiteDefault: return attributes.sameSite == .default
        case .rejected: return rejected
        }
    }

    /// Whether it holds for a cookie the client's jar holds (a request's cookie, as the proxy saw it set).
    func holds(_ c: StoredCookie) -> Bool {
        switch self {
        case .hostOnly: return c.hostOnly
        case .hasDomain: return !c.hostOnly
        case .secure: return c.secureOnly
        case .httpOnly: return c.httpOnly
        case .partitioned: return c.partitioned
        case .session: return c.expiry == nil
        case .persistent: return c.expiry != nil
        case .sameSiteStrict: return c.sameSite == .strict
        case .sameSiteLax: return c.sameSite == .lax
        case .sameSiteNone: return c.sameSite == .none
        case .sameSiteDefault: return c.sameSite == .default
        case .rejected: return false
        }
    }
}

/// What a rule does to a matched Set-Cookie. Every action is idempotent.
public enum CookieAction: Sendable, Hashable {
    case domain(DomainEdit)
    case path(String?)
    case flag(CookieAttributeKind, Bool)
    case sameSite(String?)
    case maxAge(Int64?)
    case expires(String?)
    /// Remove Max-Age and Expires: a session cookie.
    case session
    /// Lifetime at most this many seconds.
    case capLifetime(Int64)
    case rename(Rename)
    case value(String)
    case drop
    /// Log the cookie even when nothing changes.
    case log

    public enum DomainEdit: Sendable, Hashable {
        case set(String)
        case addDot
        case stripDot
        case remove
        /// Give a host-only cookie a Domain: this one, or the request host's registrable domain.
        case ensure(String?)
    }

    public enum Rename: Sendable, Hashable {
        case to(String)
        case addPrefix(String)
        case stripPrefix(String)
    }
}

/// An edit of one cookie in a request's `Cookie` header; the other pairs keep their bytes.
public enum RequestCookieAction: Sendable {
    /// Remove every pair whose name matches.
    case remove([NamePattern])
    /// Give the pair named so this value, or append `name=value` when the request has none.
    case set(name: String, value: String)
    /// Rename the pair named `from`.
    case rename(from: String, to: String)
}

/// A request or response header edit.
public enum HeaderAction: Sendable, Hashable {
    case set(name: String, value: String)
    case add(name: String, value: String)
    case remove(name: String)
}

/// A set of rules from one or more files, in order.
public struct RuleSet: Sendable {
    public var rules: [Rule]
    public var files: [String]
    public init(rules: [Rule], files: [String]) {
        self.rules = rules
        self.files = files
    }
    public static let empty = RuleSet(rules: [], files: [])
}
