/// Whose jar a ``CookieJar`` behaves as. RFC 6265bis leaves the store's limits, its eviction order and a few
/// modes to the user agent (§5.7 "remove excess cookies", §5.6.7.1 Lax-allowing-unsafe, §5.6.7 Lax by default);
/// each engine fills them in its own way, and a replayed jar that guesses otherwise blames the client for the
/// jar's own choices. The draft's suggestions stay the default for a client whose engine is unknown.
extension CookieJar {
    public struct Profile: Sendable, Hashable {
        public enum Engine: String, Sendable, Hashable, CaseIterable {
            case rfc6265bis
            case chromium
            case firefox
            case webkit
        }
        public var engine: Engine
        /// Cookies in one bucket (see ``bucketIsSite``) before the jar purges it; nil: no limit.
        public var bucketLimit: Int?
        /// How many the purge leaves (Chromium purges 180 down to 150 at once; the draft evicts one at a time).
        public var bucketPurgedTo: Int
        /// A bucket is the cookie's registrable domain (its site: a host and all its subdomains share one, as
        /// Chromium's and Firefox's stores are keyed) rather than the cookie's domain (the draft's "per domain").
        public var bucketIsSite: Bool
        /// Which of a full bucket's cookies go (``Eviction``).
        public var eviction: Eviction

        public enum Eviction: Sendable, Hashable {
            /// Insecure cookies first, then secure ones, each least recently used first, down to
            /// ``bucketPurgedTo`` (the draft's §5.7 order).
            case insecureFirst
            /// Chromium's six rounds (Low insecure, Low, Medium insecure, High insecure, Medium, High), each
            /// sparing its priority's quota (`kDomainCookiesQuota{Low,Medium,High}`: Low, Medium, High here).
            case priorityRounds([Int])
            /// Firefox's `FindStaleCookies`: when a cookie is added to a full bucket, its least recently used
            /// insecure cookies go, down to ``bucketPurgedTo`` with the newcomer counted (as Firefox itself does,
            /// measured in ``EngineLifecycleEndToEndTests``: docs/architecture.md); only when it has none, and the newcomer is
            /// secure, secure ones; otherwise the newcomer is not kept.
            case staleInsecure
        }

        /// Chromium's priority quotas, when the profile reads `Priority`.
        public var priorityQuotas: [Int]? {
            if case .priorityRounds(let quotas) = eviction { return quotas }
            return nil
        }
        /// Partitioned cookies per partition and site before the least recently used go, and their names' and
        /// values' bytes (Chromium's `kPerPartitionDomainMaxCookies` and `kPerPartitionDomainMaxCookieBytes`); nil:
        /// counted in their bucket as any cookie.
        public var partitionLimit: PartitionLimit?
        public struct PartitionLimit: Sendable, Hashable {
            public var count: Int
            public var bytes: Int
            public init(count: Int, bytes: Int) { (self.count, self.bytes) = (count, bytes) }
        }
        /// Cookies in the whole jar before a global purge, and how many it leaves.
        public var totalLimit: Int
        public var totalPurgedTo: Int
        /// Only cookies not used for this many seconds go in a global purge (Chromium's
        /// `kSafeFromGlobalPurgeDays`, Firefox's `network.cookie.purgeAge`: 30 days); nil: any.
        public var totalPurgeMinimumIdle: Int64?
        /// A cookie's last-access time is updated only when it is this many seconds old (Chromium's
        /// `kDefaultAccessUpdateThresholdSeconds`, Firefox's `kCookieStaleThreshold`: 60): within a minute the
        /// least recently used are the oldest created.
        public var accessUpdateInterval: Int64
        /// A cookie without SameSite is Lax (the draft, Chromium) rather than None (Firefox, WebKit).
        public var laxByDefault: Bool
        /// Seconds after its creation in which a cookie without SameSite still goes with a cross-site top-level
        /// unsafe request (§5.6.7.1, Lax-allowing-unsafe; Chromium: two minutes); nil: never.
        public var laxAllowingUnsafe: Int64?
        /// Unpartitioned cookies are neither stored from nor sent to a cross-site subresource or frame (Safari's
        /// and every WKWebView's Intelligent Tracking Prevention).
        public var blocksThirdParty: Bool
        /// A cookie set by a cross-site subresource or frame is kept in the top-level site's partition, and
        /// only that partition's cookies go to one (Firefox's Total Cookie Protection).
        public var partitionsThirdParty: Bool
        /// What the engine refuses on storage where engines differ: one table, read by the replayed jar
        /// (``CookieJar/evaluate(_:from:via:context:now:suffixes:unit:laxByDefault:acceptance:)``) and by the
        /// lint's engine findings, so that a profile never keeps what its engine's lint says it refuses, or the
        /// reverse.
        public var acceptance = Acceptance.draft

