import CookieKit

/// Judging a request: the jar's §5.8.3 prediction against the Cookie header sent, cookie by cookie, and why.
extension ClientCookies {
    /// Compares what the jar would send with `request` to the `Cookie` header the client sent (nil: none), cookie
    /// by cookie: a sent pair with the jar's name and value is as expected; a name the jar holds here with another
    /// value is sent-other-value; a name the jar does not hold here is sent-not-set; what is left of the jar's
    /// prediction is expected-not-sent, each with its likely reason.
    public mutating func request(_ request: Request, cookieHeader: CookieHeader?) -> [CookieVerdict] {
        now = request.time
        if cookieHeader != nil || request.site.fetchMetadata { keepsCookies = true }
        guard keepsCookies else {
            _ = jarContext(request)
            return []
        }
        settle()
        now = request.time
        let context = jarContext(request)
        if let repeated = repeatLastRequest(request, cookieHeader) { return repeated }
        var expected = jar.cookies(for: request.url, context: context)
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

    struct LastRequest {
        var request: Request
        var header: [UInt8]?
        var generation: UInt64
        var verdicts: [CookieVerdict]
        var timelines: [Timeline]
        /// The cookies the jar sent (their access time is set again).
        var sent: [StoredCookie]
    }

    mutating func repeatLastRequest(_ request: Request, _ header: CookieHeader?) -> [CookieVerdict]? {
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
    mutating func bumpVerdict(_ t: Timeline, kind: Event.Kind, value: String?, _ r: Request) -> Bool {
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

    func verdict(_ kind: CookieVerdict.Kind, _ c: StoredCookie, sent: [UInt8]?, _ r: Request)
        -> CookieVerdict
    {
        CookieVerdict(
            kind: kind, name: c.name, sent: sent.map { String(decoding: $0, as: UTF8.self) }, expected: c.value,
            domain: c.hostOnly ? c.domain : "." + c.domain, path: c.path, setBy: origins[Key(c)]?.requestID)
    }

    /// The likely reason the client did not send a cookie the jar would: the first that applies: an expiry within
    /// seconds, what this request's site context says (set cross-site, third-party blocking), then the line's lint.
    func whyNotSent(_ c: StoredCookie, _ r: Request) -> CookieVerdict.Reason {
        let origin = origins[Key(c)]
        if let expiry = c.expiry, expiry - now <= 2000 {
            return .init(
                .expiring,
                "it expires at \(CookieDate.rfc3339(milliseconds: expiry)), within seconds of this request: the client's clock or its rounding of Max-Age may have expired it"
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
        // After what this request's context says: a finding of the line's (the engines that drop it named, when it is
        // an engine's).
        let findings = origin?.findings(suffixes) ?? []
        let dropping = EngineVerdict.of(findings).filter { !$0.stores }.map(\.engine.rawValue)
        let finding =
            findings.first { f in dropping.contains { f.code.hasPrefix($0.lowercased() + "-") } } ?? findings.first
        if let origin, let finding {
            return .init(
                .lint, finding: finding.code, engines: dropping,
                "its Set-Cookie (request #\(origin.requestID)) has \(finding.severity.rawValue) \(finding.code): \(finding.message)"
            )
        }
        return .init(
            .unexplained,
            "nothing seen explains it: deleted by script or by the user, evicted, or sent from a context the request's headers do not show (a frame of another site)"
        )
    }

    /// Why the jar withholds a cookie it holds for the request's URL (RFC 6265bis §5.8.3 steps 3–4): Secure over
    /// an insecure channel, SameSite in this site context (with the Lax-allowing-unsafe mode of §5.6.7.1 named
    /// when it applies: Chromium sends a cookie without SameSite on a cross-site top-level unsafe request within
    /// two minutes of its creation), or its partition.
    func withheld(_ c: StoredCookie, _ r: Request) -> CookieVerdict.Reason {
        if c.secureOnly && !r.url.isSecure {
            return .init(.withheld, "it is Secure and this request is not over a secure channel")
        }
        let kind = r.site.kind
        switch c.sameSite {
        case .strict where kind != .sameSite:
            return .init(.withheld, "SameSite=Strict and this request is \(kind.rawValue)")
        case .lax, .default:
            let unsafeNavigation = kind == .crossSiteNavigation && !r.site.isSafeMethod
            guard kind == .crossSiteSubresource || unsafeNavigation else { break }
            let which = c.sameSite == .lax ? "SameSite=Lax" : "no SameSite (Lax by default)"
            // The window is Chromium's profile's (this jar's own, when it is Chromium's, already sent it).
            if c.sameSite == .default && unsafeNavigation,
                let window = CookieJar.Profile.chromium.laxAllowingUnsafe, now - c.creationTime <= window * 1000
            {
                return .init(
                    .withheld, engines: ["Chromium"],
                    "\(which), and this request is a cross-site top-level \(r.method): the draft's jar withholds it, but Chromium sends a cookie without SameSite on such a request within two minutes of its creation (Lax-allowing-unsafe, RFC 6265bis §5.6.7.1), and this one is \((now - c.creationTime) / 1000) s old"
                )
            }
            return .init(.withheld, "\(which), and this request is \(kind.rawValue) (\(r.method))")
        default: break
        }
        if let key = c.partitionKey {
            return .init(
                .withheld,
                "it is Partitioned under top-level site \(key), and this request is made under \(topLevelSite ?? r.url.site(suffixes))"
            )
        }
        if r.site.kind == .crossSiteSubresource && (jar.profile.blocksThirdParty || jar.profile.partitionsThirdParty) {
            return .init(
                .thirdPartyBlocking, engines: [jar.profile.engine.displayName],
                "a cross-site subresource or frame, and \(jar.profile.engine.displayName) sends only partitioned cookies there"
            )
        }
        return .init(
            .withheld, "the jar holds it for this URL but withholds it in this request's context (\(kind.rawValue))")
    }

    mutating func notSet(name: [UInt8], value: [UInt8], _ r: Request) -> CookieVerdict {
        let text = String(decoding: name, as: UTF8.self)
        var v = CookieVerdict(kind: .sentNotSet, name: text, sent: String(decoding: value, as: UTF8.self))
        let named = jar.allCookies().filter { $0.nameBytes == name }
        let url = r.url
        // Held for this URL (RFC 6265bis §5.8.3 steps 1–2: domain and path match), yet not sent by the jar: it
        // withholds it in this request's context; a mismatch is only a cookie held for another domain or path.
        if let held = named.first(where: { c in
            (c.hostOnly ? url.host == c.domain : domainMatches(url.host, c.domain))
                && pathMatches(url.path.isEmpty ? "/" : url.path, c.path)
        }) {
            let origin = origins[Key(held)]
            (v.expected, v.domain, v.path, v.setBy) = (
                held.value, held.hostOnly ? held.domain : "." + held.domain, held.path, origin?.requestID
            )
            v.reason = withheld(held, r)
            return v
        }
        if let other = named.first {
            let domain = other.hostOnly ? other.domain : "." + other.domain
            let origin = origins[Key(other)]
            let findings = origin?.findings(suffixes) ?? []
            let finding = findings.first
            // The engines that keep the line otherwise than the draft (or not at all).
            let differing = EngineVerdict.of(findings).filter { !$0.stores || $0.how != nil }.map(\.engine.rawValue)
            (v.expected, v.domain, v.path, v.setBy) = (other.value, domain, other.path, origin?.requestID)
            v.reason = .init(
                .jarMismatch, finding: finding?.code, engines: differing,
                "set for \(domain) path \(other.path) (request #\(origin.map { String($0.requestID) } ?? "?")), which RFC 6265bis does not send to this URL"
                    + (finding.map { "; its line has \($0.code): \($0.message)" } ?? ""))
            return v
        }
        let history = timeline(text)
        if let last = history.last(where: { [.rejected, .deleted, .stored, .evicted].contains($0.kind) }) {
            switch last.kind {
            case .evicted:
                v.reason = .init(
                    .evicted, engines: [jar.profile.engine.displayName],
                    "the replayed jar evicted it in request #\(last.lastRequestID) (over the limit of \(jar.profile.limitDescription)), but the client kept it: its engine's limit or eviction order is another"
                )
                return v
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
                        + (last.expiry.map { ", expired at \(CookieDate.rfc3339(milliseconds: $0))" } ?? "")
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
}
