import CookieKit

/// One client's cookies as the proxy saw them come and go: a jar (RFC 6265bis §5.7) fed with every Set-Cookie line
/// the client was sent, in the order it was sent, and for each request the jar's prediction of its `Cookie` header
/// (§5.8.3) compared with the header the client sent (``request(_:cookieHeader:)``), with a timeline per cookie
/// name. Sans I/O: times come with each call.
public struct ClientCookies: Sendable {
    /// What the proxy knows of a request: its parts as the proxy has them (nothing parsed or formatted until
    /// asked for: most requests are never looked at). A reference: it is kept and passed along whole, one retain
    /// rather than one per string.
    public final class Request: Sendable {
        public let id: UInt64
        /// Milliseconds since the epoch.
        public let time: Int64
        public let method: String
        public let scheme: String
        public let host: String
        public let port: Int
        /// Path and query as requested.
        public let target: String
        public let site: RequestSite

        public required init(
            id: UInt64, time: Int64, method: String, scheme: String, host: String, port: Int, target: String,
            site: RequestSite
        ) {
            (self.id, self.time, self.method, self.site) = (id, time, method, site)
            (self.scheme, self.host, self.port, self.target) = (scheme, host, port, target)
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

        /// The same request with another id and time.
        public func with(id: UInt64, time: Int64) -> Request {
            Request(
                id: id, time: time, method: method, scheme: scheme, host: host, port: port, target: target, site: site)
        }

        /// Whether `other` is a request for the same thing in the same context (its id and time aside).
        func sameTarget(_ other: Request) -> Bool {
            port == other.port && site.kind == other.site.kind && site.isSafeMethod == other.site.isSafeMethod
                && target == other.target && host == other.host && scheme == other.scheme && method == other.method
        }

        /// The URL as cookies see it (no query).
        public var url: RequestURL {
            let path = target.firstIndex { $0 == "?" || $0 == "#" }.map { String(target[..<$0]) } ?? target
            return RequestURL(scheme: scheme, host: host, port: port, path: path)
        }

        /// `scheme://host:port/target`, as the log writes URLs.
        public var urlText: String {
            let h = host.contains(":") ? "[\(host)]" : host
            return "\(scheme)://\(h):\(port)\(target)"
        }
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
        /// The stored cookie's expiry (seconds since the epoch; nil for a session cookie).
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

    /// How much is kept: events per cookie name, and names per client (the least recently touched name goes).
    public static let eventsPerCookie = 64
    public static let namesPerClient = 256

    private final class Clock: @unchecked Sendable {
        var now: Int64 = 0
    }
    private let clock = Clock()
    private var jar: CookieJar
    private let suffixes: PublicSuffixList
    /// What is known of the line that set each stored cookie (linted only when a verdict needs it).
    private struct Origin: Sendable {
        var requestID: UInt64
        var site: RequestSite.Kind
        var line: SetCookie
        var url: RequestURL
        var time: Int64
        func findings(_ suffixes: PublicSuffixList) -> [LintFinding] {
            CookieLint.findings(for: line, from: url, now: time, suffixes: suffixes).filter { $0.severity != .info }
        }
    }
    /// The responses of a client not yet known to keep cookies, in order (a ring of ``pendingLimit``): replayed into
    /// the jar when it shows it does, or when its timeline is asked for. Most such clients (curl without a jar, a
    /// load generator, a health check) never do, and their lines are never parsed.
    private var pending: [Pending?] = []
    /// A response kept for later; `times` responses in a row to the same request line with the same lines.
    private struct Pending {
        var request: Request
        var lines: SetLines
        var times = 1
        var lastID: UInt64
        var lastTime: Int64
    }
    private var pendingHead = 0
    private var pendingCount = 0
    public static let pendingLimit = 512
    private var origins: [Key: Origin] = [:]
    private struct Key: Hashable, Sendable {
        var name: [UInt8]
        var domain: String
        var path: String
        var hostOnly: Bool
        init(_ c: StoredCookie) { (name, domain, path, hostOnly) = (c.nameBytes, c.domain, c.path, c.hostOnly) }
    }
    /// One name's events, changed in place (a repeat counted into it is no dictionary update).
    final class Timeline: @unchecked Sendable {
        var events: [Event] = []
        var touched: UInt64 = 0
    }
    private var timelineStorage: [String: Timeline] = [:]
    /// Each cookie name's events, oldest first.
    public var timelines: [String: [Event]] { timelineStorage.mapValues(\.events) }
    /// One name's events, oldest first.
    public func timeline(_ name: String) -> [Event] { timelineStorage[name]?.events ?? [] }
    /// Whether the client keeps cookies: it has sent a Cookie header or Fetch Metadata (a browser). Requests of a
    /// client that does neither (curl without a jar, a load generator, a health check) are not judged: each would
    /// only say that every cookie was expected and not sent.
    public private(set) var keepsCookies = false
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
        settle()
        clock.now = time / 1000
        return jar.allCookies()
    }