        /// Storage checks of RFC 6265bis §5.7 that an engine applies or not.
        public struct Acceptance: Sendable, Hashable {
            /// SameSite=None without Secure is refused (§5.7 step 19; WebKit keeps it).
            public var sameSiteNoneNeedsSecure: Bool
            /// `__Secure-` and `__Host-` names must follow their prefix's rules (§5.7 steps 20–21; WebKit keeps
            /// them anyway).
            public var enforcesPrefixes: Bool
            /// A loopback host is a secure origin that may set Secure cookies over http (§5.7 step 13 lets a user
            /// agent decide; WebKit does not).
            public var loopbackIsSecure: Bool

            /// The draft's, Chromium's and Firefox's.
            public static let draft = Acceptance(
                sameSiteNoneNeedsSecure: true, enforcesPrefixes: true, loopbackIsSecure: true)
            /// WebKitGTK's, measured (docs/browser-differences.md).
            public static let webkit = Acceptance(
                sameSiteNoneNeedsSecure: false, enforcesPrefixes: false, loopbackIsSecure: false)
        }

        /// The draft's suggestions (§5.7): 50 cookies per domain, 3,000 in all, insecure and least recently
        /// used first; Lax by default, no Lax-allowing-unsafe.
        public static let rfc6265bis = Profile(
            engine: .rfc6265bis, bucketLimit: 50, bucketPurgedTo: 50, bucketIsSite: false, eviction: .insecureFirst,
            totalLimit: 3000, totalPurgedTo: 3000, totalPurgeMinimumIdle: nil, accessUpdateInterval: 0,
            laxByDefault: true, laxAllowingUnsafe: nil, blocksThirdParty: false, partitionsThirdParty: false)

        /// Chromium's `net::CookieMonster`: 180 per registrable domain purged to 150 by priority quotas (30 Low,
        /// 50 Medium, 70 High), insecure before secure; 3,300 in all purged to 3,000 among cookies idle 30 days;
        /// partitioned cookies 180 and 10 KiB per partition and site; access times every 60 s; Lax by default
        /// with two minutes of Lax-allowing-unsafe; third-party cookies allowed (Chrome's default).
        public static let chromium: Profile = {
            var p = Profile(
                engine: .chromium, bucketLimit: 180, bucketPurgedTo: 150, bucketIsSite: true,
                eviction: .priorityRounds([30, 50, 70]), totalLimit: 3300, totalPurgedTo: 3000,
                totalPurgeMinimumIdle: 30 * 86_400, accessUpdateInterval: 60, laxByDefault: true,
                laxAllowingUnsafe: 120, blocksThirdParty: false, partitionsThirdParty: false)
            p.partitionLimit = PartitionLimit(count: 180, bytes: 10_240)
            return p
        }()

        /// Firefox's `CookieStorage`: a cookie added to a base domain holding `network.cookie.maxPerHost` 180
        /// takes out its least recently used insecure cookies down to `quotaPerHost` 150 (secure ones only for a
        /// secure newcomer); `maxNumber` 3,000 (purged past 3,300 among cookies idle `purgeAge`, 30 days); access
        /// times every 60 s; no Lax by default (`network.cookie.sameSite.laxByDefault` is off); Total Cookie
        /// Protection partitions third parties.
        public static let firefox = Profile(
            engine: .firefox, bucketLimit: 180, bucketPurgedTo: 150, bucketIsSite: true, eviction: .staleInsecure,
            totalLimit: 3300, totalPurgedTo: 3000, totalPurgeMinimumIdle: 30 * 86_400, accessUpdateInterval: 60,
            laxByDefault: false, laxAllowingUnsafe: nil, blocksThirdParty: false, partitionsThirdParty: true)

        /// WebKit (Safari, WKWebView, WebKitGTK): no per-site limit is documented (libsoup's jar, WebKitGTK's, has
        /// none), so none is applied; the draft's 3,000 in all bounds the replayed jar's memory. No Lax by
        /// default; unpartitioned third-party cookies blocked (Intelligent Tracking Prevention).
        public static let webkit = Profile(
            engine: .webkit, bucketLimit: nil, bucketPurgedTo: 0, bucketIsSite: false, eviction: .insecureFirst,
            totalLimit: 3000, totalPurgedTo: 3000, totalPurgeMinimumIdle: nil, accessUpdateInterval: 0,
            laxByDefault: false, laxAllowingUnsafe: nil, blocksThirdParty: true, partitionsThirdParty: false,
            acceptance: .webkit)

