import CookieFoundation
import CookieKit
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct HTTPCookieBridgeTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func domainCookieGetsALeadingDotAndReachesSubdomains() throws {
        let setCookie = SetCookie(
            "Bin-Auth-Token=abc; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly")
        let cookie = try #require(
            HTTPCookie.make(from: setCookie, url: RequestURL("https://bin.example.com/login")!, now: Self.now))
        #expect(cookie.domain == ".bin.example.com")
        #expect(cookie.expiresDate == Self.now.addingTimeInterval(604_800))
        #expect(cookie.isHTTPOnly)
        #expect(!cookie.isSecure)
        #expect(cookie.path == "/")
    }

    @Test func hostOnlyCookieStaysOnTheRequestHost() throws {
        let cookie = try #require(
            HTTPCookie.make(from: SetCookie("a=b"), url: RequestURL("https://app.example.com/x/y")!, now: Self.now))
        #expect(cookie.domain == "app.example.com")
        #expect(cookie.path == "/x")
        #expect(cookie.isSessionOnly)
    }

    /// The copied-around helper got each of these wrong.
    @Test(arguments: [
        ("token=a=b==; Path=/", "token", "a=b==", false),  // values containing '='
        ("a=b;Path=/;HttpOnly", "a", "b", false),  // split on "; " only
        ("a=b; Path=/", "a", "b", false),  // forced Secure on
        ("a=\"q v\"; Path=/", "a", "\"q v\"", false),  // quotes kept
        ("a=b; Secure", "a", "b", true),
    ])
    func nameValueAndFlagsSurviveTheBridge(_ header: String, _ name: String, _ value: String, _ secure: Bool) throws {
        let cookie = try #require(
            HTTPCookie.make(from: SetCookie(header), url: RequestURL("https://example.com/")!, now: Self.now))
        #expect(cookie.name == name)
        #expect(cookie.value == value)
        #expect(cookie.isSecure == secure)
    }

    @Test func unknownAttributesAreNotTakenForTheName() throws {
        let cookie = try #require(
            HTTPCookie.make(
                from: SetCookie("sid=1; Priority=High; Foo=bar; Path=/"), url: RequestURL("https://example.com/")!,
                now: Self.now))
        #expect(cookie.name == "sid")
        #expect(cookie.value == "1")
    }

    @Test func twoDigitYearsAndMaxAgeAreReadAsRFC6265bisSays() throws {
        let cookie = try #require(
            HTTPCookie.make(
                from: SetCookie("a=b; Expires=Sun, 09-Jun-24 10:18:14 GMT"), url: RequestURL("https://example.com/")!,
                now: Self.now))
        #expect(cookie.expiresDate.map { Int64($0.timeIntervalSince1970) } == CookieDate.parse("9 Jun 2024 10:18:14"))
    }

    @Test func rejectedCookiesGiveNil() {
        #expect(
            HTTPCookie.make(
                from: SetCookie("a=b; Domain=other.com"), url: RequestURL("https://example.com/")!, now: Self.now)
                == nil)
    }

    @Test(arguments: [
        ("a=b; Domain=example.com; Path=/p; Secure; HttpOnly", "https://www.example.com/p"),
        ("a=b; Path=/", "https://example.com/"),
        ("a=b; Max-Age=3600; Path=/", "https://example.com/"),
    ])
    func roundTripsBackToASetCookieWithTheSameMeaning(_ header: String, _ url: String) throws {
        let u = RequestURL(url)!
        let cookie = try #require(HTTPCookie.make(from: SetCookie(header), url: u, now: Self.now))
        let back = SetCookie(cookie)
        let seconds = Int64(Self.now.timeIntervalSince1970)
        let a = try CookieJar.evaluate(SetCookie(header), from: u, now: seconds, suffixes: .system).get()
        let b = try CookieJar.evaluate(back, from: u, now: seconds, suffixes: .system).get()
        #expect(a.domain == b.domain && a.hostOnly == b.hostOnly && a.path == b.path)
        #expect(a.secureOnly == b.secureOnly && a.httpOnly == b.httpOnly && a.expiry == b.expiry)
    }
}
