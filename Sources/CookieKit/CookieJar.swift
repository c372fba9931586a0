/// A cookie store that follows the user-agent algorithms of RFC 6265bis §5.7 (storage) and §5.8
/// (retrieval), with the acceptance policies of Foundation's `HTTPCookieStorage` and a change observer.
/// Time comes from an injected clock; the Public Suffix List is injected too.
public struct CookieJar: Sendable {
    /// When cookies are accepted at all, as `HTTPCookie.AcceptPolicy`.
    public enum AcceptPolicy: String, Sendable, Hashable, CaseIterable {
        case always
        case never
        /// Only cookies whose domain the main document's host domain-matches (as Foundation does).
        case onlyFromMainDocumentDomain
    }

    /// How a cookie arrives or is read: a `Set-Cookie` / `Cookie` header, or a non-HTTP API such as
    /// `document.cookie` (RFC 6265bis §5.8.2), which can neither set nor see HttpOnly cookies.
    public enum Channel: Sendable, Hashable {
        case http
        case nonHTTP
    }

    /// The same-site status of a request (RFC 6265bis §5.2); same-site unless said otherwise.
    public struct RequestContext: Sendable, Hashable {
        public var isSameSite: Bool
        public var isTopLevelNavigation: Bool
        public var isSafeMethod: Bool
        /// The top-level site the request is made under (a schemeful site, `https://site.example`): the partition
        /// a Partitioned cookie is stored in and read from (CHIPS). Nil: the request URL's own site.
        public var topLevelSite: String?
        public init(
            isSameSite: Bool = true, isTopLevelNavigation: Bool = true, isSafeMethod: Bool = true,
            topLevelSite: String? = nil
        ) {
            self.isSameSite = isSameSite
            self.isTopLevelNavigation = isTopLevelNavigation
            self.isSafeMethod = isSafeMethod
            self.topLevelSite = topLevelSite
        }
        /// A cross-site subresource or frame: a third-party context.
        var isThirdParty: Bool { !isSameSite && !isTopLevelNavigation }
        public static let sameSite = RequestContext()
    }

    /// A change to the jar, the analogue of `NSHTTPCookieManagerCookiesChanged`.
    public enum Change: Sendable, Hashable {
        case inserted(StoredCookie)
        case replaced(old: StoredCookie, new: StoredCookie)
        case removed(StoredCookie, Removal)
    }

    /// Why a cookie left the jar.
    public enum Removal: String, Sendable, Hashable {
        /// Its expiry time passed.
        case expired
        /// The server replaced it with an already-expired cookie (Max-Age=0 or a past Expires).
        case deletedByServer
        /// The jar was over its limits (§5.7, "remove excess cookies").
        case evicted
        /// ``CookieJar/removeAll()``.
        case cleared
    }

    public var acceptPolicy: AcceptPolicy
    /// Called after every change; it must not touch the jar.
    public var onChange: (@Sendable (Change) -> Void)?
    /// Whose limits, eviction order and modes the jar follows (CookieJar+Profile.swift).
    public var profile: Profile
    public let unit: TimeUnit

    private let clock: (@Sendable () -> Int64)?
    /// The time, when the caller brings it with each call (sans I/O: a jar fed with what a proxy saw, at the times
    /// it saw it) instead of a clock; in ``unit``s since the epoch.
    public var time: Int64 = 0
    /// Whether the jar keeps the cookies its limits took out (§5.7, "remove excess cookies") for
    /// ``takeEvictions()``.
    public var recordsEvictions = false
    private var evictions: [StoredCookie] = []
    let suffixes: PublicSuffixList
    var byDomain: [String: [StoredCookie]] = [:]
    var bucketCache: [String: String] = [:]
    private var sequence: UInt64 = 0
    public internal(set) var count = 0
    /// Counts the changes of what the jar holds (a cookie stored, replaced or removed; not a last-access time): a
    /// caller that saw one generation can tell that nothing was stored or removed since.
    public internal(set) var generation: UInt64 = 0