        public static func of(_ engine: Engine) -> Profile {
            switch engine {
            case .rfc6265bis: return .rfc6265bis
            case .chromium: return .chromium
            case .firefox: return .firefox
            case .webkit: return .webkit
            }
        }

        /// The engine a `User-Agent` names, or nil when it names none of the three. Every iOS browser is WebKit
        /// (`CriOS`, `FxiOS`, `EdgiOS`, an app's WKWebView), whatever brand it shows; Edge, Opera, Brave and
        /// Electron apps carry `Chrome/`.
        public static func engine(userAgent: String) -> Engine? {
            var text = userAgent
            // Searched as bytes: read for every new loopback client (String's `contains` is a generic search, far
            // dearer: docs/architecture.md).
            return text.withUTF8 { ua in
                func has(_ word: StaticString) -> Bool { Self.contains(ua, word) }
                if has("CriOS/") || has("FxiOS/") || has("EdgiOS/") { return .webkit }
                if has("Firefox/") && has("Gecko/") { return .firefox }
                if has("Chrome/") || has("Chromium/") { return .chromium }
                if has("AppleWebKit/") { return .webkit }
                return nil
            }
        }

        static func contains(_ text: UnsafeBufferPointer<UInt8>, _ word: StaticString) -> Bool {
            let n = word.utf8CodeUnitCount
            guard n > 0, text.count >= n else { return false }
            let w = word.utf8Start
            var i = 0
            while i + n <= text.count {
                if text[i] == w[0] {
                    var k = 1
                    while k < n && text[i + k] == w[k] { k += 1 }
                    if k == n { return true }
                }
                i += 1
            }
            return false
        }

        /// What the bucket limits say, for a reason: `180 per site (Chromium)`.
        public var limitDescription: String {
            let who = engine == .rfc6265bis ? "RFC 6265bis §5.7" : engine.displayName
            guard let limit = bucketLimit else { return "\(totalLimit) in all (\(who))" }
            let purge = bucketPurgedTo < limit ? ", purged to \(bucketPurgedTo)" : ""
            return "\(limit) per \(bucketIsSite ? "site" : "domain")\(purge) (\(who))"
        }
    }

    /// The unit of the jar's clock and of every time it keeps.
    public enum TimeUnit: Sendable, Hashable {
        case seconds
        case milliseconds
        public var perSecond: Int64 { self == .seconds ? 1 : 1000 }
    }
}

extension CookieJar.Profile.Engine {
    public var displayName: String {
        switch self {
        case .rfc6265bis: return "RFC 6265bis"
        case .chromium: return "Chromium"
        case .firefox: return "Firefox"
        case .webkit: return "WebKit"
        }
    }
}

// MARK: - Removing excess cookies (§5.7)

extension CookieJar {
    /// The bucket `domain`'s cookies count in: the domain, or its registrable domain (cached: the Public Suffix
    /// List is read once per domain).
    mutating func bucket(of domain: String) -> String {
        guard profile.bucketIsSite else { return domain }
        if let known = bucketCache[domain] { return known }
        let site = suffixes.registrableDomain(of: domain) ?? domain
        if bucketCache.count > 4096 { bucketCache.removeAll(keepingCapacity: true) }
        bucketCache[domain] = site
        return site
    }

    /// Every cookie whose domain is in `bucket` and that `included` takes.
    func cookies(inBucket bucket: String, _ included: (StoredCookie) -> Bool) -> [StoredCookie] {
        var result: [StoredCookie] = []
        for (domain, list) in byDomain {
            guard domain == bucket || (profile.bucketIsSite && domain.hasSuffix("." + bucket)) else { continue }
            for c in list where included(c) { result.append(c) }
        }
        return result
    }

    /// Least recently used first, then oldest created (Chromium's `LRACookieSorter`).
    static func lessRecentlyUsed(_ a: StoredCookie, _ b: StoredCookie) -> Bool {
        if a.lastAccessTime != b.lastAccessTime { return a.lastAccessTime < b.lastAccessTime }
        if a.creationTime != b.creationTime { return a.creationTime < b.creationTime }
        return a.creationSequence < b.creationSequence
    }

