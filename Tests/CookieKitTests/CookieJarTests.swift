@testable import CookieKit
import Synchronization
import Testing

/// Jar scenarios with a fixed clock and a small fake suffix list (as Go's cookiejar tests do).
@Suite struct CookieJarTests {
    static let suffixes = PublicSuffixList(
        text: """
            // test list
            com
            co.uk
            *.ck
            !www.ck
            """)

    final class Clock: Sendable {
        let now = Mutex<Int64>(1_700_000_000)
        func advance(_ s: Int64) { now.withLock { $0 += s } }
        var read: @Sendable () -> Int64 { { self.now.withLock { $0 } } }
    }

    static func jar(_ clock: Clock = Clock(), policy: CookieJar.AcceptPolicy = .always) -> CookieJar {
        CookieJar(acceptPolicy: policy, publicSuffixes: suffixes, clock: clock.read)
    }

    static func url(_ s: String) -> RequestURL { RequestURL(s)! }

    /// (Set-Cookie values at a URL, retrieval URL, expected Cookie header)
    @Test(
        arguments: [
            (["a=1; Domain=example.com"], "https://www.example.com/", "https://example.com/x", "a=1"),
            (["a=1"], "https://www.example.com/", "https://sub.www.example.com/", ""),  // host-only
            (["a=1; Domain=com"], "https://example.com/", "https://example.com/", ""),  // public suffix
            (["a=1; Domain=co.uk"], "https://co.uk/", "https://co.uk/", "a=1"),  // suffix equal to host: host-only
            (["a=1; Domain=foo.ck"], "https://a.foo.ck/", "https://a.foo.ck/", ""),  // *.ck wildcard
            (["a=1; Domain=www.ck"], "https://www.ck/", "https://x.www.ck/", "a=1"),  // !www.ck exception
            (["a=1; Domain=other.com"], "https://example.com/", "https://other.com/", ""),  // foreign domain
            (["a=1; Secure"], "http://example.com/", "https://example.com/", ""),  // Secure from http
            (["a=1; Secure"], "http://localhost/", "http://localhost/", "a=1"),  // loopback is secure
            (["a=1; Path=/p"], "https://example.com/", "https://example.com/", ""),
            (["a=1; Path=/p"], "https://example.com/", "https://example.com/p/q", "a=1"),
            (["a=1", "b=2; Path=/p", "c=3"], "https://example.com/", "https://example.com/p", "b=2; a=1; c=3"),
            (["a=1", "a=2"], "https://example.com/", "https://example.com/", "a=2"),
            (["a=1", "a=2; Max-Age=0"], "https://example.com/", "https://example.com/", ""),
            (["a=1; SameSite=None"], "https://example.com/", "https://example.com/", ""),
            (["a=1; SameSite=None; Secure"], "https://example.com/", "https://example.com/", "a=1"),
            (["__Secure-a=1"], "https://example.com/", "https://example.com/", ""),
            (["__secure-a=1; Secure"], "https://example.com/", "https://example.com/", "__secure-a=1"),
            (["__Host-a=1; Secure; Path=/"], "https://example.com/", "https://example.com/", "__Host-a=1"),
            (["__HOST-a=1; Secure; Path=/; Domain=example.com"], "https://example.com/", "https://example.com/", ""),
            (["__Host-a=1; Secure"], "https://example.com/", "https://example.com/", ""),
            (["a=1; Partitioned"], "https://example.com/", "https://example.com/", ""),
            (["foo", "=bar"], "https://example.com/", "https://example.com/", "bar"),
            (["a=1; Domain=."], "https://example.com/", "https://example.com/", ""),
        ] as [([String], String, String, String)])
    func storesAndRetrievesPerRFC6265bis(_ headers: [String], _ from: String, _ to: String, _ expected: String) {
        var jar = Self.jar()
        for h in headers { jar.receive(SetCookie(h), from: Self.url(from)) }
        #expect(jar.cookieHeader(for: Self.url(to)) == expected)
    }

