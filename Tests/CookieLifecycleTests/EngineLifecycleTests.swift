import CookieKit
import Testing

@testable import CookieLifecycle

/// The lifecycle in the client's engine's jar: the five places where the Chromium recording and the
/// replayed RFC jar disagreed, each judged as the engine would.
@Suite struct EngineLifecycleTests {
    static func request(
        _ id: UInt64, _ url: String, at ms: Int64, _ kind: RequestSite.Kind, method: String = "GET",
        document: Bool = false
    ) -> ClientCookies.Request {
        ClientCookies.Request(
            id: id, time: start + ms, method: method, url: RequestURL(url)!, urlText: url,
            site: RequestSite(
                kind: kind, evidence: "test", isSafeMethod: method == "GET", fetchMetadata: true, isDocument: document))
    }

    static func lines(_ texts: [String]) -> [ClientCookies.SetLine] {
        texts.map { .init(received: SetCookie($0), forwarded: SetCookie($0)) }
    }

    static func header(_ text: String?) -> CookieHeader? { text.map { CookieHeader(Array($0.utf8)) } }

    /// A `Max-Age=2` cookie set at .700 and sent 1.5 s later is as expected (a whole-second clock expired it).
    @Test func expiryIsKeptToTheMillisecond() {
        var client = ClientCookies()
        client.response(Self.request(1, "https://app.test/", at: 700, .sameSite), lines: Self.lines(["m=1; Max-Age=2"]))
        let verdicts = client.request(
            Self.request(2, "https://app.test/", at: 2_200, .sameSite), cookieHeader: Self.header("m=1"))
        #expect(verdicts.map(\.kind) == [.sentAsExpected])
    }

    /// 51 cookies in one response, all sent back: the draft's jar (50 per domain) evicted the first and says so
    /// (`evicted`, naming the limit, and an event of its timeline); Chromium's (180 per site) holds them all.
    @Test(arguments: [(CookieJar.Profile.Engine.rfc6265bis, true), (.chromium, false)])
    func aCookieTheJarEvictedIsSaidToBeEvicted(_ engine: CookieJar.Profile.Engine, _ evicted: Bool) throws {
        var client = ClientCookies(profile: .of(engine))
        let names = (0..<51).map { "c\($0)" }
        client.response(
            Self.request(1, "https://app.test/", at: 0, .sameSite), lines: Self.lines(names.map { $0 + "=1" }))
        let verdicts = client.request(
            Self.request(2, "https://app.test/", at: 1_000, .sameSite),
            cookieHeader: Self.header(names.map { $0 + "=1" }.joined(separator: "; ")))
        let first = try #require(verdicts.first { $0.name == "c0" })
        #expect(first.kind == (evicted ? .sentNotSet : .sentAsExpected))
        #expect(first.reason?.code == (evicted ? .evicted : nil))
        #expect(first.reason?.message.contains("50 per domain") ?? !evicted)
        #expect(verdicts.filter { $0.kind == .sentAsExpected }.count == (evicted ? 50 : 51))
        #expect(client.timeline("c0").contains { $0.kind == .evicted } == evicted)
    }

    /// A Partitioned cookie a b.test frame set under top-level site-a.test is not expected on a visit to b.test
    /// itself, and is expected in b.test's frame under site-a.test again.
    @Test func aPartitionedCookieIsExpectedOnlyUnderItsTopLevelSite() {
        var client = ClientCookies(profile: .chromium)
        _ = client.request(
            Self.request(1, "https://site-a.test/", at: 0, .sameSite, document: true), cookieHeader: nil)
        client.response(
            Self.request(2, "https://b.test/frame", at: 100, .crossSiteSubresource),
            lines: Self.lines(["p=1; Secure; SameSite=None; Partitioned; Path=/"]))
        let visit = client.request(
            Self.request(3, "https://b.test/", at: 200, .sameSite, document: true), cookieHeader: nil)
        #expect(visit.isEmpty, "\(visit)")
        _ = client.request(
            Self.request(4, "https://site-a.test/", at: 300, .sameSite, document: true), cookieHeader: nil)
        let framed = client.request(
            Self.request(5, "https://b.test/frame", at: 400, .crossSiteSubresource), cookieHeader: Self.header("p=1"))
        #expect(framed.map(\.kind) == [.sentAsExpected])
        // Sent on the visit to b.test after all: the jar says which partition holds it.
        let sentAnyway = client.request(
            Self.request(6, "https://b.test/", at: 500, .sameSite, document: true), cookieHeader: Self.header("p=1"))
        #expect(sentAnyway.map(\.reason?.code) == [.withheld])
        #expect(sentAnyway.first?.reason?.message.contains("https://site-a.test") == true)
    }

    /// A cookie without SameSite on a cross-site top-level POST: in Chromium's jar it is expected within two
    /// minutes of its creation (Lax-allowing-unsafe) and withheld after; the draft's jar withholds it (and says
    /// Chromium would send it).
    @Test(arguments: [
        (CookieJar.Profile.Engine.chromium, Int64(60_000), CookieVerdict.Kind.sentAsExpected),
        (.chromium, 300_000, .sentNotSet), (.rfc6265bis, 60_000, .sentNotSet),
    ])
    func laxAllowingUnsafeFollowsTheEngine(
        _ engine: CookieJar.Profile.Engine, _ after: Int64, _ verdict: CookieVerdict.Kind
    ) {
        var client = ClientCookies(profile: .of(engine))
        client.response(Self.request(1, "https://app.test/", at: 0, .sameSite), lines: Self.lines(["d=1; Path=/"]))
        let verdicts = client.request(
            Self.request(2, "https://app.test/submit", at: after, .crossSiteNavigation, method: "POST"),
            cookieHeader: Self.header("d=1"))
        #expect(verdicts.map(\.kind) == [verdict])
        if verdict == .sentNotSet { #expect(verdicts.first?.reason?.code == .withheld) }
    }

    /// A line the client's engine does not store (its lint finding says so) is refused in that engine's jar, with
    /// the finding as the reason; the draft's jar keeps it (WebKit refuses Secure from http://localhost).
    @Test(arguments: [(CookieJar.Profile.Engine.webkit, true), (.rfc6265bis, false), (.chromium, false)])
    func aLineTheEngineRefusesIsRefusedInItsJar(_ engine: CookieJar.Profile.Engine, _ refused: Bool) throws {
        var client = ClientCookies(keepsCookies: true, profile: .of(engine))
        let events = client.response(
            Self.request(1, "http://localhost:8080/login", at: 0, .sameSite), lines: Self.lines(["s=1; Secure"]))
        let event = try #require(events.first)
        #expect(event.kind == (refused ? .rejected : .stored))
        #expect((event.detail?.hasPrefix("webkit-rejects-secure-from-loopback") ?? false) == refused, "\(event)")
    }
}
