import CookieKit
import Testing

@testable import CookieLifecycle

/// The lint in the response's site context: what a third party's Set-Cookie meets.
@Suite struct SiteFindingsTests {
    static let rows: [(String, RequestSite.Kind?, [String])] = [
        ("a=1; SameSite=Lax", .crossSiteSubresource, ["cross-site-samesite"]),
        ("a=1; SameSite=Strict; Secure", .crossSiteSubresource, ["cross-site-samesite"]),
        ("a=1", .crossSiteSubresource, ["cross-site-samesite-default"]),
        ("a=1; SameSite=None; Secure", .crossSiteSubresource, ["third-party-unpartitioned"]),
        ("a=1; SameSite=None; Secure; Partitioned", .crossSiteSubresource, []),
        // SameSite=None without Secure is the ordinary lint's (samesite-none-insecure), whatever the site.
        ("a=1; SameSite=None", .crossSiteSubresource, []),
        // A cross-site top-level navigation may set Lax and Strict cookies; same-site and unknown say nothing.
        ("a=1; SameSite=Strict", .crossSiteNavigation, []),
        ("a=1; SameSite=Lax", .sameSite, []),
        ("a=1; SameSite=Lax", .unknown, []),
        ("a=1; SameSite=Lax", nil, []),
    ]

    @Test(arguments: rows.indices)
    func aThirdPartysCookieIsJudgedInItsSiteContext(_ i: Int) {
        let (line, site, codes) = Self.rows[i]
        let findings = CookieLint.siteFindings(for: SetCookie(line), site: site)
        #expect(findings.map(\.code) == codes, "\(line) \(String(describing: site))")
        #expect(findings.allSatisfy { !$0.message.isEmpty })
    }

    /// The jar agrees with the rejects: a Lax cookie from a cross-site subresource response is not stored.
    @Test func theJarRefusesWhatTheLintSaysIsRefused() {
        var client = ClientCookies(keepsCookies: true)
        let u = RequestURL("https://widget.test/")!
        let r = ClientCookies.Request(
            id: 1, time: 1_800_000_000_000, method: "GET", url: u, urlText: "https://widget.test/",
            site: RequestSite(kind: .crossSiteSubresource, evidence: "test"))
        let events = client.response(
            r,
            lines: [
                .init(
                    received: SetCookie("a=1; SameSite=Lax; Secure"), forwarded: SetCookie("a=1; SameSite=Lax; Secure"))
            ])
        #expect(events.map(\.kind) == [.rejected])
    }

    /// A Partitioned cookie where an unpartitioned one of the same name is held: noted.
    @Test func aPartitionedAndAnUnpartitionedCookieOfOneNameAreNoted() {
        var client = ClientCookies(keepsCookies: true)
        let site = RequestSite(kind: .sameSite, evidence: "test")
        let first = ClientCookies.Request(
            id: 1, time: 1_800_000_000_000, method: "GET", url: RequestURL("https://w.test/")!, urlText: "", site: site)
        let second = ClientCookies.Request(
            id: 2, time: 1_800_000_001_000, method: "GET", url: RequestURL("https://w.test/a/b")!, urlText: "",
            site: site)
        let plain = SetCookie("s=1; SameSite=None; Secure")
        let partitioned = SetCookie("s=2; SameSite=None; Secure; Partitioned; Path=/a")
        #expect(client.response(first, lines: [.init(received: plain, forwarded: plain)]).first?.note == nil)
        let note = client.response(second, lines: [.init(received: partitioned, forwarded: partitioned)]).first?.note
        #expect(note?.contains("both in play") == true)
    }
}
