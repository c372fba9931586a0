import CookieKit

/// One client's cookies as the proxy saw them come and go: a jar (RFC 6265bis §5.7) fed with every Set-Cookie line
/// the client was sent, in the order it was sent, and for each request the jar's prediction of its `Cookie` header
/// (§5.8.3) compared with the header the client sent (``request(_:cookieHeader:)``), with a timeline per cookie
/// name. Sans I/O: times come with each call.
public struct ClientCookies: Sendable {
    /// What the proxy knows of a request.
    public struct Request: Sendable {
        public var id: UInt64
        /// Milliseconds since the epoch.
        public var time: Int64
        public var method: String
        public var url: RequestURL
        /// The URL as the log writes it (with the query).
        public var urlText: String
        public var site: RequestSite
        public init(id: UInt64, time: Int64, method: String, url: RequestURL, urlText: String, site: RequestSite) {
            (self.id, self.time, self.method, self.url, self.urlText, self.site) = (
                id, time, method, url, urlText, site
            )
        }
    }

    /// One Set-Cookie line of a response: as received and as forwarded (nil: a rule dropped it; a line the proxy
    /// added has no received form), and the rules that matched it.
    public struct SetLine: Sendable {
        public var received: SetCookie?
        public var forwarded: SetCookie?
        public var rules: [String]
        public init(received: SetCookie?, forwarded: SetCookie?, rules: [String] = []) {
            (self.received, self.forwarded, self.rules) = (received, forwarded, rules)
        }
    }

