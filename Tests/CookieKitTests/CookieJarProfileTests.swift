import Synchronization
import Testing

@testable import CookieKit

/// Each engine's jar profile against what the engine's own source and documentation say it does: Chromium's
/// `net::CookieMonster` (`kDomainMaxCookies` 180, `kDomainPurgeCookies` 30, the priority quotas 30/50/70, the six
/// purge rounds, `kDefaultAccessUpdateThresholdSeconds` 60, `kPerPartitionDomainMaxCookies`), Firefox's
/// `CookieStorage` (`maxPerHost` 180, `quotaPerHost` 150), WebKit (no per-site limit), and the draft's suggestions.
@Suite struct CookieJarProfileTests {
    static let suffixes = PublicSuffixList(
        text: """
            test
            """)

    final class Clock: Sendable {
        let now = Mutex<Int64>(1_700_000_000)
        func advance(_ s: Int64) { now.withLock { $0 += s } }
        var read: @Sendable () -> Int64 { { self.now.withLock { $0 } } }
    }

    static func jar(_ engine: CookieJar.Profile.Engine, _ clock: Clock = Clock(), unit: CookieJar.TimeUnit = .seconds)
        -> CookieJar
    {
        CookieJar(publicSuffixes: suffixes, profile: .of(engine), unit: unit, clock: clock.read)
    }

    static func url(_ s: String) -> RequestURL { RequestURL(s)! }

    /// 200 cookies set one after another on one host, a second apart: how many the jar keeps, and the first one
    /// it keeps. Chromium purges 181 down to 150 (the 31 least recently used), then takes 19 more: 169, from c31
    /// (Chromium sent 169 of 200 in the recording; Firefox ESR the same, read at the origin).
    @Test(arguments: [
        (CookieJar.Profile.Engine.rfc6265bis, 50, 150), (.chromium, 169, 31), (.firefox, 169, 31), (.webkit, 200, 0),
    ])
    func twoHundredCookiesOnOneHost(_ engine: CookieJar.Profile.Engine, _ kept: Int, _ firstKept: Int) {
        let clock = Clock()
        var jar = Self.jar(engine, clock)
        let u = Self.url("https://a.site.test/")
        for i in 0..<200 {
            clock.advance(1)
            jar.receive(SetCookie("c\(i)=1"), from: u)
        }
        #expect(jar.count == kept)
        let names = Set(jar.allCookies().map(\.name))
        #expect(names.contains("c\(firstKept)") && (firstKept == 0 || !names.contains("c\(firstKept - 1)")))
    }

    /// Chromium and Firefox count a site's hosts together: 10 cookies on a.site.test, then 190 on
    /// other.site.test, and the purge takes a.site.test's (the least recently used); the draft counts per domain.
    @Test(arguments: [
        (CookieJar.Profile.Engine.rfc6265bis, 10, 50), (.chromium, 0, 169), (.firefox, 0, 169), (.webkit, 10, 190),
    ])
    func aSitesHostsShareOneLimit(_ engine: CookieJar.Profile.Engine, _ onA: Int, _ onOther: Int) {
        let clock = Clock()
        var jar = Self.jar(engine, clock)
        for i in 0..<10 {
            clock.advance(1)
            jar.receive(SetCookie("a\(i)=1"), from: Self.url("https://a.site.test/"))
        }
        for i in 0..<190 {
            clock.advance(1)
            jar.receive(SetCookie("o\(i)=1"), from: Self.url("https://other.site.test/"))
        }
        let all = jar.allCookies()
        #expect(all.filter { $0.domain == "a.site.test" }.count == onA)
        #expect(all.filter { $0.domain == "other.site.test" }.count == onOther)
    }

