import CookieKit
import Foundation
import Testing

@testable import CookieLifecycle

/// The lifecycle's shortcuts (a repeated block refreshed rather than replayed, a repeated request judged as before)
/// against the RFC 6265bis jar itself: random sessions of responses and requests over a few lines and URLs, repeats
/// included, and after each step the client's jar holds what a plain `CookieJar` fed every line holds, and each
/// request's expectations are that jar's §5.8.3 answer. In each engine's profile, with its limits made small enough
/// for a session of a few hundred steps to go over them (evictions by priority, partitions, third-party modes).
@Suite struct ReplayEquivalenceTests {
    struct Random {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
    }

    static let lines = [
        "a=1", "a=1; Max-Age=100", "a=2; Path=/x", "b=1; Secure", "c=1; Max-Age=0", "d=1; Domain=other.test",
        "e=1; Max-Age=3", "p=1; Secure; SameSite=None; Partitioned", "l=1; SameSite=Lax", "a=1; Max-Age=100",
        "n1=1; Priority=High", "n2=1; Secure", "n3=1; Priority=Low", "n4=1; Domain=app.test", "n5=1; Max-Age=50",
        "n6=1; Priority=low; Secure", "n7=1", "q=1; Secure; SameSite=None; Partitioned; Path=/x",
    ]
    static let urls = ["https://app.test/", "https://app.test/x/y", "http://app.test/", "https://sub.app.test/"]
    static let sites: [RequestSite.Kind] = [.sameSite, .sameSite, .crossSiteSubresource, .crossSiteNavigation]

    struct Key: Hashable {
        var name: [UInt8], value: [UInt8], domain: String, path: String, expiry: Int64?, hostOnly: Bool, secure: Bool
        var partition: String?
        init(_ c: StoredCookie) {
            (name, value, domain, path, expiry) = (c.nameBytes, c.valueBytes, c.domain, c.path, c.expiry)
            (hostOnly, secure, partition) = (c.hostOnly, c.secureOnly, c.partitionKey)
        }
    }

    /// Each engine's profile with limits a short session goes over.
    static func small(_ engine: CookieJar.Profile.Engine) -> CookieJar.Profile {
        var p = CookieJar.Profile.of(engine)
        if p.bucketLimit != nil { (p.bucketLimit, p.bucketPurgedTo) = (7, engine == .rfc6265bis ? 7 : 5) }
        if p.priorityQuotas != nil { p.eviction = .priorityRounds([1, 2, 2]) }
        if p.partitionLimit != nil { p.partitionLimit = .init(count: 1, bytes: 10_240) }
        (p.totalLimit, p.totalPurgedTo) = (12, 10)
        p.totalPurgeMinimumIdle = p.totalPurgeMinimumIdle.map { _ in 30 }
        return p
    }

