import CookieKit
import Testing

@testable import CookieLifecycle

/// One scenario: Set-Cookie lines sent to the client (each with the request it answered), then one request with the
/// Cookie header the client sent, and the verdicts expected for it.
struct Scenario: Sendable, CustomTestStringConvertible {
    var name: String
    /// (url, site, Set-Cookie line, seconds after the start)
    var sets: [(String, RequestSite.Kind, String, Int64)]
    var request: (url: String, site: RequestSite.Kind, method: String, at: Int64)
    var cookieHeader: String?
    /// (name, verdict, reason code)
    var expected: [(String, CookieVerdict.Kind, CookieVerdict.Reason.Code?)]
    var testDescription: String { name }
}

let start: Int64 = 1_800_000_000_000

func site(_ kind: RequestSite.Kind, method: String = "GET") -> RequestSite {
    RequestSite(kind: kind, evidence: "test", isSafeMethod: method == "GET", fetchMetadata: true)
}

let scenarios: [Scenario] = [
    Scenario(
        name: "a stored cookie sent back is as expected",
        sets: [("https://app.test/login", .sameSite, "sid=abc; Path=/; HttpOnly", 0)],
        request: ("https://app.test/home", .sameSite, "GET", 5), cookieHeader: "sid=abc",
        expected: [("sid", .sentAsExpected, nil)]),
    Scenario(
        name: "a cookie the jar would send and the client did not, with nothing to explain it",
        sets: [("https://app.test/login", .sameSite, "sid=abc; Path=/", 0)],
        request: ("https://app.test/home", .sameSite, "GET", 5), cookieHeader: nil,
        expected: [("sid", .expectedNotSent, .unexplained)]),
    Scenario(
        name: "an unpartitioned SameSite=None cookie not sent to a cross-site frame: third-party blocking",
        sets: [("https://widget.test/", .sameSite, "w=1; SameSite=None; Secure", 0)],
        request: ("https://widget.test/frame", .crossSiteSubresource, "GET", 5), cookieHeader: nil,
        expected: [("w", .expectedNotSent, .thirdPartyBlocking)]),
    Scenario(
        name: "a partitioned cookie sent to a cross-site frame is as expected",
        sets: [("https://widget.test/", .sameSite, "w=1; SameSite=None; Secure; Partitioned", 0)],
        request: ("https://widget.test/frame", .crossSiteSubresource, "GET", 5), cookieHeader: "w=1",
        expected: [("w", .sentAsExpected, nil)]),
    Scenario(
        name: "a cookie set by a cross-site response, unpartitioned, never kept",
        sets: [("https://widget.test/", .crossSiteSubresource, "w=1; SameSite=None; Secure", 0)],
        request: ("https://widget.test/", .sameSite, "GET", 5), cookieHeader: nil,
        expected: [("w", .expectedNotSent, .setCrossSite)]),
    Scenario(
        name: "a Lax cookie is not expected on a cross-site subresource",
        sets: [("https://app.test/", .sameSite, "l=1; SameSite=Lax", 0)],
        request: ("https://app.test/img.png", .crossSiteSubresource, "GET", 5), cookieHeader: nil,
        expected: []),
    Scenario(
        name: "a Lax cookie is expected on a cross-site top-level GET navigation",
        sets: [("https://app.test/", .sameSite, "l=1; SameSite=Lax", 0)],
        request: ("https://app.test/", .crossSiteNavigation, "GET", 5), cookieHeader: "l=1",
        expected: [("l", .sentAsExpected, nil)]),
    Scenario(
        name: "a Lax cookie is not expected on a cross-site POST navigation",
        sets: [("https://app.test/", .sameSite, "l=1; SameSite=Lax", 0)],
        request: ("https://app.test/", .crossSiteNavigation, "POST", 5), cookieHeader: nil,
        expected: []),
    Scenario(
        name: "a Strict cookie is not expected on a cross-site navigation",
        sets: [("https://app.test/", .sameSite, "s=1; SameSite=Strict", 0)],
        request: ("https://app.test/", .crossSiteNavigation, "GET", 5), cookieHeader: nil,
        expected: []),
    Scenario(
        name: "a cookie the proxy never saw set",
        sets: [],
        request: ("https://app.test/", .sameSite, "GET", 5), cookieHeader: "_ga=GA1.2",
        expected: [("_ga", .sentNotSet, .notSeen)]),
    Scenario(
        name: "the jar's value and another sent",
        sets: [("https://app.test/", .sameSite, "theme=dark", 0)],
        request: ("https://app.test/", .sameSite, "GET", 5), cookieHeader: "theme=light",
        expected: [("theme", .sentOtherValue, .changedElsewhere)]),
    Scenario(
        name: "a cookie expiring within seconds of the request",
        sets: [("https://app.test/", .sameSite, "t=1; Max-Age=6", 0)],
        request: ("https://app.test/", .sameSite, "GET", 5), cookieHeader: nil,
        expected: [("t", .expectedNotSent, .expiring)]),
    // A Secure cookie from http://localhost: WebKit keeps none (webkit-rejects-secure-from-loopback). Asked for
    // from a cross-site frame, this request's context explains it first; asked same-site, the finding does.
    Scenario(
        name: "a localhost Secure cookie not sent to a cross-site frame: the request's context first",
        sets: [("http://localhost:3000/", .sameSite, "w=1; SameSite=None; Secure", 0)],
        request: ("http://localhost:3000/frame", .crossSiteSubresource, "GET", 5), cookieHeader: nil,
        expected: [("w", .expectedNotSent, .thirdPartyBlocking)]),
    Scenario(
        name: "a localhost Secure cookie not sent same-site: WebKit's finding",
        sets: [("http://localhost:3000/", .sameSite, "w=1; Secure", 0)],
        request: ("http://localhost:3000/", .sameSite, "GET", 5), cookieHeader: nil,
        expected: [("w", .expectedNotSent, .lint)]),
    Scenario(
        name: "a cookie whose line has a Chromium finding",
        sets: [("https://app.test/", .sameSite, "tab=a\tb", 0)],
        request: ("https://app.test/", .sameSite, "GET", 5), cookieHeader: nil,
        expected: [("tab", .expectedNotSent, .lint)]),
    Scenario(
        name: "a cookie the jar refused and the client sends anyway",
        sets: [("https://app.test/", .sameSite, "x=1; Domain=other.test", 0)],
        request: ("https://app.test/", .sameSite, "GET", 5), cookieHeader: "x=1",
        expected: [("x", .sentNotSet, .rejectedOnSet)]),
    Scenario(
        name: "a cookie for another path sent here",
        sets: [("https://app.test/app/login", .sameSite, "p=1; Path=/app", 0)],
        request: ("https://app.test/other", .sameSite, "GET", 5), cookieHeader: "p=1",
        expected: [("p", .sentNotSet, .jarMismatch)]),
    Scenario(
        name:
            "a cookie without SameSite sent on a cross-site top-level POST a minute after it was set: withheld (Lax-allowing-unsafe)",
        sets: [("https://app.test/", .sameSite, "d=1; Path=/", 0)],
        request: ("https://app.test/submit", .crossSiteNavigation, "POST", 60), cookieHeader: "d=1",
        expected: [("d", .sentNotSet, .withheld)]),
    Scenario(
        name: "a Strict cookie sent on a cross-site navigation: withheld, not a mismatch",
        sets: [("https://app.test/", .sameSite, "s=1; SameSite=Strict", 0)],
        request: ("https://app.test/", .crossSiteNavigation, "GET", 5), cookieHeader: "s=1",
        expected: [("s", .sentNotSet, .withheld)]),
    Scenario(
        name: "a cookie the server deleted, still sent",
        sets: [
            ("https://app.test/", .sameSite, "d=1", 0), ("https://app.test/logout", .sameSite, "d=; Max-Age=0", 2),
        ],
        request: ("https://app.test/", .sameSite, "GET", 5), cookieHeader: "d=1",
        expected: [("d", .sentNotSet, .expiredInJar)]),
    Scenario(
        name: "a Secure cookie is not expected over plain http",
        sets: [("https://app.test/", .sameSite, "sec=1; Secure", 0)],
        request: ("http://app.test/", .sameSite, "GET", 5), cookieHeader: nil,
        expected: []),
    Scenario(
        name: "two cookies of one name on two paths, both sent",
        sets: [
            ("https://app.test/", .sameSite, "a=root; Path=/", 0),
            ("https://app.test/app/x", .sameSite, "a=app; Path=/app", 1),
        ],
        request: ("https://app.test/app/y", .sameSite, "GET", 5), cookieHeader: "a=app; a=root",
        expected: [("a", .sentAsExpected, nil), ("a", .sentAsExpected, nil)]),
    Scenario(
        name: "every kind in one request",
        sets: [
            ("https://app.test/", .sameSite, "keep=1", 0), ("https://app.test/", .sameSite, "lost=1", 0),
            ("https://app.test/", .sameSite, "changed=1", 0),
        ],
        request: ("https://app.test/", .sameSite, "GET", 5), cookieHeader: "keep=1; changed=2; script=x",
        expected: [
            ("keep", .sentAsExpected, nil), ("changed", .sentOtherValue, .changedElsewhere),
            ("script", .sentNotSet, .notSeen), ("lost", .expectedNotSent, .unexplained),
        ]),
]

