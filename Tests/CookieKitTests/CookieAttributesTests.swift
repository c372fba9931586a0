import CookieKit
import Testing

@Suite struct CookieAttributesTests {
    static let now: Int64 = 1_700_000_000

    @Test(
        arguments: [
            // input, expiry relative to now (nil: session, Int64.min: already expired)
            ("a=b", nil),
            ("a=b; Max-Age=60", 60),
            ("a=b; Max-Age=0", Int64.min),
            ("a=b; Max-Age=-5", Int64.min),
            ("a=b; Max-Age=60; Expires=Thu, 01 Jan 1970 00:00:00 GMT", 60),  // Max-Age wins (§5.7 step 6)
            ("a=b; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=60", 60),
            ("a=b; Max-Age=99999999999", 34_560_000),  // capped at 400 days (§5.5)
            ("a=b; Max-Age=1.5", nil),  // not a number: ignored
            ("a=b; Max-Age=+5", nil),
            ("a=b; Max-Age=60; Max-Age=x", 60),  // invalid one ignored, earlier valid one stays
            ("a=b; Max-Age=60; Max-Age=120", 120),  // last one wins
            ("a=b; Expires=Fri, 01 Jan 2100 00:00:00 GMT", 34_560_000),
            ("a=b; Expires=garbage", nil),
        ] as [(String, Int64?)])
    func lifetimeFollowsMaxAgeThenExpiresWithThe400DayCap(_ input: String, _ relative: Int64?) {
        let expiry = SetCookie(input).attributes.expiry(now: Self.now)
        if relative == Int64.min {
            #expect(expiry == CookieAttributes.earliest)
        } else if relative == nil {
            #expect(expiry == nil || expiry! < Self.now)
            #expect(expiry == nil)
        } else {
            #expect(expiry == Self.now + relative!)
        }
    }

    @Test(
        arguments: [
            ("a=b; Domain=.Example.COM", "example.com" as String?),
            ("a=b; Domain=example.com; Domain=other.com", "other.com"),
            ("a=b; Domain=example.com; Domain=", ""),
            ("a=b", nil),
            ("a=b; domain=" + String(repeating: "x", count: 1025), nil),  // over 1024 bytes: ignored
        ] as [(String, String?)])
    func domainDropsLeadingDotLowercasesAndLastWins(_ input: String, _ domain: String?) {
        #expect(SetCookie(input).attributes.domain == domain)
    }

    @Test(arguments: [
        ("a=b; SameSite=strict", SameSite.strict), ("a=b; SameSite=LAX", .lax), ("a=b; samesite=None", .none),
        ("a=b; SameSite=Bogus", .default), ("a=b", .default), ("a=b; SameSite=Lax; SameSite=x", .default),
        ("a=b; SameSite", .default),
    ])
    func sameSiteIsStrictLaxNoneOrDefault(_ input: String, _ expected: SameSite) {
        #expect(SetCookie(input).attributes.sameSite == expected)
    }

    @Test(
        arguments: [
            ("a=b; Path=/x/y", "/x/y" as String?, true), ("a=b; Path=x", nil, true), ("a=b; Path=", nil, true),
            ("a=b", nil, false), ("a=b; Path=/one; Path=/two", "/two", true),
        ] as [(String, String?, Bool)])
    func pathMustStartWithSlashElseDefaultPath(_ input: String, _ path: String?, _ hasPath: Bool) {
        let a = SetCookie(input).attributes
        #expect(a.path == path)
        #expect(a.hasPath == hasPath)
    }

    @Test(arguments: [
        ("a=b; Secure; HttpOnly; Partitioned", true, true, true),
        ("a=b; secure=yes; HTTPONLY", true, true, false),
        ("a=b; Securex", false, false, false),
    ])
    func flagsAreCaseInsensitive(_ input: String, _ secure: Bool, _ httpOnly: Bool, _ partitioned: Bool) {
        let a = SetCookie(input).attributes
        #expect(a.secure == secure)
        #expect(a.httpOnly == httpOnly)
        #expect(a.partitioned == partitioned)
    }

    @Test(arguments: [
        ("/", "/"), ("", "/"), ("/a", "/"), ("/a/", "/a"), ("/a/b/c", "/a/b"), ("x", "/"),
    ])
    func defaultPathIsUpToTheLastSlash(_ path: String, _ expected: String) {
        #expect(RequestURL(scheme: "http", host: "h", path: path).defaultPath == expected)
    }

    @Test(arguments: [
        ("/", "/", true), ("/a/b", "/a", true), ("/ab", "/a", false), ("/a/", "/a/", true), ("/a", "/a/", false),
        ("/a/b", "/a/", true),
    ])
    func pathMatchFollowsSection5_1_4(_ request: String, _ cookie: String, _ matches: Bool) {
        #expect(pathMatches(request, cookie) == matches)
    }

    @Test(arguments: [
        ("example.com", "example.com", true), ("www.example.com", "example.com", true),
        ("wwwexample.com", "example.com", false), ("example.com", "www.example.com", false),
        ("1.2.3.4", "2.3.4", false), ("1.2.3.4", "1.2.3.4", true),
    ])
    func domainMatchFollowsSection5_1_3(_ string: String, _ domain: String, _ matches: Bool) {
        #expect(domainMatches(string, domain) == matches)
    }

    @Test(arguments: [
        ("1.2.3.4", true), ("127.0.0.1", true), ("255.255.255.255", true), ("0.0.0.0", true), ("::1", true),
        ("fe80::1", true), ("256.1.1.1", false), ("1.2.3", false), ("1.2.3.4.5", false), ("1..3.4", false),
        ("1.2.3.", false), (".1.2.3", false), ("1.2.3.0004", false), ("1.2.3.a", false), ("example.com", false),
        ("", false), ("１.2.3.4", false), ("1.2.3.4\u{301}", false), ("999.1.1.1", false), ("01.02.03.004", true),
    ])
    func ipAddressesAreFourDecimalOctetsOrContainAColon(_ host: String, _ isIP: Bool) {
        #expect(looksLikeIPAddress(host) == isIP)
    }
}

@Suite struct DomainAccessorTests {
    /// `domain` (one attribute, no full view) and `domainRange` agree with the user-agent view's Domain.
    @Test(arguments: [
        "a=b", "a=b; Domain=Example.COM", "a=b; Domain=..Example.COM", "a=b; Domain=.x.org; Domain=", "a=b; Domain",
        "a=b; Domain=first.test; Domain=" + String(repeating: "x", count: 1025), "a=b; domain=\u{00C9}x.test",
    ])
    func domainAgreesWithTheUserAgentView(_ line: String) {
        let cookie = SetCookie(line)
        #expect(cookie.domain == cookie.attributes.domain)
        #expect(
            cookie.domainRange.map { String(decoding: cookie.bytes[$0], as: UTF8.self).lowercased() }
                == cookie.attributes.domain.map { $0.lowercased() })
    }
}