    /// A jar. `clock` returns the current time since the epoch in `unit`s; nil: the caller sets ``time``.
    public init(
        acceptPolicy: AcceptPolicy = .always, publicSuffixes: PublicSuffixList = .system,
        profile: Profile = .rfc6265bis, unit: TimeUnit = .seconds, clock: (@Sendable () -> Int64)?
    ) {
        self.acceptPolicy = acceptPolicy
        self.suffixes = publicSuffixes
        self.profile = profile
        self.unit = unit
        self.clock = clock
    }

    /// The clock's time, or the caller's.
    private func now() -> Int64 { clock?() ?? time }

    /// The cookies the jar's limits took out since the last call (when it ``recordsEvictions``), oldest first.
    public mutating func takeEvictions() -> [StoredCookie] {
        guard !evictions.isEmpty else { return [] }
        defer { evictions.removeAll() }
        return evictions
    }

    /// Reports an eviction: to the observer, and to ``takeEvictions()`` when asked.
    mutating func evicted(_ cookie: StoredCookie) {
        if recordsEvictions { evictions.append(cookie) }
        onChange?(.removed(cookie, .evicted))
    }

    // MARK: - Storage (§5.7)

    /// Receives one Set-Cookie value from `url` (RFC 6265bis §5.7) and returns the cookie stored, or why
    /// it was not.
    @discardableResult
    public mutating func receive(
        _ setCookie: SetCookie, from url: RequestURL, via channel: Channel = .http,
        context: RequestContext = .sameSite, mainDocumentURL: RequestURL? = nil
    ) -> Result<StoredCookie, CookieRejection> {
        let now = now()
        var cookie: StoredCookie
        switch Self.evaluate(
            setCookie, from: url, via: channel, context: context, now: now, suffixes: suffixes, unit: unit,
            laxByDefault: profile.laxByDefault, acceptance: profile.acceptance)
        {
        case .failure(let rejection): return .failure(rejection)
        case .success(let c): cookie = c
        }
        // The partition (CHIPS): the top-level site, for a Partitioned cookie, or for any cookie of a third-party
        // context in an engine that partitions them all.
        if cookie.partitioned || (profile.partitionsThirdParty && context.isThirdParty) {
            cookie.partitionKey = context.topLevelSite ?? url.site(suffixes)
        } else if profile.blocksThirdParty && context.isThirdParty {
            return .failure(
                CookieRejection(
                    .thirdPartyBlocked,
                    "\(profile.engine.displayName) blocks unpartitioned cookies from a cross-site subresource or frame")
            )
        }
        if profile.priorityQuotas != nil { cookie.priority = CookiePriority(setCookie) }
        switch acceptPolicy {
        case .always: break
        case .never: return .failure(CookieRejection(.policy, "the jar's accept policy is 'never'"))
        case .onlyFromMainDocumentDomain:
            guard let main = mainDocumentURL, domainMatches(main.host, cookie.domain) else {
                return .failure(
                    CookieRejection(
                        .policy,
                        "cookie domain \(cookie.domain) is not the main document's domain"
                            + (mainDocumentURL.map { " (\($0.host))" } ?? " (none given)")))
            }
        }
        return store(cookie, from: url, via: channel, now: now)
    }

    /// Receives every Set-Cookie value of one response, in order.
    public mutating func receive(_ values: [SetCookie], from url: RequestURL, via channel: Channel = .http) {
        for value in values { receive(value, from: url, via: channel) }
    }