    /// Firefox takes out only insecure cookies to make room for an insecure newcomer: a site full of secure cookies
    /// does not keep a new insecure one; a secure newcomer takes out the 31 least recently used secure ones.
    @Test(arguments: [(false, 180, false), (true, 150, true)])
    func firefoxSparesSecureCookiesForAnInsecureNewcomer(_ secureNewcomer: Bool, _ count: Int, _ kept: Bool) {
        let clock = Clock()
        var jar = Self.jar(.firefox, clock)
        let u = Self.url("https://a.site.test/")
        for i in 0..<180 {
            clock.advance(1)
            jar.receive(SetCookie("s\(i)=1; Secure"), from: u)
        }
        clock.advance(1)
        jar.receive(SetCookie("n=1" + (secureNewcomer ? "; Secure" : "")), from: u)
        #expect(jar.count == count)
        #expect(jar.allCookies().contains { $0.name == "n" } == kept)
    }

    /// Chromium's purge rounds: Low first (sparing 30), insecure before secure within a priority, Medium sparing
    /// 50: (Low, Medium-insecure, Medium-secure) cookies set, and what is left after the 181st.
    @Test(
        arguments: [
            // 40 Low + 141 Medium: 10 Low go (down to the Low quota), then 21 of the oldest Medium.
            ((40, 141, 0), (30, 120, 0)),
            // 181 Medium, 100 of them secure: the 31 oldest insecure go, every secure one stays.
            ((0, 81, 100), (0, 50, 100)),
            // 181 Medium, all secure: the 31 oldest go.
            ((0, 0, 181), (0, 0, 150)),
        ] as [((Int, Int, Int), (Int, Int, Int))])
    func chromiumPurgesByPriorityThenSecurity(_ set: (Int, Int, Int), _ left: (Int, Int, Int)) {
        let clock = Clock()
        var jar = Self.jar(.chromium, clock)
        let u = Self.url("https://a.site.test/")
        var lines: [String] = []
        lines += (0..<set.0).map { "low\($0)=1; Priority=Low" }
        lines += (0..<set.1).map { "med\($0)=1" }
        lines += (0..<set.2).map { "sec\($0)=1; Secure; Priority=medium" }
        for line in lines {
            clock.advance(1)
            jar.receive(SetCookie(line), from: u)
        }
        let all = jar.allCookies()
        #expect(all.filter { $0.priority == .low }.count == left.0)
        #expect(all.filter { $0.priority == .medium && !$0.secureOnly }.count == left.1)
        #expect(all.filter { $0.secureOnly }.count == left.2)
    }

    /// Chromium updates a cookie's last access at most once a minute: 180 cookies, the first read alone 30 s or 90 s
    /// after it was set, then one more cookie: the purge takes the least recently used, which is the first unless
    /// its read counted.
    @Test(arguments: [(Int64(30), false), (Int64(90), true)])
    func chromiumAccessTimesMoveOnlyOnceAMinute(_ readAfter: Int64, _ spared: Bool) {
        let clock = Clock()
        var jar = Self.jar(.chromium, clock)
        let u = Self.url("https://a.site.test/")
        jar.receive(SetCookie("first=1; Path=/f"), from: u)
        for i in 0..<179 { jar.receive(SetCookie("c\(i)=1; Path=/o"), from: u) }
        clock.advance(readAfter)
        #expect(jar.cookieHeader(for: Self.url("https://a.site.test/f")) == "first=1")
        jar.receive(SetCookie("last=1; Path=/o"), from: u)
        #expect(jar.count == 150)
        #expect(jar.allCookies().contains { $0.name == "first" } == spared)
    }

    /// A cookie without SameSite on a cross-site top-level POST: Chromium sends it within two minutes of its
    /// creation (Lax-allowing-unsafe), the draft never, Firefox and WebKit always (no Lax by default).
    @Test(arguments: [
        (CookieJar.Profile.Engine.rfc6265bis, Int64(60), false), (.rfc6265bis, 300, false), (.chromium, 60, true),
        (.chromium, 121, false), (.firefox, 300, true), (.webkit, 300, true),
    ])
    func laxAllowingUnsafeIsChromiumsTwoMinutes(_ engine: CookieJar.Profile.Engine, _ after: Int64, _ sent: Bool) {
        let clock = Clock()
        var jar = Self.jar(engine, clock)
        let u = Self.url("https://a.site.test/")
        jar.receive(SetCookie("d=1"), from: u)
        jar.receive(SetCookie("l=1; SameSite=Lax"), from: u)
        clock.advance(after)
        let post = CookieJar.RequestContext(isSameSite: false, isTopLevelNavigation: true, isSafeMethod: false)
        #expect(jar.cookieHeader(for: u, context: post) == (sent ? "d=1" : ""))
    }

