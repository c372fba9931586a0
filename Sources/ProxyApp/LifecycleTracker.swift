import CookieKit
import CookieLifecycle
import ExchangeFacts
import HTTPGrammar
import HTTPHeads
import Locking
import ProxyCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every client's cookies across its requests (``ClientCookies``): the requests' site contexts and Cookie headers
/// go in as the proxy forwards them, the responses' Set-Cookie lines as it forwards them, and each request's
/// verdicts come out (for the log and the inspector). A client is its address, or with `--client-by header:NAME`
/// that request header's value (devices behind one NAT; the address when a request lacks it); by default a
/// loopback address is told apart by its `User-Agent` too (on one machine every browser, curl and script is
/// 127.0.0.1). Each client's jar follows its engine's profile (from its `User-Agent`, or `--engine`). Bounded: the
/// least recently seen client goes past ``maximumClients``; verdicts are kept for the last ``keptRequests``.
public final class LifecycleTracker: Sendable {
    public enum ClientKey: Sendable, Equatable {
        /// The address; on loopback, with the `User-Agent`'s engine or product (`127.0.0.1 Chromium`).
        case automatic
        case address
        /// A request header's value (lowercase name).
        case header(String)
    }
    static let maximumClients = 256
    static let keptRequests = 4096

    let clientKey: ClientKey
    private struct State {
        var clients: [String: Client] = [:]
        /// The client looked up last (most exchanges come from the client of the one before).
        var last: (key: String, client: Client)? = nil
        var tick: UInt64 = 0
        /// Per request, by id modulo the table's size: its id, client, site and verdicts (columns: a slot is
        /// written without allocating, and a short client address or a constant site evidence is no reference).
        var ids = [UInt64](repeating: .max, count: LifecycleTracker.keptRequests)
        var requestClients = [String](repeating: "", count: LifecycleTracker.keptRequests)
        var sites = [RequestSite](repeating: LifecycleTracker.unknownSite, count: LifecycleTracker.keptRequests)
        var verdicts = [[CookieVerdict]](repeating: [], count: LifecycleTracker.keptRequests)
        var sent = [Bool](repeating: false, count: LifecycleTracker.keptRequests)
        var engines = [CookieJar.Profile.Engine](repeating: .rfc6265bis, count: LifecycleTracker.keptRequests)

        mutating func keep(_ r: RequestJudgement) {
            let slot = Int(r.id % UInt64(LifecycleTracker.keptRequests))
            (ids[slot], requestClients[slot], sites[slot], engines[slot]) = (r.id, r.client, r.site, r.engine)
            if !r.verdicts.isEmpty || !verdicts[slot].isEmpty { verdicts[slot] = r.verdicts }
            sent[slot] = r.sentCookies
        }

        func judgement(_ id: UInt64) -> RequestJudgement? {
            let slot = Int(id % UInt64(LifecycleTracker.keptRequests))
            guard ids[slot] == id else { return nil }
            return RequestJudgement(
                id: id, client: requestClients[slot], site: sites[slot], verdicts: verdicts[slot],
                sentCookies: sent[slot], engine: engines[slot])
        }
    }
    typealias Request = RequestJudgement
    /// One client's cookies, changed in place under the tracker's lock.
    final class Client {
        var cookies: ClientCookies
        var seen: UInt64 = 0
        init(_ cookies: ClientCookies) { self.cookies = cookies }
    }
    private let state = Locked(State())
    private let suffixes: PublicSuffixList
    /// `--engine`: every client's jar is this engine's; nil: each client's `User-Agent` tells.
    let engine: CookieJar.Profile.Engine?
    /// The last loopback client's address, User-Agent and key: most requests come from the client of the one
    /// before, whose key is then neither worked out nor built again.
    private let lastAgent = Locked<(address: String, agent: [UInt8], key: String)?>(nil)

    package init(
        clientKey: ClientKey = .automatic, engine: CookieJar.Profile.Engine? = nil, suffixes: PublicSuffixList = .system
    ) {
        self.clientKey = clientKey
        self.engine = engine
        self.suffixes = suffixes
    }

    /// Reads `--client-by`: `auto`, `address` or `header:NAME`.
    public static func parseClientKey(_ text: String) -> ClientKey? {
        if text == "auto" { return .automatic }
        if text == "address" { return .address }
        guard text.hasPrefix("header:") else { return nil }
        let name = String(text.dropFirst(7))
        guard !name.isEmpty, name.utf8.allSatisfy(ByteClass.isTokenChar) else { return nil }
        return .header(name.lowercased())
    }