    // MARK: - Responses

    /// Feeds the Set-Cookie lines of `request`'s response, in order. A client not yet known to keep cookies has them
    /// kept for later (none returned; a response whose lines are the previous one's block, for the same request, is
    /// counted into it); otherwise returns the events they made (one per line).
    @discardableResult
    public mutating func response(_ request: Request, lines: SetLines) -> [Event] {
        response(
            id: request.id, time: request.time, lines: lines, sameTarget: { $0.sameTarget(request) }, request: request)
    }

    /// The same, the request made only when it is kept (`sameTarget`: whether a kept one is for the same thing).
    @discardableResult
    public mutating func response(
        id: UInt64, time: Int64, lines: SetLines, sameTarget: (Request) -> Bool, request: @autoclosure () -> Request,
        events wanted: Bool = true
    ) -> [Event] {
        guard keepsCookies else {
            if pending.isEmpty { pending = Array(repeating: nil, count: Self.pendingLimit) }
            let lastSlot = (pendingHead + pendingCount - 1) % Self.pendingLimit
            let repeats =
                pendingCount > 0
                && pending.withUnsafeBufferPointer { ring in
                    // Read in place: copying the entry out would retain and release each of its strings.
                    ring[lastSlot]!.lines === lines && sameTarget(ring[lastSlot]!.request)
                }
            if repeats {
                // The same lines for the same request again (a server refreshing its cookies): counted.
                pending[lastSlot]!.times += 1
                pending[lastSlot]!.lastID = id
                pending[lastSlot]!.lastTime = time
                return []
            }
            let request = request()
            pending[(pendingHead + pendingCount) % Self.pendingLimit] = Pending(
                request: request, lines: lines, lastID: request.id, lastTime: request.time)
            if pendingCount == Self.pendingLimit {
                pendingHead = (pendingHead + 1) % Self.pendingLimit
            } else {
                pendingCount += 1
            }
            return []
        }
        settle()
        return replay(request(), lines, wanted: wanted)
    }

    /// The same, from whole lines.
    @discardableResult
    public mutating func response(_ request: Request, lines: [SetLine]) -> [Event] {
        var builder = SetLinesBuilder()
        for line in lines { builder.add(line) }
        return response(request, lines: builder.result())
    }

    /// Replays the responses kept for later into the jar (their events join the timelines).
    public mutating func settle() {
        while pendingCount > 0 {
            let p = pending[pendingHead]!
            pending[pendingHead] = nil
            pendingHead = (pendingHead + 1) % Self.pendingLimit
            pendingCount -= 1
            _ = replay(p.request, p.lines)
            if p.times > 1 {
                // Replaying the same line again changes only what depends on time (expiry, access): once more at
                // the last time leaves the jar as every repeat would, and the events count them all.
                _ = replay(p.request.with(id: p.lastID, time: p.lastTime), p.lines, times: p.times - 1)
            }
        }
    }