    @Test func overwritingKeepsTheCreationTimeSoOrderIsStable() {
        let clock = Clock()
        var jar = Self.jar(clock)
        let u = Self.url("https://example.com/")
        jar.receive(SetCookie("a=1"), from: u)
        clock.advance(10)
        jar.receive(SetCookie("b=2"), from: u)
        clock.advance(10)
        jar.receive(SetCookie("a=3"), from: u)
        #expect(jar.cookieHeader(for: u) == "a=3; b=2")
        #expect(jar.allCookies().first { $0.name == "a" }?.creationTime == 1_700_000_000)
    }

    @Test func cookiesExpireWithTheClock() {
        let clock = Clock()
        var jar = Self.jar(clock)
        let u = Self.url("https://example.com/")
        jar.receive(SetCookie("a=1; Max-Age=60"), from: u)
        jar.receive(SetCookie("b=2"), from: u)
        clock.advance(59)
        #expect(jar.cookieHeader(for: u) == "a=1; b=2")
        clock.advance(1)
        #expect(jar.cookieHeader(for: u) == "b=2")
        #expect(jar.count == 1)
    }

    @Test func nonHTTPAPICannotSetOrSeeOrOverwriteHttpOnly() {
        var jar = Self.jar()
        let u = Self.url("https://example.com/")
        jar.receive(SetCookie("h=1; HttpOnly"), from: u)
        jar.receive(SetCookie("s=1"), from: u, via: .nonHTTP)
        #expect(throws: CookieRejection.self) {
            try jar.receive(SetCookie("x=1; HttpOnly"), from: u, via: .nonHTTP).get()
        }
        #expect(throws: CookieRejection.self) { try jar.receive(SetCookie("h=2"), from: u, via: .nonHTTP).get() }
        #expect(jar.cookieHeader(for: u, via: .nonHTTP) == "s=1")
        #expect(jar.cookieHeader(for: u) == "h=1; s=1")
    }

    @Test func insecureOriginCannotOverlayASecureCookie() {
        var jar = Self.jar()
        jar.receive(SetCookie("a=1; Secure; Path=/login"), from: Self.url("https://example.com/login"))
        #expect(throws: CookieRejection.self) {
            try jar.receive(SetCookie("a=2; Path=/login/en"), from: Self.url("http://example.com/")).get()
        }
        // A shorter path does not overlay (§5.7 step 16 note).
        #expect(throws: Never.self) {
            try jar.receive(SetCookie("a=3; Path=/"), from: Self.url("http://example.com/")).get()
        }
    }

    @Test(arguments: [
        (CookieJar.AcceptPolicy.always, nil as String?, true),
        (.never, nil, false),
        (.onlyFromMainDocumentDomain, "https://www.example.com/", true),
        (.onlyFromMainDocumentDomain, "https://other.com/", false),
        (.onlyFromMainDocumentDomain, nil, false),
    ])
    func acceptPoliciesMatchFoundation(_ policy: CookieJar.AcceptPolicy, _ main: String?, _ accepted: Bool) {
        var jar = Self.jar(policy: policy)
        let result = jar.receive(
            SetCookie("a=1; Domain=example.com"), from: Self.url("https://api.example.com/"),
            mainDocumentURL: main.map(Self.url))
        #expect(((try? result.get()) != nil) == accepted)
        #expect(jar.count == (accepted ? 1 : 0))
    }

    @Test func observerSeesInsertReplaceDeleteAndExpiry() {
        let clock = Clock()
        var jar = Self.jar(clock)
        let log = Mutex<[String]>([])
        jar.onChange = { change in
            let line: String
            switch change {
            case .inserted(let c): line = "+\(c.name)=\(c.value)"
            case .replaced(let old, let new): line = "~\(old.value)>\(new.value)"
            case .removed(let c, let why): line = "-\(c.name) \(why.rawValue)"
            }
            log.withLock { $0.append(line) }
        }
        let u = Self.url("https://example.com/")
        jar.receive(SetCookie("a=1"), from: u)
        jar.receive(SetCookie("a=2"), from: u)
        jar.receive(SetCookie("b=1; Max-Age=5"), from: u)
        jar.receive(SetCookie("a=x; Max-Age=0"), from: u)
        clock.advance(5)
        _ = jar.cookieHeader(for: u)
        #expect(log.withLock { $0 } == ["+a=1", "~1>2", "+b=1", "-a deletedByServer", "-b expired"])
    }

    @Test func excessCookiesAreEvictedLeastRecentlyUsedInsecureFirst() {
        let clock = Clock()
        var jar = Self.jar(clock)
        jar.profile.bucketLimit = 3
        jar.profile.bucketPurgedTo = 3
        let u = Self.url("https://example.com/")
        jar.receive(SetCookie("s=1; Secure"), from: u)
        for i in 0..<4 {
            clock.advance(1)
            jar.receive(SetCookie("c\(i)=1"), from: u)
        }
        #expect(jar.count == 3)
        #expect(jar.cookieHeader(for: u) == "s=1; c2=1; c3=1")
    }

    @Test func crossSiteRetrievalSendsOnlyNoneAndLaxOnTopLevelSafeNavigation() {
        var jar = Self.jar()
        let u = Self.url("https://example.com/")
        for h in ["n=1; SameSite=None; Secure", "l=1; SameSite=Lax", "s=1; SameSite=Strict", "d=1"] {
            jar.receive(SetCookie(h), from: u)
        }
        let subresource = CookieJar.RequestContext(isSameSite: false, isTopLevelNavigation: false, isSafeMethod: true)
        let navigation = CookieJar.RequestContext(isSameSite: false, isTopLevelNavigation: true, isSafeMethod: true)
        #expect(jar.cookieHeader(for: u, context: subresource) == "n=1")
        #expect(jar.cookieHeader(for: u, context: navigation) == "n=1; l=1; d=1")
    }
}