    private mutating func store(_ candidate: StoredCookie, from url: RequestURL, via channel: Channel, now: Int64)
        -> Result<StoredCookie, CookieRejection>
    {
        var cookie = candidate
        purgeExpired(now: now)
        // Step 16: leave secure cookies alone.
        if !cookie.secureOnly && !url.isSecure {
            for list in byDomain.values {
                for old in list
                where old.secureOnly && old.nameBytes == cookie.nameBytes
                    && (domainMatches(old.domain, cookie.domain) || domainMatches(cookie.domain, old.domain))
                    && pathMatches(cookie.path, old.path)
                {
                    return .failure(
                        CookieRejection(
                            .overlaysSecureCookie,
                            "a Secure cookie with this name exists; an insecure origin cannot overlay it"))
                }
            }
        }
        sequence += 1
        cookie.creationSequence = sequence
        // Step 23 (a partitioned cookie replaces only its own partition's).
        var list = byDomain[cookie.domain] ?? []
        if let index = list.firstIndex(where: { $0.sameIdentity(cookie) }) {
            let old = list[index]
            if channel == .nonHTTP && old.httpOnly {
                return .failure(
                    CookieRejection(.httpOnlyFromScript, "a non-HTTP API cannot overwrite an HttpOnly cookie"))
            }
            cookie.creationTime = old.creationTime
            cookie.creationSequence = old.creationSequence
            generation &+= 1
            if cookie.isExpired(at: now) {
                list.remove(at: index)
                count -= 1
                byDomain[cookie.domain] = list.isEmpty ? nil : list
                onChange?(.removed(old, .deletedByServer))
                return .success(cookie)
            }
            list[index] = cookie
            byDomain[cookie.domain] = list
            if let expiry = cookie.expiry { nextExpiry = min(nextExpiry, expiry) }
            onChange?(.replaced(old: old, new: cookie))
            return .success(cookie)
        }
        // An already-expired cookie is evicted at once (§5.7: "MUST evict all expired cookies").
        if cookie.isExpired(at: now) { return .success(cookie) }
        list.append(cookie)
        count += 1
        generation &+= 1
        if let expiry = cookie.expiry { nextExpiry = min(nextExpiry, expiry) }
        byDomain[cookie.domain] = list
        onChange?(.inserted(cookie))
        evictExcess(after: cookie, now: now)
        return .success(cookie)
    }