@Suite struct ClientCookiesTests {
    @Test(arguments: scenarios)
    func verdictsFollowTheJarAndTheSentHeader(_ s: Scenario) {
        var client = ClientCookies()
        for (k, (url, kind, line, at)) in s.sets.enumerated() {
            let u = RequestURL(url)!
            let r = ClientCookies.Request(
                id: UInt64(k + 1), time: start + at * 1000, method: "GET", url: u, urlText: url, site: site(kind))
            client.response(r, lines: [.init(received: SetCookie(line), forwarded: SetCookie(line))])
        }
        let u = RequestURL(s.request.url)!
        let r = ClientCookies.Request(
            id: 100, time: start + s.request.at * 1000, method: s.request.method, url: u, urlText: s.request.url,
            site: site(s.request.site, method: s.request.method))
        let verdicts = client.request(r, cookieHeader: s.cookieHeader.map { CookieHeader(Array($0.utf8)) })
        #expect(verdicts.map(\.name) == s.expected.map(\.0))
        #expect(verdicts.map(\.kind) == s.expected.map(\.1))
        #expect(verdicts.map(\.reason?.code) == s.expected.map(\.2))
        for v in verdicts where v.kind != .sentAsExpected {
            #expect(!(v.reason?.message.isEmpty ?? true))
        }
    }