    @Test(
        arguments: [1, 2, 3, 4, 5] as [UInt64],
        [CookieJar.Profile.Engine.rfc6265bis, .chromium, .firefox, .webkit])
    func theShortcutsLeaveWhatTheJarWouldHold(_ seed: UInt64, _ engine: CookieJar.Profile.Engine) {
        var random = Random(state: seed)
        final class Clock: @unchecked Sendable {
            var now: Int64 = 1_800_000_000
            var evictions = 0
        }
        let clock = Clock()
        var reference = CookieJar(profile: Self.small(engine), unit: .milliseconds, clock: { clock.now * 1000 })
        reference.onChange = { if case .removed(_, .evicted) = $0 { clock.evictions += 1 } }
        var client = ClientCookies(keepsCookies: true, profile: Self.small(engine))
        var builder = SetLinesBuilder()
        var id: UInt64 = 0
        var previous: (u: Int, lines: [Int], site: Int)? = nil
        var previousRequest: (u: Int, site: Int, header: Int)? = nil
        for _ in 0..<600 {
            id += 1
            clock.now += Int64(random.next(3))
            let response = random.next(2) == 0
            // Often the same request again: the shortcuts' case.
            let again = random.next(3) > 0
            var u = random.next(Self.urls.count)
            var s = random.next(Self.sites.count)
            if again, response, let p = previous { (u, s) = (p.u, p.site) }
            if again, !response, let p = previousRequest { (u, s) = (p.u, p.site) }
            let url = RequestURL(Self.urls[u])!
            let site = RequestSite(kind: Self.sites[s], evidence: "test", fetchMetadata: true)
            let r = ClientCookies.Request(
                id: id, time: clock.now * 1000, method: "GET", url: url, urlText: Self.urls[u], site: site)
            if response {
                // A response: often the very lines of the one before (the shortcut's case).
                var chosen = (0..<(1 + random.next(3))).map { _ in random.next(Self.lines.count) }
                if again, let p = previous { chosen = p.lines }
                previous = (u, chosen, s)
                builder.reset(ruleNames: [])
                for k in chosen {
                    let bytes = Array(Self.lines[k].utf8)
                    bytes.withUnsafeBufferPointer { b in builder.add(received: b, forwarded: b, unchanged: true) }
                }
                client.response(r, lines: builder.result())
                for k in chosen {
                    reference.receive(SetCookie(Self.lines[k]), from: url, context: site.jarContext)
                }
            } else {
                // A request, sending what the jar would (all as expected: the shortcut's case) or a variation.
                let expected = reference.cookies(for: url, context: site.jarContext)
                let exact = expected.map { String(decoding: $0.pairBytes, as: UTF8.self) }.joined(separator: "; ")
                var h = random.next(4)
                if again, let p = previousRequest { h = p.header }
                previousRequest = (u, s, h)
                let header = [exact, exact, exact + "; x=9", ""][h]
                let verdicts = client.request(r, cookieHeader: header.isEmpty ? nil : CookieHeader(Array(header.utf8)))
                let judged = verdicts.filter { $0.kind == .sentAsExpected || $0.kind == .expectedNotSent }
                    .map { "\($0.name)=\($0.expected ?? "")" }.sorted()
                let want = expected.map { String(decoding: $0.pairBytes, as: UTF8.self) }.sorted()
                #expect(judged == want, "seed \(seed) request \(id) to \(Self.urls[u])")
                // And each verdict as the definitions give it from the jar's answer and the header sent.
                var remaining = expected.map {
                    (String(decoding: $0.nameBytes, as: UTF8.self), String(decoding: $0.valueBytes, as: UTF8.self))
                }
                var kinds: [String] = []
                var unmatched: [String] = []
                let sent =
                    header.isEmpty ? [] : header.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                for pair in sent {
                    let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    if let i = remaining.firstIndex(where: {
                        $0.0 == parts[0] && $0.1 == (parts.count > 1 ? parts[1] : "")
                    }) {
                        remaining.remove(at: i)
                        kinds.append("\(parts[0]) sent-as-expected")
                    } else {
                        unmatched.append(parts[0])
                    }
                }
                for name in unmatched {
                    if let i = remaining.firstIndex(where: { $0.0 == name }) {
                        remaining.remove(at: i)
                        kinds.append("\(name) sent-other-value")
                    } else {
                        kinds.append("\(name) sent-not-set")
                    }
                }
                kinds += remaining.map { "\($0.0) expected-not-sent" }
                #expect(
                    verdicts.map { "\($0.name) \($0.kind.rawValue)" }.sorted() == kinds.sorted(),
                    "seed \(seed) request \(id)")
            }
            let held = Set(client.cookies(at: clock.now * 1000).map(Key.init))
            let truth = Set(reference.allCookies().map(Key.init))
            #expect(held == truth, "seed \(seed) after \(id)")
            if held != truth { return }
        }
        // Not vacuous: the shortcuts were taken many times.
        #expect(client.shortcutsTaken > 50, "\(client.shortcutsTaken)")
        #expect(clock.evictions > 0, "the session never went over the store's limits")
    }
}