    /// The client a request belongs to.
    func client(of head: HTTPHead, address: String) -> String {
        switch clientKey {
        case .address: return address
        case .header(let name):
            guard let field = head.fields.first(where: { head.field($0, is: name) }) else { return address }
            return head.value(field)
        case .automatic:
            guard let field = Self.userAgentField(head) else { return address }
            let agent = head.valueBytes(field)
            // The last loopback client's first: only a loopback address is ever kept there, so a match needs no
            // parse of the address.
            let known = lastAgent.withLock { last in
                last.flatMap { $0.address == address && Self.sameBytes($0.agent, agent) ? $0.key : nil }
            }
            if let known { return known }
            guard HostName.isLoopback(address) else { return address }
            let key = address + " " + Self.agentLabel(String(decoding: agent, as: UTF8.self))
            lastAgent.withLock { $0 = (address, Array(agent), key) }
            return key
        }
    }

    func userAgent(_ head: HTTPHead) -> String? { Self.userAgentField(head).map { head.value($0) } }

    /// The first `User-Agent` field, compared on the buffer (the generic comparison of names is dearer on this
    /// per-request path: docs/architecture.md).
    static func userAgentField(_ head: HTTPHead) -> HTTPHead.Field? {
        head.bytes.withUnsafeBufferPointer { b in
            head.fields.first { ByteClass.equalsLowercase(b, $0.name.lowerBound, $0.name.upperBound, "user-agent") }
        }
    }