    /// The last replay, when it can be repeated without evaluating its lines again: the same block for the same
    /// request, nothing stored or removed since (the jar's generation), each line's name once.
    private struct LastReplay {
        var lines: SetLines
        var request: Request
        var generation: UInt64
        /// Per line: its name, and for a stored cookie the cookie and the attributes its expiry comes from.
        var outcomes: [(timeline: Timeline, stored: (StoredCookie, CookieAttributes)?)]
    }
    private var lastReplay: LastReplay? = nil
    /// How often a shortcut was taken (a block refreshed, a request judged as before): for the tests.
    private(set) var shortcutsTaken = 0

    /// Replaying the lines of the last replay again: what each would do is known (a refused line is refused again,
    /// the jar being as it was; a stored one replaces itself, its expiry counted from now), so the jar's cookies are
    /// refreshed and the events counted, nothing parsed or evaluated. Nil when it does not apply.
    private mutating func repeatLastReplay(_ request: Request, _ lines: SetLines, times: Int, wanted: Bool) -> [Event]?
    {
        guard let last = lastReplay, last.lines === lines, last.request.sameTarget(request) else { return nil }
        jar.purgeExpired()
        guard jar.generation == last.generation else { return nil }
        var events: [Event] = []
        if wanted { events.reserveCapacity(last.outcomes.count) }
        for (timeline, stored) in last.outcomes {
            var expiry: Int64? = nil
            if let (cookie, attributes) = stored {
                expiry = attributes.expiry(now: clock.now)
                // A lifetime of zero or less deletes: not a refresh.
                if let e = expiry, e <= clock.now { return nil }
                guard jar.refresh(cookie, expiry: expiry) else { return nil }
            }
            if bump(timeline, request, times: times, expiry: expiry), wanted {
                let t = timeline.events
                events.append(t.count >= 2 && t[t.count - 1].kind.isRequest ? t[t.count - 2] : t[t.count - 1])
            }
        }
        shortcutsTaken += 1
        return events
    }