    /// A cookie the jar holds for the request's URL is never called a mismatch: the reason says what withholds it,
    /// and names Chromium's Lax-allowing-unsafe window (two minutes) only inside it.
    @Test(arguments: [(Int64(60), true), (Int64(300), false)])
    func aCookieHeldForThisURLIsWithheldAndSaysWhy(_ age: Int64, _ insideTheWindow: Bool) throws {
        var client = ClientCookies()
        let set = ClientCookies.Request(
            id: 1, time: start, method: "GET", url: RequestURL("https://app.test/")!, urlText: "https://app.test/",
            site: site(.sameSite))
        client.response(set, lines: [.init(received: SetCookie("d=1; Path=/"), forwarded: SetCookie("d=1; Path=/"))])
        let post = ClientCookies.Request(
            id: 2, time: start + age * 1000, method: "POST", url: RequestURL("https://app.test/submit")!,
            urlText: "https://app.test/submit", site: site(.crossSiteNavigation, method: "POST"))
        let verdict = try #require(client.request(post, cookieHeader: CookieHeader(Array("d=1".utf8))).first)
        #expect(verdict.reason?.code == .withheld)
        #expect(verdict.reason?.message.contains("Lax-allowing-unsafe") == insideTheWindow, "\(verdict)")
        #expect(verdict.reason?.engines == (insideTheWindow ? ["Chromium"] : []))
        #expect(verdict.reason?.message.contains("does not send to this URL") == false)
    }