    /// One thing that happened to a cookie name.
    public struct Event: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable {
            /// A Set-Cookie the jar stored.
            case stored
            /// A Set-Cookie that deleted the jar's cookie (already expired).
            case deleted
            /// A Set-Cookie the jar refused.
            case rejected
            /// A Set-Cookie a rule dropped: the client never saw it.
            case dropped
            case sentAsExpected = "sent-as-expected"
            case expectedNotSent = "expected-not-sent"
            case sentNotSet = "sent-not-set"
            case sentOtherValue = "sent-other-value"
        }
        public var kind: Kind
        public var requestID: UInt64
        public var time: Int64
        public var method: String
        public var url: String
        public var site: RequestSite.Kind
        /// For Set-Cookie events: the line as received and as forwarded.
        public var received: String?
        public var forwarded: String?
        public var rules: [String]
        /// The value sent or stored.
        public var value: String?
        /// The jar's reason for a rejection, the verdict's reason for a request.
        public var detail: String?
        /// The stored cookie's expiry (seconds since the epoch; nil for a session cookie).
        public var expiry: Int64?
    }

    /// How much is kept: events per cookie name, and names per client (the least recently touched name goes).
    public static let eventsPerCookie = 64
    public static let namesPerClient = 256

    private final class Clock: @unchecked Sendable {
        var now: Int64 = 0
    }
    private let clock = Clock()
    private var jar: CookieJar
    private let suffixes: PublicSuffixList
    /// What is known of the line that set each stored cookie.
    private struct Origin: Sendable {
        var requestID: UInt64
        var site: RequestSite.Kind
        var findings: [LintFinding]
    }
    private var origins: [Key: Origin] = [:]
    private struct Key: Hashable, Sendable {
        var name: [UInt8]
        var domain: String
        var path: String
        var hostOnly: Bool
        init(_ c: StoredCookie) { (name, domain, path, hostOnly) = (c.nameBytes, c.domain, c.path, c.hostOnly) }
    }
    public private(set) var timelines: [String: [Event]] = [:]
    /// Whether the client keeps cookies: it has sent a Cookie header or Fetch Metadata (a browser). Requests of a
    /// client that does neither (curl without a jar, a load generator, a health check) are not judged: each would
    /// only say that every cookie was expected and not sent.
    public private(set) var keepsCookies = false
    private var touched: [String: UInt64] = [:]
    private var tick: UInt64 = 0

    /// `keepsCookies`: judge every request from the first (a browser's recording, whose client surely keeps them).
    public init(suffixes: PublicSuffixList = .system, keepsCookies: Bool = false) {
        self.keepsCookies = keepsCookies
        let clock = self.clock
        self.suffixes = suffixes
        jar = CookieJar(publicSuffixes: suffixes, clock: { clock.now })
    }

    /// The cookies the jar holds now.
    public mutating func cookies(at time: Int64) -> [StoredCookie] {
        clock.now = time / 1000
        return jar.allCookies()
    }

    // MARK: - Responses

    /// Feeds the Set-Cookie lines of `request`'s response, in order; returns the events it made (one per line).
    @discardableResult
    public mutating func response(_ request: Request, lines: [SetLine]) -> [Event] {
        clock.now = request.time / 1000
        var events: [Event] = []
        for line in lines {
            guard let sent = line.forwarded else {
                if let received = line.received {
                    events.append(
                        record(
                            .dropped, request, name: received.name, received: received, forwarded: nil,
                            rules: line.rules, detail: "a rule dropped the line; the client never saw it"))
                }
                continue
            }
            switch jar.receive(sent, from: request.url, context: request.site.jarContext) {
            case .failure(let rejection):
                events.append(
                    record(
                        .rejected, request, name: sent.name, received: line.received, forwarded: sent,
                        rules: line.rules, detail: "\(rejection.code): \(rejection.reason)"))
            case .success(let cookie):
                if cookie.isExpired(at: clock.now) {
                    origins[Key(cookie)] = nil
                    events.append(
                        record(
                            .deleted, request, name: sent.name, received: line.received, forwarded: sent,
                            rules: line.rules, detail: "expired on arrival: the server deletes the cookie"))
                    continue
                }
                origins[Key(cookie)] = Origin(
                    requestID: request.id, site: request.site.kind,
                    findings: CookieLint.findings(for: sent, from: request.url, now: clock.now, suffixes: suffixes)
                        .filter { $0.severity != .info })
                var e = record(
                    .stored, request, name: sent.name, received: line.received, forwarded: sent, rules: line.rules,
                    value: cookie.value, detail: Self.describe(cookie))
                e.expiry = cookie.expiry
                replaceLast(e, name: sent.name)
                events.append(e)
            }
        }
        return events
    }

    static func describe(_ c: StoredCookie) -> String {
        var parts = [c.hostOnly ? "host-only \(c.domain)" : "domain .\(c.domain)", "path \(c.path)"]
        if c.secureOnly { parts.append("Secure") }
        if c.httpOnly { parts.append("HttpOnly") }
        parts.append("SameSite=\(c.sameSite)")
        if c.partitioned { parts.append("Partitioned") }
        parts.append(c.expiry.map { "expires \(CookieDate.rfc3339($0))" } ?? "session")
        return parts.joined(separator: ", ")
    }

    // MARK: - Requests

    /// Compares what the jar would send with `request` to the `Cookie` header the client sent (nil: none), cookie
    /// by cookie: a sent pair with the jar's name and value is as expected; a name the jar holds here with another
    /// value is sent-other-value; a name the jar does not hold here is sent-not-set; what is left of the jar's
    /// prediction is expected-not-sent, each with its likely reason.
    public mutating func request(_ request: Request, cookieHeader: CookieHeader?) -> [CookieVerdict] {
        clock.now = request.time / 1000
        if cookieHeader != nil || request.site.fetchMetadata { keepsCookies = true }
        guard keepsCookies else { return [] }
        var expected = jar.cookies(for: request.url, context: request.site.jarContext)
        var verdicts: [CookieVerdict] = []
        var unmatched: [(name: [UInt8], value: [UInt8])] = []
        for pair in cookieHeader?.pairs ?? [] {
            let name = Array(cookieHeader!.nameBytes(pair))
            let value = Array(cookieHeader!.valueBytes(pair))
            if let i = expected.firstIndex(where: { $0.nameBytes == name && $0.valueBytes == value }) {
                let c = expected.remove(at: i)
                verdicts.append(verdict(.sentAsExpected, c, sent: value, request))
            } else {
                unmatched.append((name, value))
            }
        }
        for (name, value) in unmatched {
            if let i = expected.firstIndex(where: { $0.nameBytes == name }) {
                let c = expected.remove(at: i)
                var v = verdict(.sentOtherValue, c, sent: value, request)
                v.reason = .init(
                    .changedElsewhere,
                    "the jar holds the value set by request #\(v.setBy.map(String.init) ?? "?"); the client sent another: changed by document.cookie or by a response not seen here"
                )
                verdicts.append(v)
            } else {
                verdicts.append(notSet(name: name, value: value, request))
            }
        }
        for c in expected {
            var v = verdict(.expectedNotSent, c, sent: nil, request)
            v.reason = whyNotSent(c, request)
            verdicts.append(v)
        }
        for v in verdicts {
            var e = Event(
                kind: Event.Kind(rawValue: v.kind.rawValue)!, requestID: request.id, time: request.time,
                method: request.method, url: request.urlText, site: request.site.kind, rules: [])
            e.value = v.sent ?? v.expected
            e.detail = v.reason?.message
            append(e, name: v.name)
        }
        return verdicts
    }

    private func verdict(_ kind: CookieVerdict.Kind, _ c: StoredCookie, sent: [UInt8]?, _ r: Request)
        -> CookieVerdict
    {
        CookieVerdict(
            kind: kind, name: c.name, sent: sent.map { String(decoding: $0, as: UTF8.self) }, expected: c.value,
            domain: c.hostOnly ? c.domain : "." + c.domain, path: c.path, setBy: origins[Key(c)]?.requestID)
    }

    /// The likely reason the client did not send a cookie the jar would: the first that applies, most specific
    /// first.
    private func whyNotSent(_ c: StoredCookie, _ r: Request) -> CookieVerdict.Reason {
        let origin = origins[Key(c)]
        if let expiry = c.expiry, expiry - clock.now <= 2 {
            return .init(
                .expiring,
                "it expires at \(CookieDate.rfc3339(expiry)), within seconds of this request: the client's clock or its rounding of Max-Age may have expired it"
            )
        }
        if let finding = origin?.findings.first {
            return .init(
                .lint, finding: finding.code, engines: Self.engines(finding.code),
                "its Set-Cookie (request #\(origin!.requestID)) has \(finding.severity.rawValue) \(finding.code): \(finding.message)"
            )
        }
        if let origin, origin.site.isCrossSite, !c.partitioned {
            return .init(
                .setCrossSite, engines: thirdPartyBlockingEngines,
                "it was set by a cross-site response (request #\(origin.requestID)) without Partitioned: engines that block third-party cookies never stored it"
            )
        }
        if r.site.kind == .crossSiteSubresource, !c.partitioned {
            return .init(
                .thirdPartyBlocking, engines: thirdPartyBlockingEngines,
                "a cross-site subresource or frame request (\(r.site.evidence)) and the cookie is not Partitioned: \(thirdPartyBlockingEngines.joined(separator: ", ")) do not send it"
            )
        }
        return .init(
            .unexplained,
            "nothing seen explains it: deleted by script or by the user, evicted, or sent from a context the request's headers do not show (a frame of another site)"
        )
    }

    static func engines(_ code: String) -> [String] {
        code.hasPrefix("chromium-") ? ["Chromium"] : []
    }

    private mutating func notSet(name: [UInt8], value: [UInt8], _ r: Request) -> CookieVerdict {
        let text = String(decoding: name, as: UTF8.self)
        var v = CookieVerdict(kind: .sentNotSet, name: text, sent: String(decoding: value, as: UTF8.self))
        if let other = jar.allCookies().first(where: { $0.nameBytes == name }) {
            let domain = other.hostOnly ? other.domain : "." + other.domain
            let origin = origins[Key(other)]
            (v.expected, v.domain, v.path, v.setBy) = (other.value, domain, other.path, origin?.requestID)
            v.reason = .init(
                .jarMismatch, finding: origin?.findings.first?.code,
                engines: origin?.findings.first.map { Self.engines($0.code) } ?? [],
                "set for \(domain) path \(other.path) (request #\(origin.map { String($0.requestID) } ?? "?")), which RFC 6265bis does not send to this URL"
                    + (origin?.findings.first.map { "; its line has \($0.code): \($0.message)" } ?? ""))
            return v
        }
        let history = timelines[text] ?? []
        if let last = history.last(where: { $0.kind == .rejected || $0.kind == .deleted || $0.kind == .stored }) {
            switch last.kind {
            case .rejected:
                v.reason = .init(
                    .rejectedOnSet,
                    "the replayed jar refused its Set-Cookie in request #\(last.requestID) (\(last.detail ?? "")), but the client kept it"
                )
                return v
            case .deleted:
                v.reason = .init(
                    .expiredInJar,
                    "request #\(last.requestID) deleted it (expired on arrival), but the client still sends it")
                return v
            case .stored:
                v.reason = .init(
                    .expiredInJar,
                    "stored by request #\(last.requestID)"
                        + (last.expiry.map { ", expired at \(CookieDate.rfc3339($0))" } ?? "")
                        + "; the client still sends it (its clock, or a Set-Cookie not seen here)")
                return v
            default: break
            }
        }
        v.reason = .init(
            .notSeen,
            "never set by a response seen here: set by script (document.cookie), by a response not seen (before the proxy started or the recording began)"
        )
        return v
    }

    // MARK: - The timeline

    private mutating func record(
        _ kind: Event.Kind, _ r: Request, name: String, received: SetCookie?, forwarded: SetCookie?,
        rules: [String], value: String? = nil, detail: String? = nil
    ) -> Event {
        var e = Event(
            kind: kind, requestID: r.id, time: r.time, method: r.method, url: r.urlText, site: r.site.kind,
            received: received.map { String(decoding: $0.bytes, as: UTF8.self) },
            forwarded: forwarded.map { String(decoding: $0.bytes, as: UTF8.self) }, rules: rules)
        e.value = value
        e.detail = detail
        if kind != .stored { append(e, name: name) }
        return e
    }

    private mutating func replaceLast(_ e: Event, name: String) { append(e, name: name) }

    private mutating func append(_ e: Event, name: String) {
        tick += 1
        if timelines[name] == nil && timelines.count >= Self.namesPerClient,
            let oldest = touched.min(by: { $0.value < $1.value })?.key
        {
            timelines[oldest] = nil
            touched[oldest] = nil
        }
        timelines[name, default: []].append(e)
        if timelines[name]!.count > Self.eventsPerCookie { timelines[name]!.removeFirst() }
        touched[name] = tick
    }
}
