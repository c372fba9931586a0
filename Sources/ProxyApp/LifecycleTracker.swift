import CookieKit
import CookieLifecycle
import HTTPGrammar
import Locking
import ProxyCore

/// Every client's cookies across its requests (``ClientCookies``): the requests' site contexts and Cookie headers
/// go in as the proxy forwards them, the responses' Set-Cookie lines as it forwards them, and each request's
/// verdicts come out (for the log and the inspector). A client is its address, or with `--client-by header:NAME`
/// that request header's value (devices behind one NAT; the address when a request lacks it). Bounded: the
/// least recently seen client goes past ``maximumClients``; verdicts are kept for the last ``keptRequests``.
package final class LifecycleTracker: Sendable {
    package enum ClientKey: Sendable, Equatable {
        case address
        /// A request header's value (lowercase name).
        case header(String)
    }
    package static let maximumClients = 256
    package static let keptRequests = 4096

    package let clientKey: ClientKey
    private struct State {
        var clients: [String: (cookies: ClientCookies, seen: UInt64)] = [:]
        var tick: UInt64 = 0
        /// Per request, by id modulo the table's size: its client, site and verdicts.
        var requests: [Request?] = Array(repeating: nil, count: LifecycleTracker.keptRequests)
    }
    package typealias Request = RequestJudgement
    private let state = Locked(State())
    private let suffixes: PublicSuffixList

    package init(clientKey: ClientKey = .address, suffixes: PublicSuffixList = .system) {
        self.clientKey = clientKey
        self.suffixes = suffixes
    }

    /// Reads `--client-by`: `address` or `header:NAME`.
    package static func parseClientKey(_ text: String) -> ClientKey? {
        if text == "address" { return .address }
        guard text.hasPrefix("header:") else { return nil }
        let name = String(text.dropFirst(7))
        guard !name.isEmpty, name.utf8.allSatisfy(ByteClass.isTokenChar) else { return nil }
        return .header(name.lowercased())
    }

    /// The client a request belongs to.
    package func client(of head: HTTPHead, address: String) -> String {
        guard case .header(let name) = clientKey, let field = head.fields.first(where: { head.field($0, is: name) })
        else { return address }
        return head.value(field)
    }

    /// The site context of a request (RFC 6265bis §5.2, from its Fetch Metadata, Origin or Referer).
    package func site(of head: HTTPHead, context: ExchangeContext) -> RequestSite {
        var headers = RequestSite.Headers()
        for field in head.fields {
            let n = head.bytes[field.name]
            guard n.count >= 6 else { continue }
            switch n.first! | 0x20 {
            case 0x73, 0x6F, 0x72, 0x61:  // s, o, r, a: the only initials of the names read
                let name = head.name(field).lowercased()
                switch name {
                case "sec-fetch-site": headers.secFetchSite = headers.secFetchSite ?? head.value(field)
                case "sec-fetch-dest": headers.secFetchDest = headers.secFetchDest ?? head.value(field)
                case "sec-fetch-mode": headers.secFetchMode = headers.secFetchMode ?? head.value(field)
                case "origin": headers.origin = headers.origin ?? head.value(field)
                case "referer": headers.referer = headers.referer ?? head.value(field)
                case "accept": headers.accept = headers.accept ?? head.value(field)
                default: break
                }
            default: continue
            }
        }
        return RequestSite.classify(
            url: Self.url(context), method: context.method, headers: headers, suffixes: suffixes)
    }

    static func url(_ c: ExchangeContext) -> RequestURL {
        RequestURL(scheme: c.scheme, host: c.host, port: c.port, path: c.path)
    }

    static func facts(_ c: ExchangeContext, site: RequestSite, time: Int64) -> ClientCookies.Request {
        ClientCookies.Request(
            id: c.requestID, time: time, method: c.method, url: url(c), urlText: c.url, site: site)
    }

    /// A request as the client sent it: its verdicts (its Cookie fields joined as one header, as RFC 9113 §8.2.3
    /// joins crumbs).
    @discardableResult
    package func request(head: HTTPHead, context: ExchangeContext, site: RequestSite, time: Int64) -> Request {
        let client = client(of: head, address: context.clientAddress)
        let cookieFields = head.fields.filter { $0.known == .cookie }
        var header: CookieHeader? = nil
        if !cookieFields.isEmpty {
            var bytes: [UInt8] = []
            for (i, f) in cookieFields.enumerated() {
                if i > 0 { bytes += [0x3B, 0x20] }
                bytes += head.valueBytes(f)
            }
            header = CookieHeader(bytes)
        }
        let facts = Self.facts(context, site: site, time: time)
        return state.withLock { s in
            var entry = s.clients.removeValue(forKey: client)?.cookies ?? ClientCookies(suffixes: suffixes)
            let verdicts = entry.request(facts, cookieHeader: header)
            insert(&s, client, entry)
            let r = Request(
                id: context.requestID, client: client, site: site, verdicts: verdicts, sentCookies: header != nil)
            s.requests[Int(context.requestID % UInt64(Self.keptRequests))] = r
            return r
        }
    }

    private func insert(_ s: inout State, _ client: String, _ cookies: ClientCookies) {
        s.tick += 1
        if s.clients.count >= Self.maximumClients, let oldest = s.clients.min(by: { $0.value.seen < $1.value.seen }) {
            s.clients[oldest.key] = nil
        }
        s.clients[client] = (cookies, s.tick)
    }

    /// A request's client and site, without judging it (the lifecycle off, a `site` condition on).
    package func note(_ id: UInt64, client: String, site: RequestSite) {
        state.withLock { s in
            s.requests[Int(id % UInt64(Self.keptRequests))] = Request(
                id: id, client: client, site: site, verdicts: [], sentCookies: false)
        }
    }

    /// The site context of a request still held.
    package func site(of id: UInt64) -> RequestSite? { request(id)?.site }

    /// What is known of a request still held (its client, site and verdicts).
    package func request(_ id: UInt64) -> Request? {
        state.withLock { s in
            guard let r = s.requests[Int(id % UInt64(Self.keptRequests))], r.id == id else { return nil }
            return r
        }
    }

    /// A response's Set-Cookie lines as received and as forwarded (`lines`), fed to the client's jar.
    package func response(context: ExchangeContext, lines: [ClientCookies.SetLine], time: Int64) {
        guard !lines.isEmpty, let r = request(context.requestID) else { return }
        let facts = Self.facts(context, site: r.site, time: time)
        state.withLock { s in
            var entry = s.clients.removeValue(forKey: r.client)?.cookies ?? ClientCookies(suffixes: suffixes)
            entry.response(facts, lines: lines)
            insert(&s, r.client, entry)
        }
    }

    /// The client's cookie named `name` that a request to `context`'s URL would carry, for `where` in
    /// request-cookie rules.
    package func jarCookie(client: String, context: ExchangeContext, time: Int64)
        -> (ArraySlice<UInt8>) -> StoredCookie?
    {
        let held = state.withLock { s -> [StoredCookie] in
            guard var entry = s.clients[client]?.cookies else { return [] }
            let all = entry.cookies(at: time)
            s.clients[client]!.cookies = entry
            return all
        }
        let url = Self.url(context)
        return { name in
            held.first { $0.nameBytes.elementsEqual(name) && Host.domainMatches(url.host, $0.domain) }
                ?? held.first { $0.nameBytes.elementsEqual(name) }
        }
    }

    /// The clients seen, most recent first.
    package var clients: [String] {
        state.withLock { s in s.clients.sorted { $0.value.seen > $1.value.seen }.map(\.key) }
    }

    /// A cookie's timeline for a client (all clients when nil), oldest first.
    package func timeline(name: String, client: String?) -> [(client: String, event: ClientCookies.Event)] {
        state.withLock { s in
            var out: [(String, ClientCookies.Event)] = []
            for (key, entry) in s.clients where client == nil || client == key {
                for e in entry.cookies.timelines[name] ?? [] { out.append((key, e)) }
            }
            return out.sorted { $0.1.time < $1.1.time || ($0.1.time == $1.1.time && $0.1.requestID < $1.1.requestID) }
        }
    }

    /// What the client's jar holds now.
    package func cookies(client: String, time: Int64) -> [StoredCookie] {
        state.withLock { s in
            guard var entry = s.clients[client]?.cookies else { return [] }
            let all = entry.cookies(at: time)
            s.clients[client]!.cookies = entry
            return all
        }
    }
}
