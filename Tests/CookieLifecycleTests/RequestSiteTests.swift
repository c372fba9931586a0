import CookieKit
import Testing

@testable import CookieLifecycle

@Suite struct RequestSiteTests {
    static let cases: [(String, String, RequestSite.Headers, RequestSite.Kind)] = [
        ("https://app.test/", "GET", .init(), .unknown),
        (
            "https://app.test/", "GET", .init(secFetchSite: "same-origin", secFetchDest: "empty", secFetchMode: "cors"),
            .sameSite
        ),
        ("https://app.test/", "GET", .init(secFetchSite: "same-site"), .sameSite),
        (
            "https://app.test/", "GET", .init(secFetchSite: "none", secFetchDest: "document", secFetchMode: "navigate"),
            .sameSite
        ),
        (
            "https://app.test/", "GET",
            .init(secFetchSite: "cross-site", secFetchDest: "document", secFetchMode: "navigate"), .crossSiteNavigation
        ),
        (
            "https://app.test/", "GET",
            .init(secFetchSite: "cross-site", secFetchDest: "iframe", secFetchMode: "navigate"), .crossSiteSubresource
        ),
        (
            "https://app.test/", "GET",
            .init(secFetchSite: "cross-site", secFetchDest: "image", secFetchMode: "no-cors"), .crossSiteSubresource
        ),
        (
            "https://app.test/", "POST", .init(secFetchSite: "Cross-Site", secFetchDest: "empty", secFetchMode: "cors"),
            .crossSiteSubresource
        ),
        // Origin: a subdomain is the same site; another registrable domain, another scheme or an opaque origin is not.
        ("https://api.app.test/", "POST", .init(origin: "https://www.app.test"), .sameSite),
        ("https://api.example.com/", "POST", .init(origin: "https://www.example.com"), .sameSite),
        ("https://api.example.com/", "POST", .init(origin: "https://evil.example.org"), .crossSiteSubresource),
        ("https://api.example.com/", "POST", .init(origin: "http://www.example.com"), .crossSiteSubresource),
        ("https://api.example.com/", "POST", .init(origin: "null"), .crossSiteSubresource),
        // Referer when nothing else: HTML asked for by GET is taken for a navigation.
        (
            "https://example.com/", "GET",
            .init(referer: "https://news.example.org/story", accept: "text/html,application/xhtml+xml"),
            .crossSiteNavigation
        ),
        (
            "https://example.com/a.js", "GET", .init(referer: "https://news.example.org/story", accept: "*/*"),
            .crossSiteSubresource
        ),
        ("https://example.com/a.js", "GET", .init(referer: "https://www.example.com/"), .sameSite),
        // Fetch Metadata wins over Origin.
        (
            "https://example.com/", "POST", .init(secFetchSite: "same-origin", origin: "https://evil.example.org"),
            .sameSite
        ),
    ]

    @Test(arguments: cases.indices)
    func theSiteContextComesFromFetchMetadataThenOriginThenReferer(_ i: Int) {
        let (url, method, headers, kind) = Self.cases[i]
        let s = RequestSite.classify(url: RequestURL(url)!, method: method, headers: headers)
        #expect(s.kind == kind, "\(url) \(headers)")
        #expect(!s.evidence.isEmpty)
    }

    @Test func theJarContextAllowsLaxOnlyOnSafeTopLevelNavigations() {
        let nav = RequestSite(kind: .crossSiteNavigation, evidence: "", isSafeMethod: true).jarContext
        #expect(!nav.isSameSite && nav.isTopLevelNavigation && nav.isSafeMethod)
        let sub = RequestSite(kind: .crossSiteSubresource, evidence: "").jarContext
        #expect(!sub.isSameSite && !sub.isTopLevelNavigation)
        #expect(RequestSite(kind: .unknown, evidence: "").jarContext.isSameSite)
    }

    @Test func headersAreReadByNameWithoutCase() {
        let h = RequestSite.Headers(fields: [
            (name: "SEC-FETCH-SITE", value: "cross-site"), (name: "Origin", value: "https://a.test"),
        ])
        #expect(h.secFetchSite == "cross-site")
        #expect(h.origin == "https://a.test")
    }
}
