import CookieKit
import Testing

@Suite struct SetCookieEditTests {
    enum Edit: Sendable {
        case set(CookieAttributeKind, String)
        case setNamed(String, String?)
        case flag(CookieAttributeKind, Bool)
        case remove(CookieAttributeKind)
        case removeNamed(String)
        case rename(String)
        case value(String)
    }

    static let cases: [(String, Edit, String)] = [
        // Only the edited attribute's bytes change.
        (
            "a=b;  Domain=bin.example.com ;Path=/", .set(.domain, ".bin.example.com"),
            "a=b;  Domain=.bin.example.com ;Path=/"
        ),
        ("a=b", .set(.domain, "example.com"), "a=b; Domain=example.com"),
        ("a=b;", .set(.path, "/"), "a=b; Path=/"),
        // Last one wins: the occurrence in effect is edited.
        ("a=b; Path=/x; path=/y", .set(.path, "/z"), "a=b; Path=/x; path=/z"),
        ("a=b; Domain", .set(.domain, "x.com"), "a=b; Domain=x.com"),
        ("a=b; SameSite=None", .set(.sameSite, "None"), "a=b; SameSite=None"),
        // In-place value changes move only the attributes after them (kept layout checked below).
        (
            "a=b; Domain=x.com; Path=/p ; Secure", .set(.domain, "longer.example.com"),
            "a=b; Domain=longer.example.com; Path=/p ; Secure"
        ),
        ("a=b; SameSite=None;Path=/;HttpOnly", .set(.sameSite, "Lax"), "a=b; SameSite=Lax;Path=/;HttpOnly"),
        ("a=b; Max-Age=100000 ; x=1", .set(.maxAge, "5"), "a=b; Max-Age=5 ; x=1"),
        ("a=b; Path= ; x=1", .set(.path, "/q"), "a=b; Path= /q; x=1"),
        ("a=b; Path=/old; x=1", .set(.path, " /spaced "), "a=b; Path= /spaced ; x=1"),
        ("a=b\u{1}; Path=/old; x=1", .set(.path, "/n"), "a=b\u{1}; Path=/n; x=1"),
        // Flags are idempotent.
        ("a=b; secure", .flag(.secure, true), "a=b; secure"),
        ("a=b", .flag(.secure, true), "a=b; Secure"),
        ("a=b; Secure; HttpOnly; Secure", .flag(.secure, false), "a=b; HttpOnly"),
        ("a=b; HttpOnly", .flag(.httpOnly, false), "a=b"),
        ("a=b", .flag(.partitioned, false), "a=b"),
        // Removal takes every occurrence and its ';'.
        ("a=b; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Path=/", .remove(.expires), "a=b; Path=/"),
        ("a=b; Max-Age=1; Path=/; max-age=2", .remove(.maxAge), "a=b; Path=/"),
        ("a=b; Path=/", .remove(.domain), "a=b; Path=/"),
        ("a=b;Domain=x; Path=/ ;  HttpOnly;Domain=y ; z", .remove(.domain), "a=b; Path=/ ;  HttpOnly; z"),
        ("a=b; Secure\u{7F}; Path=/", .remove(.path), "a=b; Secure\u{7F}"),
        ("a=b; Foo=1; foo=2", .removeNamed("FOO"), "a=b"),
        ("a=b", .setNamed("Priority", "High"), "a=b; Priority=High"),
        ("a=b; priority=Low", .setNamed("Priority", "High"), "a=b; priority=High"),
        ("a=b", .setNamed("Flag", nil), "a=b; Flag"),
        // Name and value.
        ("  sid = 1 ; Path=/", .rename("__Host-sid"), "  __Host-sid = 1 ; Path=/"),
        ("foo; Path=/", .rename("n"), "n=foo; Path=/"),
        ("=foo", .rename("n"), "n=foo"),
        ("a=\"old\"; Path=/", .value("\"new\""), "a=\"new\"; Path=/"),
        ("a=; Path=/", .value("v"), "a=v; Path=/"),
    ]

    @Test(arguments: cases)
    func editsChangeOnlyTheEditedBytes(_ input: String, _ edit: Edit, _ expected: String) throws {
        var cookie = SetCookie(input)
        switch edit {
        case .set(let kind, let value): try cookie.set(kind, to: value)
        case .setNamed(let name, let value): try cookie.set(attributeNamed: name, to: value)
        case .flag(let kind, let on): cookie.setFlag(kind, on)
        case .remove(let kind): cookie.remove(kind)
        case .removeNamed(let name): cookie.remove(attributeNamed: name)
        case .rename(let name): try cookie.rename(to: name)
        case .value(let value): try cookie.setValue(value)
        }
        #expect(cookie.description == expected)
        // The edited value parses as if it had been received that way.
        #expect(cookie == SetCookie(expected))
        #expect(cookie.attributes == SetCookie(expected).attributes)
        // The layout kept after the edit is the one a fresh parse finds (edits may update it in place).
        #expect(cookie.writtenAttributes == SetCookie(expected).writtenAttributes)
        #expect(cookie.name == SetCookie(expected).name && cookie.value == SetCookie(expected).value)
    }

