import CookieKit

/// One client's cookies as the proxy saw them come and go: a jar (RFC 6265bis §5.7) fed with every Set-Cookie line
/// the client was sent, in the order it was sent, and for each request the jar's prediction of its `Cookie` header
/// (§5.8.3) compared with the header the client sent (``request(_:cookieHeader:)``), with a timeline per cookie
/// name. Sans I/O: times come with each call.
public struct ClientCookies {
    /// How much is kept: events per cookie name, and names per client (the least recently touched name goes).
    public static let eventsPerCookie = 64
    public static let namesPerClient = 256

    /// The jar, on the times of the calls (milliseconds: a `Max-Age=2` cookie set at :22.7 expires at :24.7, as
    /// in a browser), keeping what its limits evict for the timelines.
    var jar: CookieJar
    /// The time of the call in hand (the jar's).
    var now: Int64 {
        get { jar.time }
        set { jar.time = newValue }
    }
    let suffixes: PublicSuffixList
    /// What is known of the line that set each stored cookie (linted only when a verdict needs it).
    struct Origin: Sendable {
        var requestID: UInt64
        var site: RequestSite.Kind
        var line: SetCookie
        var url: RequestURL
        /// Milliseconds since the epoch.
        var time: Int64
        func findings(_ suffixes: PublicSuffixList) -> [LintFinding] {
            CookieLint.findings(for: line, from: url, now: time / 1000, suffixes: suffixes).filter {
                $0.severity != .info
            }
        }
    }
    /// The responses of a client not yet known to keep cookies, in order (a ring of ``pendingLimit``): replayed into
    /// the jar when it shows it does, or when its timeline is asked for. Most such clients (curl without a jar, a
    /// load generator, a health check) never do, and their lines are never parsed.
    var pending: [Pending?] = []
    /// A response kept for later; `times` responses in a row to the same request line with the same lines.
    struct Pending {
        var request: Request
        var lines: SetLines
        var times = 1
        var lastID: UInt64
        var lastTime: Int64
    }
    var pendingHead = 0
    var pendingCount = 0
    public static let pendingLimit = 512
    var origins: [Key: Origin] = [:]
    struct Key: Hashable, Sendable {
        var name: [UInt8]
        var domain: String
        var path: String
        var hostOnly: Bool
        var partition: String?
        init(_ c: StoredCookie) {
            (name, domain, path, hostOnly, partition) = (c.nameBytes, c.domain, c.path, c.hostOnly, c.partitionKey)
        }
    }
    var timelineStorage: [String: Timeline] = [:]
    /// Each cookie name's events, oldest first.
    public var timelines: [String: [Event]] { timelineStorage.mapValues(\.events) }
    /// One name's events, oldest first.
    public func timeline(_ name: String) -> [Event] { timelineStorage[name]?.events ?? [] }
    /// Whether the client keeps cookies: it has sent a Cookie header or Fetch Metadata (a browser). Requests of a
    /// client that does neither (curl without a jar, a load generator, a health check) are not judged: each would
    /// only say that every cookie was expected and not sent.
    public internal(set) var keepsCookies = false
    var tick: UInt64 = 0
    /// The site of the client's last top-level document (a navigation's `Sec-Fetch-Dest: document`): the partition
    /// its subresources and frames read and write Partitioned cookies in (CHIPS). One tab's view: a client with
    /// several tabs of several sites open has its partitions guessed from the one it navigated last.
    var topLevelSite: String? = nil

    /// `keepsCookies`: judge every request from the first (a browser's recording, whose client surely keeps them).
    /// `profile`: the engine whose limits and modes the jar follows (CookieJar+Profile.swift).
    public init(
        suffixes: PublicSuffixList = .system, keepsCookies: Bool = false, profile: CookieJar.Profile = .rfc6265bis
    ) {
        self.keepsCookies = keepsCookies
        self.suffixes = suffixes
        jar = CookieJar(publicSuffixes: suffixes, profile: profile, unit: .milliseconds, clock: nil)
        jar.recordsEvictions = true
    }

    /// The engine whose jar this client's is (set when its `User-Agent` tells, or by `--engine`).
    public var profile: CookieJar.Profile {
        get { jar.profile }
        set { jar.profile = newValue }
    }

    /// The cookies the jar holds now.
    public mutating func cookies(at time: Int64) -> [StoredCookie] {
        settle()
        now = time
        return jar.allCookies()
    }