    /// The storage-model checks of RFC 6265bis §5.7 that do not depend on what the jar holds: the cookie
    /// a user agent would create from this line at `url`, or why it would ignore it.
    /// `now` is in `unit`s; `laxByDefault` false: a cookie without SameSite is None (Firefox, WebKit); `acceptance`:
    /// the checks where engines differ (``Profile/Acceptance``).
    public static func evaluate(
        _ setCookie: SetCookie, from url: RequestURL, via channel: Channel = .http,
        context: RequestContext = .sameSite, now: Int64, suffixes: PublicSuffixList, unit: TimeUnit = .seconds,
        laxByDefault: Bool = true, acceptance: Profile.Acceptance = .draft
    ) -> Result<StoredCookie, CookieRejection> {
        // §5.6 steps 1 and 5, §5.7 steps 2–4.
        if let problem = setCookie.problem {
            return .failure(CookieRejection(.malformed(problem.code), problem.description))
        }
        let attributes = setCookie.attributes
        let host = url.host
        var domainAttribute = attributes.domain ?? ""
        // Browsers ignore `Domain=.` (a dot and nothing else) rather than treat it as absent.
        if domainAttribute.isEmpty, let written = attributes.domainAsWritten, !written.isEmpty {
            return .failure(CookieRejection(.domainMismatch, "Domain=\(written) names no domain"))
        }
        // Step 8.
        if domainAttribute.utf8.contains(where: { $0 >= 0x80 }) {
            return .failure(CookieRejection(.domainInvalid, "Domain=\(domainAttribute) is not ASCII (§5.7 step 8)"))
        }
        // Host parsing of the Domain value (draft-ietf-httpbis-layered-cookies, "Parse a Cookie"): an IP address in
        // its serialised form (`[::1]`, `0x7f.1`), or failure; an IP address is never a public suffix.
        var domainIsIP = false
        if !domainAttribute.isEmpty {
            switch IPHost.parse(domainAttribute) {
            case .domain: break
            case .ip(let ip):
                domainAttribute = ip
                domainIsIP = true
            case .invalid(let reason):
                return .failure(CookieRejection(.domainInvalid, "Domain=\(reason)"))
            }
        }
        // Step 9.
        if !domainIsIP && !domainAttribute.isEmpty && suffixes.isPublicSuffix(domainAttribute) {
            if domainAttribute == host {
                domainAttribute = ""
            } else {
                return .failure(
                    CookieRejection(.publicSuffix, "Domain=\(domainAttribute) is a public suffix (§5.7 step 9)"))
            }
        }
        // Step 10.
        let hostOnly = domainAttribute.isEmpty
        if !hostOnly && !domainMatches(host, domainAttribute) {
            return .failure(
                CookieRejection(
                    .domainMismatch, "host \(host) does not domain-match Domain=\(domainAttribute) (§5.7 step 10)"))
        }
        let domain = hostOnly ? host : domainAttribute
        // Step 11.
        let path = attributes.path ?? url.defaultPath
        // Steps 12–13.
        let secureOrigin =
            acceptance.loopbackIsSecure ? url.isSecure : url.scheme == "https" || url.scheme == "wss"
        if attributes.secure && !secureOrigin {
            return .failure(
                CookieRejection(
                    .secureFromInsecure, "Secure cookie set from insecure origin \(url.scheme)://\(host) (§5.7 step 13)"
                ))
        }
        // Steps 14–15.
        if channel == .nonHTTP && attributes.httpOnly {
            return .failure(
                CookieRejection(.httpOnlyFromScript, "HttpOnly cookie set through a non-HTTP API (§5.7 step 15)"))
        }
        // Step 18 (an engine without Lax by default takes a cookie without SameSite for None).
        let sameSiteApplies = attributes.sameSite != .none && (laxByDefault || attributes.sameSite != .default)
        if sameSiteApplies && !context.isSameSite && !context.isTopLevelNavigation {
            return .failure(
                CookieRejection(
                    .crossSite,
                    "SameSite=\(attributes.sameSite.rawValue) cookie set from a cross-site request (§5.7 step 18)"))
        }
        // Step 19.
        if attributes.sameSite == .none && !attributes.secure && acceptance.sameSiteNoneNeedsSecure {
            return .failure(CookieRejection(.sameSiteNoneInsecure, "SameSite=None requires Secure (§5.7 step 19)"))
        }
        // Step 20–22: prefixes, matched case-insensitively (§5.5).
        let name = setCookie.nameBytes
        if acceptance.enforcesPrefixes && ASCII.hasPrefixIgnoringCase(name, "__secure-") && !attributes.secure {
            return .failure(CookieRejection(.prefix, "__Secure- cookie without Secure (§5.7 step 20)"))
        }
        if acceptance.enforcesPrefixes && ASCII.hasPrefixIgnoringCase(name, "__host-") {
            if !attributes.secure || !hostOnly || !attributes.hasPath || path != "/" {
                return .failure(
                    CookieRejection(.prefix, "__Host- cookie needs Secure, no Domain and Path=/ (§5.7 step 21)"))
            }
        }
        if name.isEmpty {
            let value = setCookie.valueBytes
            if ASCII.hasPrefixIgnoringCase(value, "__secure-") || ASCII.hasPrefixIgnoringCase(value, "__host-") {
                return .failure(
                    CookieRejection(.prefix, "nameless cookie whose value looks like a prefixed name (§5.7 step 22)"))
            }
        }
        // CHIPS: Partitioned requires Secure (browsers reject it otherwise).
        if attributes.partitioned && !attributes.secure {
            return .failure(CookieRejection(.partitionedInsecure, "Partitioned requires Secure"))
        }
        return .success(
            StoredCookie(
                nameBytes: Array(name), valueBytes: Array(setCookie.valueBytes),
                expiry: attributes.expiry(now: now, perSecond: unit.perSecond),
                domain: domain, path: path, creationTime: now, creationSequence: 0, lastAccessTime: now,
                hostOnly: hostOnly, secureOnly: attributes.secure, httpOnly: attributes.httpOnly,
                sameSite: attributes.sameSite, partitioned: attributes.partitioned))
    }

    // MARK: - Retrieval (§5.8.3)