@Suite struct PublicSuffixListTests {
    @Test(
        arguments: [
            ("example.com", "com", "example.com"),
            ("www.example.co.uk", "co.uk", "example.co.uk"),
            ("co.uk", "co.uk", nil),
            ("foo.test", "test", "foo.test"),  // implicit * rule
            ("a.b.github.io", "github.io", "b.github.io"),  // private section
            ("city.kawasaki.jp", "kawasaki.jp", "city.kawasaki.jp"),  // exception to *.kawasaki.jp
            ("x.y.kawasaki.jp", "y.kawasaki.jp", "x.y.kawasaki.jp"),  // wildcard
            ("www.xn--p1ai", "xn--p1ai", "www.xn--p1ai"),  // .рф, stored as an A-label
        ] as [(String, String, String?)])
    func systemListFindsSuffixAndRegistrableDomain(_ host: String, _ suffix: String, _ registrable: String?) {
        // The list in use, and the copy built in (what a machine without one gets) give the same answers.
        for list in [PublicSuffixList.system, PublicSuffixList(text: PublicSuffixList.shippedText)] {
            #expect(list.publicSuffix(of: host) == suffix)
            #expect(list.registrableDomain(of: host) == registrable)
        }
    }

    /// Every rule of Debian's list, as the built-in copy reads it: the copy is that list.
    @Test func theBuiltInCopyHoldsEveryRuleOfTheListItWasMadeFrom() throws {
        let text = try String(contentsOfFile: PublicSuffixList.systemPath, encoding: .utf8)
        let copy = PublicSuffixList(text: PublicSuffixList.shippedText)
        var checked = 0
        for line in text.split(separator: "\n") where !line.hasPrefix("//") && !line.isEmpty {
            var rule = String(line.split(separator: " ").first ?? "")
            if rule.hasPrefix("!") || rule.hasPrefix("*.") { continue }
            rule = Punycode.toASCII(rule.lowercased())
            #expect(copy.isPublicSuffix(rule) == PublicSuffixList.system.isPublicSuffix(rule), "\(rule)")
            checked += 1
        }
        #expect(checked > 9000)
    }

    @Test(arguments: [("bücher", "bcher-kva"), ("рф", "p1ai"), ("münchen", "mnchen-3ya")])
    func punycodeEncodesLabelsPerRFC3492(_ label: String, _ expected: String) {
        #expect(Punycode.encode(label) == expected)
    }
}