    /// The jar's view of `request`'s context, with the partition it is in: its own site for a top-level document
    /// (which becomes the client's top-level site), the client's top-level site for anything else.
    mutating func jarContext(_ request: Request) -> CookieJar.RequestContext {
        var context = request.site.jarContext
        if request.site.isDocument {
            topLevelSite = request.site.kind == .crossSiteSubresource ? topLevelSite : request.url.site(suffixes)
        } else {
            context.topLevelSite = topLevelSite
        }
        return context
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
    struct LastReplay {
        var lines: SetLines
        var request: Request
        var generation: UInt64
        /// Per line: its name, and for a stored cookie the cookie and the attributes its expiry comes from.
        var outcomes: [(timeline: Timeline, stored: (StoredCookie, CookieAttributes)?)]
    }
    var lastReplay: LastReplay? = nil
    /// The last request, when it can be judged again without the jar (``repeatLastRequest(_:_:)``).
    var lastRequest: LastRequest? = nil
    /// How often a shortcut was taken (a block refreshed, a request judged as before): for the tests.
    var shortcutsTaken = 0

    /// Replaying the lines of the last replay again: what each would do is known (a refused line is refused again,
    /// the jar being as it was; a stored one replaces itself, its expiry counted from now), so the jar's cookies are
    /// refreshed and the events counted, nothing parsed or evaluated. Nil when it does not apply.
    mutating func repeatLastReplay(_ request: Request, _ lines: SetLines, times: Int, wanted: Bool) -> [Event]? {
        guard let last = lastReplay, last.lines === lines, last.request.sameTarget(request) else { return nil }
        jar.purgeExpired()
        guard jar.generation == last.generation else { return nil }
        var events: [Event] = []
        if wanted { events.reserveCapacity(last.outcomes.count) }
        for (timeline, stored) in last.outcomes {
            var expiry: Int64? = nil
            if let (cookie, attributes) = stored {
                expiry = attributes.expiry(now: now, perSecond: 1000)
                // A lifetime of zero or less deletes: not a refresh.
                if let e = expiry, e <= now { return nil }
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

    /// Why the client's engine does not store a line the draft's jar would (its lint finding of that engine's:
    /// WebKit refusing Secure from http://localhost, Chromium a name with a tab, …, docs/browser-differences.md),
    /// for a client judged in an engine's profile; nil otherwise.
    func engineDrops(_ line: SetCookie, _ url: RequestURL) -> CookieRejection? {
        let engine: EngineVerdict.Engine
        switch jar.profile.engine {
        case .rfc6265bis: return nil
        case .chromium: engine = .chromium
        case .firefox: engine = .firefox
        case .webkit: engine = .webkit
        }
        let findings = CookieLint.findings(for: line, from: url, now: now / 1000, suffixes: suffixes)
        let prefix = engine.rawValue.lowercased() + "-"
        guard findings.contains(where: { $0.severity != .info && $0.code.hasPrefix(prefix) }),
            !findings.contains(where: { $0.severity == .rejects }),
            EngineVerdict.of(findings).contains(where: { $0.engine == engine && !$0.stores }),
            let finding = findings.first(where: { $0.code.hasPrefix(prefix) })
        else { return nil }
        return CookieRejection(engine: engine.rawValue, finding: finding.code, finding.message)
    }

    mutating func replay(_ request: Request, _ lines: SetLines, times: Int = 1, wanted: Bool = true) -> [Event] {
        now = request.time
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
            let outcome: Result<StoredCookie, CookieRejection> =
                engineDrops(sent, url).map { .failure($0) }
                ?? jar.receive(sent, from: url, context: jarContext(request))
            switch outcome {
            case .failure(let rejection):
                e.kind = .rejected
                e.why = .rejection(rejection)
            case .success(let cookie):
                if cookie.isExpired(at: now) {
                    origins[Key(cookie)] = nil
                    e.kind = .deleted
                    e.why = .text("expired on arrival: the server deletes the cookie")
                } else {
                    origins[Key(cookie)] = Origin(
                        requestID: request.id, site: request.site.kind, line: sent, url: url, time: now)
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
            let evictions = jar.takeEvictions()
            if !evictions.isEmpty {
                // The store's limit took cookies out: each name's timeline says so, and a later request that still
                // sends one is told why (``notSet``).
                memoable = false
                for cookie in evictions {
                    origins[Key(cookie)] = nil
                    var evicted = Event(kind: .evicted, request)
                    evicted.value = cookie.value
                    evicted.why = .text(
                        "evicted from the replayed jar: over the store's limit of \(jar.profile.limitDescription), least recently used first"
                    )
                    append(evicted, name: cookie.name)
                }
            }
        }
        memoable = memoable && Set(names).count == names.count
        lastReplay =
            memoable ? LastReplay(lines: lines, request: request, generation: jar.generation, outcomes: outcomes) : nil
        return events
    }

}