    /// After `cookie` was added: the purges its bucket, its partition and the whole jar are due for.
    mutating func evictExcess(after cookie: StoredCookie, now: Int64) {
        if let partition = cookie.partitionKey, let limit = profile.partitionLimit {
            var cookies = cookies(inBucket: bucket(of: cookie.domain)) { $0.partitionKey == partition }
            var bytes = cookies.reduce(0) { $0 + $1.nameBytes.count + $1.valueBytes.count }
            if cookies.count > limit.count || bytes > limit.bytes {
                cookies.sort(by: Self.lessRecentlyUsed)
                var victims: [StoredCookie] = []
                for c in cookies where cookies.count - victims.count > limit.count || bytes > limit.bytes {
                    victims.append(c)
                    bytes -= c.nameBytes.count + c.valueBytes.count
                }
                remove(victims)
            }
        } else if let limit = profile.bucketLimit {
            // Partitioned cookies count here too unless the profile bounds them per partition.
            let partitionsApart = profile.partitionLimit != nil
            var cookies = cookies(inBucket: bucket(of: cookie.domain)) { !partitionsApart || $0.partitionKey == nil }
            if cookies.count > limit {
                cookies.sort(by: Self.lessRecentlyUsed)
                remove(bucketVictims(cookies, adding: cookie))
            }
        }
        if count > profile.totalLimit {
            let idleBefore = profile.totalPurgeMinimumIdle.map { now - $0 * unit.perSecond } ?? .max
            var candidates = byDomain.values.flatMap { $0 }.filter { $0.lastAccessTime < idleBefore }
            candidates.sort(by: Self.lessRecentlyUsed)
            let goal = count - profile.totalPurgedTo
            let insecure = candidates.filter { !$0.secureOnly }
            let secure = candidates.filter { $0.secureOnly }
            remove(Array((insecure + secure).prefix(goal)))
        }
    }

    /// Which of a bucket's cookies (least recently used first) go now that `added` made it hold more than its limit
    /// (the profile's ``Profile/Eviction``).
    func bucketVictims(_ sorted: [StoredCookie], adding added: StoredCookie) -> [StoredCookie] {
        if case .staleInsecure = profile.eviction {
            let older = sorted.filter { !$0.sameIdentity(added) }
            let room = sorted.count - profile.bucketPurgedTo
            let insecure = older.filter { !$0.secureOnly }
            if !insecure.isEmpty { return Array(insecure.prefix(room)) }
            return added.secureOnly ? Array(older.prefix(room)) : [added]
        }
        var taken = Array(repeating: false, count: sorted.count)
        var remaining = sorted.count - profile.bucketPurgedTo
        func round(_ eligible: (StoredCookie) -> Bool, deletable: Int) {
            var left = deletable
            for (i, c) in sorted.enumerated() where remaining > 0 && left > 0 && !taken[i] && eligible(c) {
                taken[i] = true
                remaining -= 1
                left -= 1
            }
        }
        if let quotas = profile.priorityQuotas {
            let rounds: [(CookiePriority, protectSecure: Bool)] = [
                (.low, true), (.low, false), (.medium, true), (.high, true), (.medium, false), (.high, false),
            ]
            for (priority, protectSecure) in rounds where remaining > 0 {
                let quota = quotas[priority.rawValue]
                let atPriority = sorted.indices.filter { !taken[$0] && sorted[$0].priority == priority }
                guard atPriority.count > quota else { continue }
                let secure = atPriority.filter { sorted[$0].secureOnly }.count
                let deletable = atPriority.count - (protectSecure ? max(secure, quota) : quota)
                round({ $0.priority == priority && (!protectSecure || !$0.secureOnly) }, deletable: deletable)
            }
        } else {
            round({ !$0.secureOnly }, deletable: .max)
            round({ _ in true }, deletable: .max)
        }
        return sorted.indices.filter { taken[$0] }.map { sorted[$0] }
    }

    /// Takes these cookies out of the jar, each reported as evicted.
    mutating func remove(_ victims: [StoredCookie]) {
        for victim in victims {
            guard var list = byDomain[victim.domain], let i = list.firstIndex(where: { $0.sameIdentity(victim) })
            else { continue }
            let removed = list.remove(at: i)
            byDomain[victim.domain] = list.isEmpty ? nil : list
            count -= 1
            generation &+= 1
            evicted(removed)
        }
    }
}

extension StoredCookie {
    /// The same cookie for the jar (§5.7 step 23: name, domain, host-only and path; and the partition).
    func sameIdentity(_ other: StoredCookie) -> Bool {
        nameBytes == other.nameBytes && hostOnly == other.hostOnly && path == other.path
            && partitionKey == other.partitionKey && domain == other.domain
    }
}