    /// Two runs of bytes, compared with memcmp (a generic element-by-element comparison is dearer on this
    /// per-request path: docs/architecture.md).
    static func sameBytes(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
        a.count == b.count
            && a.withUnsafeBufferPointer { x in
                b.withUnsafeBufferPointer { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
            }
    }

    /// A `User-Agent` in a word: its engine, or its first product (`curl/8.5.0`), at most 40 characters.
    static func agentLabel(_ agent: String) -> String {
        if let engine = CookieJar.Profile.engine(userAgent: agent) { return engine.displayName }
        let bytes = agent.utf8
        let end = bytes.firstIndex(of: 0x20) ?? bytes.endIndex
        return String(decoding: bytes[..<end].prefix(40), as: UTF8.self)
    }

    /// The jar profile for a new client: `--engine`, else its `User-Agent`'s engine, else the draft's.
    func profile(_ head: HTTPHead) -> CookieJar.Profile {
        if let engine { return .of(engine) }
        guard let agent = userAgent(head), let engine = CookieJar.Profile.engine(userAgent: agent) else {
            return .rfc6265bis
        }
        return .of(engine)
    }

    /// A request without any of the headers that tell.
    static let unknownSite = RequestSite(kind: .unknown, evidence: "no Sec-Fetch-Site, Origin or Referer")
    static let unknownSiteUnsafe = RequestSite(
        kind: .unknown, evidence: "no Sec-Fetch-Site, Origin or Referer", isSafeMethod: false)

    /// The site context of a request (RFC 6265bis §5.2, from its Fetch Metadata, Origin or Referer).
    func site(of head: HTTPHead, context: ExchangeContext) -> RequestSite {
        guard head.knownFields & KnownField.siteContext != 0 else {
            // Nothing to read (most non-browser clients): no URL is parsed.
            return ["GET", "HEAD", "OPTIONS", "TRACE"].contains(context.method)
                ? Self.unknownSite : Self.unknownSiteUnsafe
        }
        var headers = RequestSite.Headers()
        for field in head.fields {
            func value(_ current: String?) -> String? { current ?? head.value(field) }
            switch field.known {
            case .secFetchSite: headers.secFetchSite = value(headers.secFetchSite)
            case .secFetchDest: headers.secFetchDest = value(headers.secFetchDest)
            case .secFetchMode: headers.secFetchMode = value(headers.secFetchMode)
            case .origin: headers.origin = value(headers.origin)
            case .referer: headers.referer = value(headers.referer)
            case .accept: headers.accept = value(headers.accept)
            default: continue
            }
        }
        return RequestSite.classify(
            url: context.requestURL, method: context.method, headers: headers, suffixes: suffixes)
    }

    /// A request as the client sent it: its verdicts (its Cookie fields joined as one header, as RFC 9113 §8.2.3
    /// joins crumbs).
    @discardableResult
    func request(head: HTTPHead, context: ExchangeContext, site: RequestSite, time: Int64) -> Request {
        let client = client(of: head, address: context.clientAddress)
        var header: CookieHeader? = nil
        if head.has(.cookie) {
            var bytes: [UInt8] = []
            for f in head.fields where f.known == .cookie {
                if !bytes.isEmpty { bytes += [0x3B, 0x20] }
                bytes += head.valueBytes(f)
            }
            header = CookieHeader(bytes)
        }
        return state.withLock { s in
            var engine = CookieJar.Profile.Engine.rfc6265bis
            let verdicts = withClient(&s, client, profile: { self.profile(head) }) { cookies -> [CookieVerdict] in
                engine = cookies.profile.engine
                // A client that keeps no cookies, asking without any: nothing to judge, no facts made (a document's
                // site is noted: it is the partition of what follows).
                guard cookies.keepsCookies || header != nil || site.fetchMetadata || site.isDocument else { return [] }
                return cookies.request(ClientCookies.Request(context, time: time, site: site), cookieHeader: header)
            }
            let r = Request(
                id: context.requestID, client: client, site: site, verdicts: verdicts, sentCookies: header != nil,
                engine: engine)
            s.keep(r)
            return r
        }
    }

    /// `body` on the client's cookies, in place (a new client's made first; past ``maximumClients`` the least
    /// recently seen goes).
    private func withClient<R>(
        _ s: inout State, _ key: String, profile: () -> CookieJar.Profile = { .rfc6265bis },
        _ body: (inout ClientCookies) -> R
    ) -> R {
        s.tick += 1
        let client: Client
        if let last = s.last, last.key == key {
            // The client of the exchange before (most exchanges): `last` is left as it is.
            client = last.client
        } else {
            if let found = s.clients[key] {
                client = found
            } else {
                if s.clients.count >= Self.maximumClients,
                    let oldest = s.clients.min(by: { $0.value.seen < $1.value.seen })
                {
                    s.clients[oldest.key] = nil
                }
                client = Client(ClientCookies(suffixes: suffixes, profile: profile()))
                s.clients[key] = client
            }
            s.last = (key, client)
        }
        client.seen = s.tick
        return body(&client.cookies)
    }

    /// A request's client and site, without judging it (the lifecycle off, a `site` condition on).
    func note(_ id: UInt64, client: String, site: RequestSite) {
        state.withLock { s in
            s.keep(Request(id: id, client: client, site: site, verdicts: [], sentCookies: false))
        }
    }

    /// What the inspector keeps with an exchange: its request's judgement when it judged any cookie, its site and
    /// its client.
    func judged(_ id: UInt64) -> (RequestJudgement?, RequestSite.Kind?, client: String?) {
        state.withLock { s in
            let slot = Int(id % UInt64(Self.keptRequests))
            guard s.ids[slot] == id else { return (nil, nil, nil) }
            return (s.verdicts[slot].isEmpty ? nil : s.judgement(id), s.sites[slot].kind, s.requestClients[slot])
        }
    }

    /// The client a request still held was told apart as (its key: `127.0.0.1 curl/8.1.2`, a header's value).
    func client(ofRequest id: UInt64) -> String? {
        state.withLock { s in
            let slot = Int(id % UInt64(Self.keptRequests))
            return s.ids[slot] == id ? s.requestClients[slot] : nil
        }
    }

    /// The site context of a request still held.
    func site(of id: UInt64) -> RequestSite? {
        state.withLock { s in
            let slot = Int(id % UInt64(Self.keptRequests))
            return s.ids[slot] == id ? s.sites[slot] : nil
        }
    }

    /// A response's Set-Cookie lines as received and as forwarded (`lines`), fed to the client's jar.
    func response(context: ExchangeContext, lines: SetLines, time: Int64) {
        guard lines.count > 0 else { return }
        state.withLock { s in
            let slot = Int(context.requestID % UInt64(Self.keptRequests))
            guard s.ids[slot] == context.requestID else { return }
            let site = s.sites[slot]
            _ = withClient(&s, s.requestClients[slot]) { cookies in
                cookies.response(
                    id: context.requestID, time: time, lines: lines,
                    sameTarget: { $0.isFor(context, site: site) },
                    request: ClientCookies.Request(context, time: time, site: site),
                    events: false)
            }
        }
    }

    /// The client's cookie named `name` that a request to `context`'s URL would carry, for `where` in
    /// request-cookie rules.
    func jarCookie(client: String, context: ExchangeContext, time: Int64)
        -> (ArraySlice<UInt8>) -> StoredCookie?
    {
        let held = state.withLock { s -> [StoredCookie] in
            s.clients[client]?.cookies.cookies(at: time) ?? []
        }
        let url = context.requestURL
        return { name in
            held.first { $0.nameBytes.elementsEqual(name) && domainMatches(url.host, $0.domain) }
                ?? held.first { $0.nameBytes.elementsEqual(name) }
        }
    }

    /// A cookie's timeline for a client (all clients when nil), oldest first.
    func timeline(name: String, client: String?) -> [(client: String, event: ClientCookies.Event)] {
        state.withLock { s in
            var out: [(String, ClientCookies.Event)] = []
            for key in Array(s.clients.keys) where client == nil || client == key {
                // A client not yet known to keep cookies has its responses replayed now.
                let c = s.clients[key]!
                c.cookies.settle()
                for e in c.cookies.timeline(name) { out.append((key, e)) }
            }
            return out.sorted { $0.1.time < $1.1.time || ($0.1.time == $1.1.time && $0.1.requestID < $1.1.requestID) }
        }
    }
}