    /// The cookies to send to `url`, in RFC 6265bis order (longer paths first, then earlier creation);
    /// updates their last-access time.
    public mutating func cookies(
        for url: RequestURL, via channel: Channel = .http, context: RequestContext = .sameSite
    ) -> [StoredCookie] {
        let now = now()
        purgeExpired(now: now)
        let host = url.host
        let requestPath = url.path.isEmpty ? "/" : url.path
        var selected: [(String, Int)] = []
        var partition: String? = nil
        for domain in Self.candidateDomains(host) {
            guard let list = byDomain[domain] else { continue }
            // Every cookie in `list` has this domain, which `host` domain-matches by construction.
            var domainIsPublicSuffix: Bool? = nil
            for (index, cookie) in list.enumerated() {
                if cookie.hostOnly {
                    guard host == cookie.domain else { continue }
                } else {
                    if domainIsPublicSuffix == nil { domainIsPublicSuffix = suffixes.isPublicSuffix(domain) }
                    if domainIsPublicSuffix! { continue }
                }
                guard pathMatches(requestPath, cookie.path) else { continue }
                if cookie.secureOnly && !url.isSecure { continue }
                if cookie.httpOnly && channel == .nonHTTP { continue }
                if let key = cookie.partitionKey {
                    // CHIPS: a partitioned cookie goes only under the top-level site it was set under.
                    if partition == nil {
                        partition = context.topLevelSite ?? url.site(suffixes)
                    }
                    guard key == partition else { continue }
                } else if context.isThirdParty && (profile.blocksThirdParty || profile.partitionsThirdParty) {
                    continue
                }
                if !sendsInContext(cookie, context, channel: channel, now: now) { continue }
                selected.append((domain, index))
            }
        }
        var result: [StoredCookie] = []
        result.reserveCapacity(selected.count)
        let interval = profile.accessUpdateInterval * unit.perSecond
        for (domain, index) in selected {
            if now - byDomain[domain]![index].lastAccessTime >= interval {
                byDomain[domain]![index].lastAccessTime = now
            }
            result.append(byDomain[domain]![index])
        }
        result.sort { a, b in
            if a.path.utf8.count != b.path.utf8.count { return a.path.utf8.count > b.path.utf8.count }
            if a.creationTime != b.creationTime { return a.creationTime < b.creationTime }
            return a.creationSequence < b.creationSequence
        }
        return result
    }

    /// The `Cookie` header value for `url` (§5.8.3 step 6); empty when nothing would be sent.
    public mutating func cookieHeader(
        for url: RequestURL, via channel: Channel = .http, context: RequestContext = .sameSite
    ) -> String {
        let list = cookies(for: url, via: channel, context: context)
        var out: [UInt8] = []
        for (i, cookie) in list.enumerated() {
            if i > 0 { out += [0x3B, 0x20] }
            out += cookie.pairBytes
        }
        return String(lossy: out)
    }

    /// Removes the cookies whose expiry has passed (§5.7), as every other call does first.
    public mutating func purgeExpired() { purgeExpired(now: now()) }

    /// What receiving `cookie`'s line again would do when the jar holds it: a new expiry (computed by the caller
    /// from the line's attributes, as at storage) and the access time now, the creation time kept (§5.7 step 23).
    /// The generation does not change. False when the jar does not hold it.
    public mutating func refresh(_ cookie: StoredCookie, expiry: Int64?) -> Bool {
        let now = now()
        // Changed in place, in one access to the domain's list (a copy out and back would copy the list).
        let found =
            byDomain[cookie.domain]?.updateFirst(where: { $0.sameIdentity(cookie) }) {
                $0.expiry = expiry
                $0.lastAccessTime = now
            } ?? false
        if found, let expiry { nextExpiry = min(nextExpiry, expiry) }
        return found
    }

    /// Sets the last-access time of the cookies given, as retrieving them would (§5.8.3 step 3).
    public mutating func touch(_ cookies: [StoredCookie]) {
        let now = now()
        let interval = profile.accessUpdateInterval * unit.perSecond
        for c in cookies {
            _ = byDomain[c.domain]?.updateFirst(where: { $0.sameIdentity(c) }) {
                if now - $0.lastAccessTime >= interval { $0.lastAccessTime = now }
            }
        }
    }