    private mutating func replay(_ request: Request, _ lines: SetLines, times: Int = 1, wanted: Bool = true) -> [Event]
    {
        clock.now = request.time / 1000
        if let repeated = repeatLastReplay(request, lines, times: times, wanted: wanted) { return repeated }
        var outcomes: [(timeline: Timeline, stored: (StoredCookie, CookieAttributes)?)] = []
        var names: [String] = []
        var memoable = true
        var events: [Event] = []
        let url = request.url
        for i in 0..<lines.count {
            let line = lines.line(i)
            let received = line.received.map { SetCookie(bytes: $0) }
            var e = Event(kind: .dropped, request, rules: line.rules)
            e.count = times
            (e.receivedBytes, e.forwardedBytes) = (line.received, line.forwarded)
            guard let bytes = line.forwarded else {
                guard let received else { continue }
                e.why = .text("a rule dropped the line; the client never saw it")
                let (kept, timeline) = append(e, name: received.name)
                outcomes.append((timeline, nil))
                names.append(received.name)
                events.append(kept)
                continue
            }
            let sent = e.forwardedBytes == e.receivedBytes ? received! : SetCookie(bytes: bytes)
            // Whether a cookie of this name and the other partitioning is held (this line may replace it).
            let otherPartitioning = jar.allCookies().contains {
                $0.nameBytes.elementsEqual(sent.nameBytes) && $0.partitioned != sent.attributes.partitioned
            }
            switch jar.receive(sent, from: url, context: request.site.jarContext) {
            case .failure(let rejection):
                e.kind = .rejected
                e.why = .rejection(rejection)
            case .success(let cookie):
                if cookie.isExpired(at: clock.now) {
                    origins[Key(cookie)] = nil
                    e.kind = .deleted
                    e.why = .text("expired on arrival: the server deletes the cookie")
                } else {
                    origins[Key(cookie)] = Origin(
                        requestID: request.id, site: request.site.kind, line: sent, url: url, time: clock.now)
                    e.kind = .stored
                    e.value = cookie.value
                    e.why = .stored(cookie)
                    e.expiry = cookie.expiry
                    if otherPartitioning {
                        e.note =
                            "a Partitioned and an unpartitioned \(cookie.name) are both in play: engines that partition keep both (one per top-level site) and send the partitioned one where this site is a third party, the other where it is first party, so the server sees one value or the other by context"
                    }
                }
            }
            let name = sent.name
            let (kept, timeline) = append(e, name: name)
            if e.kind == .stored, case .stored(let c) = e.why {
                outcomes.append((timeline, (c, sent.attributes)))
            } else {
                // Deleting is not repeated by refreshing; a refusal is (the jar as it was refuses it again).
                if e.kind == .deleted { memoable = false }
                outcomes.append((timeline, nil))
            }
            names.append(name)
            events.append(kept)
        }
        memoable = memoable && Set(names).count == names.count
        lastReplay =
            memoable ? LastReplay(lines: lines, request: request, generation: jar.generation, outcomes: outcomes) : nil
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
        settle()
        clock.now = request.time / 1000
        if let repeated = repeatLastRequest(request, cookieHeader) { return repeated }
        var expected = jar.cookies(for: request.url, context: request.site.jarContext)
        let sentCookies = expected
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
        var verdictTimelines: [Timeline] = []
        for v in verdicts {
            var e = Event(kind: Event.Kind(rawValue: v.kind.rawValue)!, request)
            e.value = v.sent ?? v.expected
            e.why = v.reason.map { .text($0.message) }
            verdictTimelines.append(append(e, name: v.name).1)
        }
        // Every cookie as expected: the same request with the same header, nothing stored or removed since, is
        // judged the same (a judgement with a reason may depend on the time, and is made again).
        lastRequest =
            verdicts.allSatisfy({ $0.kind == .sentAsExpected })
            ? LastRequest(
                request: request, header: cookieHeader?.bytes, generation: jar.generation, verdicts: verdicts,
                timelines: verdictTimelines, sent: sentCookies) : nil
        return verdicts
    }

    private struct LastRequest {
        var request: Request
        var header: [UInt8]?
        var generation: UInt64
        var verdicts: [CookieVerdict]
        var timelines: [Timeline]
        /// The cookies the jar sent (their access time is set again).
        var sent: [StoredCookie]
    }
    private var lastRequest: LastRequest? = nil

    private mutating func repeatLastRequest(_ request: Request, _ header: CookieHeader?) -> [CookieVerdict]? {
        guard let last = lastRequest, last.request.sameTarget(request), last.header == header?.bytes else { return nil }
        jar.purgeExpired()
        guard jar.generation == last.generation else { return nil }
        jar.touch(last.sent)
        shortcutsTaken += 1
        for (v, timeline) in zip(last.verdicts, last.timelines) {
            guard bumpVerdict(timeline, kind: .sentAsExpected, value: v.sent, request) else {
                var e = Event(kind: .sentAsExpected, request)
                e.value = v.sent
                append(e, name: v.name)
                continue
            }
        }
        return last.verdicts
    }