    @Test(arguments: ["x;y", "x\ny", "x\u{0}"])
    func valuesThatWouldChangeTheStructureAreRefused(_ bad: String) {
        var cookie = SetCookie("a=b")
        #expect(throws: SetCookie.EditError.self) { try cookie.setValue(bad) }
        #expect(throws: SetCookie.EditError.self) { try cookie.set(.domain, to: bad) }
        #expect(cookie.description == "a=b")
    }

    @Test(arguments: ["a=b", "a b", "a;b", ""])
    func namesMustBeTokens(_ bad: String) {
        var cookie = SetCookie("x=1")
        #expect(throws: SetCookie.EditError.self) { try cookie.set(attributeNamed: bad, to: "v") }
    }

    @Test func settingTheSameValueTwiceIsIdempotent() throws {
        var cookie = SetCookie("a=b; Path=/")
        try cookie.set(.domain, to: ".example.com")
        let once = cookie
        try cookie.set(.domain, to: ".example.com")
        cookie.setFlag(.secure, true)
        cookie.setFlag(.secure, true)
        #expect(cookie.description == once.description + "; Secure")
    }

    /// Long chains of edits on varied lines: after every step the kept layout equals a fresh parse of the bytes.
    @Test func editChainsKeepTheLayoutAFreshParseFinds() throws {
        let lines = [
            "sid=abc; Domain=example.test; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly",
            "  t = x ;domain=.a.b ;  SameSite=None ;Secure;secure; Max-Age=5;",
            "n; Path=/p; Domain=; Foo=bar baz; Partitioned",
            "a=b;;; Path=/;  ;HttpOnly",
        ]
        let values = ["x.example", "/", "Lax", "1", "a b", "", "  padded  ", "Wed, 01 Jan 2031 00:00:00 GMT"]
        let kinds: [CookieAttributeKind] = [.domain, .path, .sameSite, .maxAge, .expires]
        let flags: [CookieAttributeKind] = [.secure, .httpOnly, .partitioned]
        var generator = SplitMix64(seed: 6265)
        for line in lines {
            var cookie = SetCookie(line)
            for _ in 0..<200 {
                let r = Int(generator.next() % 100)
                let kind = kinds[Int(generator.next() % UInt64(kinds.count))]
                let flag = flags[Int(generator.next() % UInt64(flags.count))]
                let value = values[Int(generator.next() % UInt64(values.count))]
                switch r {
                case 0..<40: try cookie.set(kind, to: value)
                case 40..<55: try cookie.set(kind, toBytes: Array(value.utf8))
                case 55..<75: cookie.setFlag(flag, generator.next() % 2 == 0)
                case 75..<88: cookie.remove(kind)
                case 88..<94:
                    let before = cookie.lastWrittenValue(of: .domain)
                    cookie.addLeadingDotToDomain()
                    if let before, let first = before.first, first != 0x2E {
                        #expect(cookie.lastWrittenValue(of: .domain).map(Array.init) == [0x2E] + before)
                    }
                default: try cookie.setValue(value.trimmingSpaces)
                }
                let fresh = SetCookie(bytes: cookie.bytes)
                #expect(cookie.writtenAttributes == fresh.writtenAttributes, "after editing: \(cookie)")
                #expect(cookie.attributes == fresh.attributes)
                #expect(cookie.name == fresh.name && cookie.value == fresh.value && cookie.problem == fresh.problem)
            }
        }
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(decoding: Array(utf8).drop { $0 == 0x20 }.reversed().drop { $0 == 0x20 }.reversed(), as: UTF8.self)
    }
}

@Suite struct FoldedLineSplitterTests {
    @Test(arguments: [
        ("a=1, b=2", ["a=1", "b=2"]),
        (
            "a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT, b=2; Path=/",
            ["a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT", "b=2; Path=/"]
        ),
        ("a=1; expires=Wednesday, 09-Jun-21 10:18:14 GMT", ["a=1; expires=Wednesday, 09-Jun-21 10:18:14 GMT"]),
        ("a=x,y; Path=/", ["a=x,y; Path=/"]),  // comma not followed by name=
        ("a=1,b=2,c", ["a=1", "b=2,c"]),
        ("", []),
    ])
    func splitsOnlyBeforeANewNameAndNeverInsideExpires(_ line: String, _ expected: [String]) {
        #expect(SetCookie.splitFolded(line) == expected)
    }
}