    /// Every cookie in the jar (unordered), expired ones removed first.
    public mutating func allCookies() -> [StoredCookie] {
        purgeExpired(now: now())
        return byDomain.values.flatMap { $0 }
    }

    /// Empties the jar.
    public mutating func removeAll() {
        let all = byDomain.values.flatMap { $0 }
        byDomain.removeAll()
        count = 0
        generation &+= 1
        for cookie in all { onChange?(.removed(cookie, .cleared)) }
    }

    // MARK: - Housekeeping

    /// The host and each parent domain, longest first: where a cookie that matches `host` can live.
    static func candidateDomains(_ host: String) -> [String] {
        if looksLikeIPAddress(host) { return [host] }
        var result = [host]
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            if !rest.isEmpty { result.append(String(rest)) }
        }
        return result
    }

    private var nextExpiry: Int64 = .max

    private mutating func purgeExpired(now: Int64) {
        guard now >= nextExpiry else { return }
        var soonest = Int64.max
        for (domain, list) in byDomain {
            var kept: [StoredCookie] = []
            for cookie in list {
                if cookie.isExpired(at: now) {
                    count -= 1
                    generation &+= 1
                    onChange?(.removed(cookie, .expired))
                } else {
                    kept.append(cookie)
                    if let e = cookie.expiry { soonest = min(soonest, e) }
                }
            }
            byDomain[domain] = kept.isEmpty ? nil : kept
        }
        nextExpiry = soonest
    }

    /// §5.8.3 step 1's site-context checks: whether `cookie` goes with a request in `context`. SameSite=Strict only
    /// same-site; Lax (or none written, in an engine with Lax by default) also with a top-level navigation by a
    /// safe method, or, within the profile's Lax-allowing-unsafe time of its creation, any method (§5.6.7.1).
    func sendsInContext(_ cookie: StoredCookie, _ context: RequestContext, channel: Channel, now: Int64) -> Bool {
        if context.isSameSite || cookie.sameSite == .none { return true }
        if cookie.sameSite == .default && !profile.laxByDefault { return true }
        guard channel == .http && cookie.sameSite != .strict && context.isTopLevelNavigation else { return false }
        if context.isSafeMethod { return true }
        guard cookie.sameSite == .default, let window = profile.laxAllowingUnsafe else { return false }
        return now - cookie.creationTime <= window * unit.perSecond
    }
}

/// Why a user agent does not store a cookie.
public struct CookieRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for scripts and tests.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public var description: String { rawValue }
        static func malformed(_ code: String) -> Code { Code(rawValue: code) }
        public static let domainMismatch = Code(rawValue: "domain-mismatch")
        public static let domainInvalid = Code(rawValue: "domain-invalid")
        public static let publicSuffix = Code(rawValue: "domain-public-suffix")
        public static let secureFromInsecure = Code(rawValue: "secure-from-insecure-origin")
        public static let httpOnlyFromScript = Code(rawValue: "httponly-from-script")
        public static let crossSite = Code(rawValue: "cross-site")
        public static let sameSiteNoneInsecure = Code(rawValue: "samesite-none-insecure")
        public static let prefix = Code(rawValue: "prefix")
        public static let partitionedInsecure = Code(rawValue: "partitioned-insecure")
        public static let overlaysSecureCookie = Code(rawValue: "overlays-secure-cookie")
        public static let thirdPartyBlocked = Code(rawValue: "third-party-blocked")
        public static let policy = Code(rawValue: "accept-policy")
    }

    public let code: Code
    public let reason: String
    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
    /// An engine's own refusal, named by its lint finding (the code is the finding's).
    public init(engine: String, finding: String, _ message: String) {
        code = Code(rawValue: finding)
        reason = "\(engine) does not store it: \(message)"
    }
    public var description: String { reason }
}

extension Array where Element == StoredCookie {
    /// Changes the first cookie that `matches`; false when none does.
    mutating func updateFirst(where matches: (StoredCookie) -> Bool, _ change: (inout StoredCookie) -> Void) -> Bool {
        guard let i = firstIndex(where: matches) else { return false }
        change(&self[i])
        return true
    }
}