    /// Counts one more of a name's latest verdict event of `kind` with `value` (the latest event, or the one
    /// before it when a response's line alternates with it); false when there is none.
    private mutating func bumpVerdict(_ t: Timeline, kind: Event.Kind, value: String?, _ r: Request) -> Bool {
        let n = t.events.count
        // A timeline the name limit let go (`touched` 0) is no longer this client's: not counted into.
        guard n > 0, t.touched > 0 else { return false }
        let k = n >= 2 && !t.events[n - 1].kind.isRequest ? n - 2 : n - 1
        guard t.events[k].kind == kind, t.events[k].value == value, t.events[k].site == r.site.kind else {
            return false
        }
        tick += 1
        t.touched = tick
        t.events[k].count += 1
        t.events[k].lastRequestID = r.id
        t.events[k].lastTime = r.time
        return true
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
        if let finding = origin?.findings(suffixes).first {
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
            let finding = origin?.findings(suffixes).first
            (v.expected, v.domain, v.path, v.setBy) = (other.value, domain, other.path, origin?.requestID)
            v.reason = .init(
                .jarMismatch, finding: finding?.code, engines: finding.map { Self.engines($0.code) } ?? [],
                "set for \(domain) path \(other.path) (request #\(origin.map { String($0.requestID) } ?? "?")), which RFC 6265bis does not send to this URL"
                    + (finding.map { "; its line has \($0.code): \($0.message)" } ?? ""))
            return v
        }
        let history = timeline(text)
        if let last = history.last(where: { $0.kind == .rejected || $0.kind == .deleted || $0.kind == .stored }) {
            switch last.kind {
            case .rejected:
                v.reason = .init(
                    .rejectedOnSet,
                    "the replayed jar refused its Set-Cookie in request #\(last.lastRequestID) (\(last.detail ?? "")), but the client kept it"
                )
                return v
            case .deleted:
                v.reason = .init(
                    .expiredInJar,
                    "request #\(last.lastRequestID) deleted it (expired on arrival), but the client still sends it")
                return v
            case .stored:
                v.reason = .init(
                    .expiredInJar,
                    "stored by request #\(last.lastRequestID)"
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

    /// Counts one more of the latest event of a name's timeline (the latest, or the one before it when the two
    /// alternate, as a response's line and a request's verdict do).
    private mutating func bump(_ t: Timeline, _ r: Request, times: Int, expiry: Int64?) -> Bool {
        let n = t.events.count
        guard n > 0, t.touched > 0 else { return false }
        tick += 1
        t.touched = tick
        let k = n >= 2 && t.events[n - 1].kind.isRequest ? n - 2 : n - 1
        guard !t.events[k].kind.isRequest else { return false }
        t.events[k].count += times
        t.events[k].lastRequestID = r.id
        t.events[k].lastTime = r.time
        if t.events[k].kind == .stored { t.events[k].expiry = expiry }
        return true
    }

    /// Adds an event to its name's timeline (counted into the last one when it repeats it); returns it as kept,
    /// and the timeline.
    @discardableResult
    private mutating func append(_ e: Event, name: String) -> (Event, Timeline) {
        tick += 1
        let t: Timeline
        if let found = timelineStorage[name] {
            t = found
        } else {
            if timelineStorage.count >= Self.namesPerClient,
                let oldest = timelineStorage.min(by: { $0.value.touched < $1.value.touched })
            {
                // Let go: a shortcut still holding it sees `touched` 0 and counts nothing into it.
                oldest.value.touched = 0
                timelineStorage[oldest.key] = nil
            }
            t = Timeline()
            timelineStorage[name] = t
        }
        t.touched = tick
        let n = t.events.count
        if n > 0 {
            // The last event, or the one before it when the two alternate (a refreshed cookie and its sending).
            let candidates = n >= 2 ? [n - 1, n - 2] : [n - 1]
            if let k = candidates.first(where: { t.events[$0].repeats(e) }),
                k == n - 1 || t.events[n - 1].kind.isRequest != e.kind.isRequest
            {
                t.events[k].count += e.count
                t.events[k].lastRequestID = e.requestID
                t.events[k].lastTime = e.time
                t.events[k].expiry = e.expiry
                if case .stored = e.why { t.events[k].why = e.why }
                return (t.events[k], t)
            }
            // Oldest out a quarter at a time, so that a long timeline is not shifted for every event.
            if n >= Self.eventsPerCookie { t.events.removeFirst(Self.eventsPerCookie / 4) }
        }
        t.events.append(e)
        return (e, t)
    }
}