    /// CHIPS: a Partitioned cookie a site-b frame set under top-level site-a is sent only under site-a; an
    /// unpartitioned cookie of the same name is another cookie.
    @Test func aPartitionedCookieIsKeptPerTopLevelSite() {
        var jar = Self.jar(.chromium)
        let b = Self.url("https://b.test/")
        let frame = CookieJar.RequestContext(
            isSameSite: false, isTopLevelNavigation: false, topLevelSite: "https://site-a.test")
        jar.receive(SetCookie("p=framed; Secure; SameSite=None; Partitioned"), from: b, context: frame)
        jar.receive(SetCookie("p=own; Secure; SameSite=None"), from: b)
        #expect(jar.count == 2)
        #expect(jar.cookieHeader(for: b) == "p=own")
        #expect(jar.cookieHeader(for: b, context: frame) == "p=framed; p=own")
        let elsewhere = CookieJar.RequestContext(
            isSameSite: false, isTopLevelNavigation: false, topLevelSite: "https://site-c.test")
        #expect(jar.cookieHeader(for: b, context: elsewhere) == "p=own")
    }

    /// Third parties: WebKit neither keeps nor sends an unpartitioned cookie in a cross-site frame; Firefox keeps
    /// it in the top-level site's partition and sends only that partition's there; Chromium keeps and sends it.
    @Test(arguments: [
        (CookieJar.Profile.Engine.chromium, true, "first=1; t=1", "first=1; t=1"),
        (.firefox, true, "first=1", "t=1"),
        (.webkit, false, "first=1", ""),
    ])
    func thirdPartyCookiesByEngine(
        _ engine: CookieJar.Profile.Engine, _ stored: Bool, _ firstPartyHeader: String, _ framedHeader: String
    ) {
        var jar = Self.jar(engine)
        let w = Self.url("https://widget.test/")
        jar.receive(SetCookie("first=1; Secure; SameSite=None"), from: w)
        let frame = CookieJar.RequestContext(
            isSameSite: false, isTopLevelNavigation: false, topLevelSite: "https://news.test")
        let result = jar.receive(SetCookie("t=1; Secure; SameSite=None"), from: w, context: frame)
        #expect(((try? result.get()) != nil) == stored)
        #expect(jar.cookieHeader(for: w) == firstPartyHeader)
        #expect(jar.cookieHeader(for: w, context: frame) == framedHeader)
    }

    /// Times to the millisecond: `Max-Age=2` set at :22.700 lasts until :24.700 (a whole-second jar had it expire
    /// at :24, and a browser's request at :24.200 was blamed).
    @Test(arguments: [(Int64(1_500), true), (Int64(1_999), true), (Int64(2_000), false)])
    func aMillisecondJarExpiresCookiesToTheMillisecond(_ after: Int64, _ held: Bool) {
        let clock = Clock()
        clock.advance(-1_700_000_000 + 1_700_000_000_700)
        var jar = Self.jar(.rfc6265bis, clock, unit: .milliseconds)
        let u = Self.url("https://a.site.test/")
        jar.receive(SetCookie("m=1; Max-Age=2"), from: u)
        clock.advance(after)
        #expect(jar.cookieHeader(for: u) == (held ? "m=1" : ""))
    }

    @Test(arguments: [
        (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0 Safari/537.36",
            CookieJar.Profile.Engine?.some(.chromium)
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36 Edg/131.0",
            .chromium
        ),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", .firefox),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15",
            .webkit
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
            .webkit
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0 Mobile/15E148 Safari/604.1",
            .webkit
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/131.0 Mobile/15E148 Safari/605.1.15",
            .webkit
        ),
        ("curl/8.14.1", nil), ("python-requests/2.32", nil),
    ])
    func theEngineIsReadFromTheUserAgent(_ agent: String, _ engine: CookieJar.Profile.Engine?) {
        #expect(CookieJar.Profile.engine(userAgent: agent) == engine)
    }
}