    /// A client that sends neither a Cookie header nor Fetch Metadata keeps no cookies (curl without a jar): its
    /// requests are not judged until it does.
    @Test func aClientIsJudgedOnceItShowsItKeepsCookies() {
        var client = ClientCookies()
        let u = RequestURL("https://app.test/")!
        let bare = RequestSite(kind: .unknown, evidence: "none")
        client.response(
            .init(id: 1, time: start, method: "GET", url: u, urlText: "", site: bare),
            lines: [.init(received: nil, forwarded: SetCookie("a=1"))])
        let first = client.request(
            .init(id: 2, time: start, method: "GET", url: u, urlText: "", site: bare), cookieHeader: nil)
        #expect(first.isEmpty && !client.keepsCookies)
        let second = client.request(
            .init(id: 3, time: start, method: "GET", url: u, urlText: "", site: bare),
            cookieHeader: CookieHeader(Array("b=2".utf8)))
        #expect(second.map(\.kind) == [.sentNotSet, .expectedNotSent])
        let third = client.request(
            .init(id: 4, time: start, method: "GET", url: u, urlText: "", site: bare), cookieHeader: nil)
        #expect(third.map(\.kind) == [.expectedNotSent])
        var browser = ClientCookies()
        #expect(
            browser.request(
                .init(id: 1, time: start, method: "GET", url: u, urlText: "", site: site(.sameSite)), cookieHeader: nil
            ).isEmpty)
        #expect(browser.keepsCookies)
    }

    @Test func theTimelineHoldsEachSetAndEachRequest() {
        var client = ClientCookies()
        let u = RequestURL("https://app.test/")!
        let set = ClientCookies.Request(
            id: 1, time: start, method: "POST", url: u, urlText: "https://app.test:443/login", site: site(.sameSite))
        client.response(
            set,
            lines: [
                .init(received: SetCookie("sid=a"), forwarded: SetCookie("sid=a; Secure"), rules: ["harden"]),
                .init(received: SetCookie("gone=1"), forwarded: nil, rules: ["drop it"]),
            ])
        let ask = ClientCookies.Request(
            id: 2, time: start + 1000, method: "GET", url: u, urlText: "https://app.test:443/", site: site(.sameSite))
        _ = client.request(ask, cookieHeader: CookieHeader(Array("sid=a".utf8)))
        let sid = client.timelines["sid"] ?? []
        #expect(sid.map(\.kind) == [.stored, .sentAsExpected])
        #expect(sid.first?.received == "sid=a")
        #expect(sid.first?.forwarded == "sid=a; Secure")
        #expect(sid.first?.rules == ["harden"])
        #expect(sid.map(\.requestID) == [1, 2])
        #expect(client.timelines["gone"]?.map(\.kind) == [.dropped])
    }

    @Test func theTimelineKeepsTheNewestEventsOfABoundedNumberOfNames() {
        var client = ClientCookies(keepsCookies: true)
        let u = RequestURL("https://app.test/")!
        for k in 0..<(ClientCookies.namesPerClient + 10) {
            let r = ClientCookies.Request(
                id: UInt64(k), time: start, method: "GET", url: u, urlText: "", site: site(.sameSite))
            client.response(r, lines: [.init(received: nil, forwarded: SetCookie("n\(k)=1"))])
        }
        #expect(client.timelines.count == ClientCookies.namesPerClient)
        #expect(client.timelines["n0"] == nil)
        for k in 0..<(ClientCookies.eventsPerCookie + 5) {
            let r = ClientCookies.Request(
                id: UInt64(1000 + k), time: start, method: "GET", url: u, urlText: "", site: site(.sameSite))
            _ = client.request(r, cookieHeader: CookieHeader(Array("n300=\(k)".utf8)))
        }
        let kept = client.timelines["n300"] ?? []
        #expect(kept.count <= ClientCookies.eventsPerCookie && kept.count >= ClientCookies.eventsPerCookie * 3 / 4)
        #expect(kept.last?.requestID == UInt64(1000 + ClientCookies.eventsPerCookie + 4))
    }

    /// The same line again, or the same value sent again, is one event counted: a session that refreshes its
    /// cookie on every response has a timeline of what changed, not of every response.
    @Test func repeatsAreCountedIntoOneEvent() {
        var client = ClientCookies(keepsCookies: true)
        let u = RequestURL("https://app.test/")!
        for k in 1...3 {
            let r = ClientCookies.Request(
                id: UInt64(k), time: start + Int64(k) * 1000, method: "GET", url: u, urlText: "", site: site(.sameSite))
            client.response(
                r, lines: [.init(received: SetCookie("s=1; Max-Age=60"), forwarded: SetCookie("s=1; Max-Age=60"))])
        }
        let r = ClientCookies.Request(
            id: 4, time: start + 4000, method: "GET", url: u, urlText: "", site: site(.sameSite))
        client.response(
            r, lines: [.init(received: SetCookie("s=2; Max-Age=60"), forwarded: SetCookie("s=2; Max-Age=60"))])
        let events = client.timelines["s"] ?? []
        #expect(events.map(\.kind) == [.stored, .stored])
        #expect(events.map(\.count) == [3, 1])
        #expect(events.map(\.requestID) == [1, 4])
        #expect(events.map(\.lastRequestID) == [3, 4])
        #expect(events.first?.expiry == start + 3000 + 60_000)
    }

    /// A client that keeps no cookies has its responses kept unparsed (a ring), and replayed when it starts to or its
    /// timeline is asked for.
    @Test func responsesWaitUnparsedUntilTheClientKeepsCookies() {
        var client = ClientCookies()
        let bare = RequestSite(kind: .unknown, evidence: "none")
        for k in 0..<(ClientCookies.pendingLimit + 3) {
            let u = RequestURL("https://h\(k).test/")!
            let r = ClientCookies.Request(id: UInt64(k), time: start, method: "GET", url: u, urlText: "", site: bare)
            client.response(r, lines: [.init(received: nil, forwarded: SetCookie("c=1"))])
        }
        #expect(client.timelines.isEmpty)
        // The ring kept the newest pendingLimit responses: the oldest three went.
        let domains = Set(client.cookies(at: start).map(\.domain))
        #expect(domains.count == ClientCookies.pendingLimit)
        #expect(!domains.contains("h0.test") && !domains.contains("h2.test"))
        #expect(domains.contains("h3.test") && domains.contains("h\(ClientCookies.pendingLimit + 2).test"))
        #expect(client.timelines["c"]?.last?.kind == .stored)
    }
}
