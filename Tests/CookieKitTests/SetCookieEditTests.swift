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
        ("a=b;  Domain=bin.example.com ;Path=/", .set(.domain, ".bin.example.com"), "a=b;  Domain=.bin.example.com ;Path=/"),
        ("a=b", .set(.domain, "example.com"), "a=b; Domain=example.com"),
        ("a=b;", .set(.path, "/"), "a=b; Path=/"),
        // Last one wins: the occurrence in effect is edited.
        ("a=b; Path=/x; path=/y", .set(.path, "/z"), "a=b; Path=/x; path=/z"),
        ("a=b; Domain", .set(.domain, "x.com"), "a=b; Domain=x.com"),
        ("a=b; SameSite=None", .set(.sameSite, "None"), "a=b; SameSite=None"),
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
}

@Suite struct FoldedLineSplitterTests {
    @Test(arguments: [
        ("a=1, b=2", ["a=1", "b=2"]),
        ("a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT, b=2; Path=/", ["a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT", "b=2; Path=/"]),
        ("a=1; expires=Wednesday, 09-Jun-21 10:18:14 GMT", ["a=1; expires=Wednesday, 09-Jun-21 10:18:14 GMT"]),
        ("a=x,y; Path=/", ["a=x,y; Path=/"]),  // comma not followed by name=
        ("a=1,b=2,c", ["a=1", "b=2,c"]),
        ("", []),
    ])
    func splitsOnlyBeforeANewNameAndNeverInsideExpires(_ line: String, _ expected: [String]) {
        #expect(SetCookie.splitFolded(line) == expected)
    }
}
