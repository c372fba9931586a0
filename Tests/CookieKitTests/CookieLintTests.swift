import CookieKit
import Testing

@Suite struct CookieLintTests {
    static let now: Int64 = 1_700_000_000

    /// (Set-Cookie, request URL, lint codes in order)
    @Test(
        arguments: [
            ("a=b; Path=/; Secure; HttpOnly; SameSite=Lax", "https://example.com/", [String]()),
            ("a=b; Domain=other.com", "https://example.com/", ["domain-mismatch"]),
            ("a=b; Domain=com", "https://example.com/", ["domain-public-suffix"]),
            (
                "a=b; Domain=127.0.0.1", "http://127.0.0.1/",
                [
                    "domain-ip-or-localhost", "chromium-ip-domain-host-only", "firefox-ip-domain-host-only",
                    "webkit-ip-domain-host-only",
                ]
            ),
            // Where Chromium parts from the draft (seen with Chromium 156, docs/browser-differences.md).
            (
                "=a=bar", "http://home.example.org:8888/",
                ["chromium-drops-nameless-with-equals", "firefox-drops-empty-name"]
            ),
            (
                "===a=bar", "http://home.example.org:8888/",
                ["chromium-drops-nameless-with-equals", "firefox-drops-empty-name"]
            ),
            // Where Firefox parts from it (Firefox 153 ESR): no name at all, or a value taken for a name.
            ("=x", "http://home.example.org:8888/", ["firefox-drops-empty-name"]),
            ("five", "http://home.example.org:8888/", ["firefox-nameless-as-name"]),
            ("five; Path=/", "http://home.example.org:8888/", ["firefox-nameless-as-name"]),
            ("a=b\tc", "https://example.com/", ["invalid-character", "chromium-drops-tab", "webkit-tab-ends-token"]),
            ("a\tb=c", "https://example.com/", ["invalid-character", "chromium-drops-tab", "webkit-tab-ends-token"]),
            (
                "a=b; Expires=Mon, 01 Jan 1600 00:00:00 GMT", "https://example.com/",
                [
                    "expires-invalid", "chromium-drops-expires-before-1601", "firefox-drops-expires-before-1601",
                    "webkit-drops-expires-before-1601",
                ]
            ),
            // WebKit drops it even beside a Max-Age (the other two keep a cookie of 10 seconds, as the draft).
            (
                "a=b; Max-Age=10; Expires=Mon, 01 Jan 1600 00:00:00 GMT", "https://example.com/",
                ["expires-invalid", "webkit-drops-expires-before-1601"]
            ),
            (
                "a=b; Max-Age=+10", "https://example.com/",
                ["max-age-invalid", "chromium-max-age-plus", "webkit-max-age-plus"]
            ),
            (
                "a=b; Domain=[::1]", "http://[::1]/",
                [
                    "domain-ip-or-localhost", "webkit-drops-ipv6-domain", "chromium-ip-domain-host-only",
                    "firefox-ip-domain-host-only",
                ]
            ),
            ("a=b; Domain=[1:2]", "http://[::1]/", ["domain-invalid"]),
            // The host's address written another way: the engines compare the text and refuse it; WebKit refuses
            // every IPv6 Domain; the draft compares the addresses (all measured live).
            (
                "a=b; Domain=127.1", "http://127.0.0.1/",
                [
                    "domain-ip-or-localhost", "chromium-drops-ip-domain-written-otherwise",
                    "firefox-drops-ip-domain-written-otherwise", "webkit-drops-ip-domain-written-otherwise",
                ]
            ),
            (
                "a=b; Domain=[0:0:0:0:0:0:0:1]", "http://[::1]/",
                [
                    "domain-ip-or-localhost", "chromium-drops-ip-domain-written-otherwise",
                    "firefox-drops-ip-domain-written-otherwise", "webkit-drops-ipv6-domain",
                ]
            ),
            (
                "a=b; Domain=[0:0::1]", "http://[::1]/",
                [
                    "domain-ip-or-localhost", "chromium-drops-ip-domain-written-otherwise",
                    "firefox-drops-ip-domain-written-otherwise", "webkit-drops-ipv6-domain",
                ]
            ),
            ("a=b; Domain=localhost", "http://app.localhost/", ["domain-ip-or-localhost"]),
            (
                "a=b; SameSite=None", "https://example.com/",
                ["samesite-none-insecure", "webkit-keeps-samesite-none-insecure"]
            ),
            ("a=b; Secure", "http://example.com/", ["secure-from-insecure-origin"]),
            // The draft and Chromium and Firefox treat loopback as a secure origin; WebKit does not.
            ("a=b; Secure", "http://localhost:3000/", ["webkit-rejects-secure-from-loopback"]),
            ("a=b; Secure", "http://127.0.0.1/", ["webkit-rejects-secure-from-loopback"]),
            (
                "__Host-a=b; Domain=example.com; Path=/x", "https://example.com/",
                ["host-prefix-domain", "host-prefix-insecure", "host-prefix-path", "webkit-ignores-prefix"]
            ),
            ("__Host-a=b; Secure; Path=/", "https://example.com/", []),
            // Without a Path attribute: the draft rejects it, WebKit keeps it (measured with parse --browser webkit).
            ("__Host-a=b; Secure", "https://example.com/x/y", ["host-prefix-path", "webkit-ignores-prefix"]),
            ("__Secure-a=b", "https://example.com/", ["secure-prefix-insecure", "webkit-ignores-prefix"]),
            ("a=b; Partitioned", "https://example.com/", ["partitioned-insecure"]),
            (
                "a=" + String(repeating: "x", count: 4096), "https://example.com/",
                ["name-value-too-long", "webkit-no-size-limit"]
            ),
            (
                "a=b; Path=/" + String(repeating: "x", count: 1024), "https://example.com/",
                ["attribute-value-too-long", "webkit-no-size-limit"]
            ),
            // Where WebKitGTK parts from it (WebKitGTK 2.50): lines the draft ignores that it stores, spaces-only
            // trimming, bytes past ASCII, a Domain in capitals, a Max-Age past 64 bits.
            ("", "http://home.example.org:8888/", ["empty-cookie", "webkit-stores-empty-cookie"]),
            ("=", "http://home.example.org:8888/", ["empty-cookie", "webkit-stores-empty-cookie"]),
            ("foo\t=\tbar\t \t;\tttt", "http://home.example.org:8888/", ["webkit-tab-ends-token"]),
            ("x=y; \tpath\t=\t/book\t", "http://home.example.org:8888/", ["webkit-tab-ends-token"]),
            ("foo=\u{6625}\u{8282}", "http://home.example.org:8888/", ["invalid-character", "webkit-cuts-non-ascii"]),
            ("foo=bar; domain=home.eXaMpLe.org", "http://home.example.org:8888/", ["webkit-rejects-uppercase-domain"]),
            (
                "a=b; Max-Age=" + String(repeating: "1", count: 30), "https://example.com/",
                ["lifetime-capped", "webkit-max-age-overflow"]
            ),
            ("a=b; Expires=tomorrow", "https://example.com/", ["expires-invalid"]),
            ("a=b; Max-Age=1h", "https://example.com/", ["max-age-invalid"]),
            ("a=b; Max-Age=99999999", "https://example.com/", ["lifetime-capped"]),
            ("a=b; SameSite=Lax; SameSite=Strict", "https://example.com/", ["attribute-conflict"]),
            ("a=b; SameSite=Lax; samesite=lax", "https://example.com/", []),
            ("a=b\u{1}c", "https://example.com/", ["control-character"]),
            ("a=b c", "https://example.com/", ["invalid-character"]),
            ("a b=c", "https://example.com/", ["invalid-character"]),
            ("a=\"quoted\"", "https://example.com/", []),
            ("a=b; Domain=.example.com", "https://www.example.com/", ["domain-leading-dot"]),
            ("a=b; SameSite=strictly", "https://example.com/", ["samesite-invalid"]),
            ("a=b; Path=relative", "https://example.com/x/y", ["path-invalid"]),
            ("a=b; Max-Age=0", "https://example.com/", ["already-expired"]),
        ] as [(String, String, [String])])
    func findsWhatBrowsersDoWithTheCookie(_ header: String, _ url: String, _ codes: [String]) {
        let findings = CookieLint.findings(for: SetCookie(header), from: RequestURL(url)!, now: Self.now)
        #expect(findings.map(\.code) == codes)
    }

    @Test func everyRejectingFindingAgreesWithTheJar() {
        let headers = [
            "a=b; Domain=other.com", "a=b; SameSite=None", "__Secure-a=b", "a=b; Partitioned", "a=b; Secure",
            "a=b; Domain=com", "__Host-a=b; Secure",
        ]
        for header in headers {
            let cookie = SetCookie(header)
            let url = RequestURL("http://example.com/")!
            let rejects = CookieLint.findings(for: cookie, from: url, now: Self.now).contains {
                $0.severity == .rejects
            }
            let jarRejects =
                (try? CookieJar.evaluate(cookie, from: url, now: Self.now, suffixes: .system).get()) == nil
            #expect(rejects == jarRejects, "\(header)")
            #expect(rejects)
        }
    }
}
