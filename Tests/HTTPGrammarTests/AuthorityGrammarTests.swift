@testable import HTTPGrammar
import Testing

/// `host[:port]`, loopback names, percent-escapes and ASCII case: the shared byte grammar, as tables and sweeps.
@Suite struct AuthorityGrammarTests {
    @Test(arguments: [
        ("example.com", "example.com", nil as String?, false), ("example.com:8080", "example.com", "8080", false),
        ("example.com:", "example.com", "", false), ("[::1]", "::1", nil, true), ("[::1]:443", "::1", "443", true),
        ("[::1]:", "::1", "", true), ("::1", ":", "1", false), ("a:b:c", "a:b", "c", false), ("", "", nil, false),
        ("[]:1", "", "1", true),
    ])
    func authoritiesSplitIntoHostAndPort(_ text: String, _ host: String, _ port: String?, _ bracketed: Bool) throws {
        let split = try #require(HostPort.split(text[...]))
        #expect(split.host == host[...])
        #expect(split.port == port?[...])
        var t = text
        #expect(t.withUTF8 { HostPort.split($0)?.bracketed } == bracketed)
    }

    @Test(arguments: ["[::1", "[::1]x", "[::1]]:80", "[::1]80"])
    func unbalancedOrTrailingBracketsDoNotSplit(_ text: String) {
        #expect(HostPort.split(text[...]) == nil)
    }

    @Test(arguments: [
        ("80", 80 as Int?), ("0", 0), ("65535", 65535), ("65536", nil), ("00080", 80), ("000080", nil), ("", nil),
        ("+80", nil), ("8 0", nil), ("-1", nil), ("99999", nil),
    ])
    func portsAreOneToFiveDigitsUpTo65535(_ text: String, _ port: Int?) {
        #expect(HostPort.port(text[...]) == port)
    }

    @Test(arguments: [
        ("example.com", 80, "example.com:80"), ("::1", 443, "[::1]:443"), ("[::1]", 8, "[::1]:8"),
        ("10.0.0.1", 1, "10.0.0.1:1"),
    ])
    func hostsAndPortsAreWrittenWithIPv6InBrackets(_ host: String, _ port: Int, _ text: String) {
        #expect(HostPort.format(host, port) == text)
        #expect(HostPort.split(text[...]).map { String($0.host) } == host.trimmingBrackets)
    }

    @Test(arguments: [
        ("localhost", true), ("app.localhost", true), ("127.0.0.1", true), ("127.255.0.9", true), ("::1", true),
        ("::ffff:127.0.0.1", true), ("localhost.example", false), ("127.0.0.256", false), ("127.1", false),
        ("127.example", false), ("128.0.0.1", false), ("::2", false), ("::ffff:10.0.0.1", false), ("0.0.0.0", false),
        ("fe80::1", false), ("", false), (".localhost", true), ("xlocalhost", false), ("::1x", false),
        ("::ffff:", false),
        ("127.", false), ("::ffff:127.0.0.1x", false), ("1270.0.0.1", false), ("::ffff:127.1.2.3", true), ("::", false),
    ])
    func loopbackHostsAreKnownByOneTest(_ host: String, _ loopback: Bool) {
        #expect(HostName.isLoopback(host) == loopback)
    }

    @Test(arguments: [
        ("a%20b", PercentEncoding.Invalid.keep, false, "a b" as String?), ("a%2", .keep, false, "a%2"),
        ("a%zz", .keep, false, "a%zz"), ("%", .keep, false, "%"), ("a+b%2B", .keep, true, "a b+"),
        ("a+b", .keep, false, "a+b"), ("%+f", .keep, false, "%+f"), ("%e2%82%AC", .refuse, false, "€"),
        ("a%2", .refuse, false, nil), ("%g0", .refuse, false, nil), ("%+f", .refuse, false, nil),
    ])
    func percentEscapesDecodeOrAreKeptOrRefused(
        _ text: String, _ invalid: PercentEncoding.Invalid, _ plus: Bool, _ expected: String?
    ) {
        let decoded = PercentEncoding.decode(text.utf8, plusIsSpace: plus, invalid: invalid)
        #expect(decoded.map { String(decoding: $0, as: UTF8.self) } == expected)
    }

    /// Every byte against every byte: equal ignoring ASCII case exactly when their ASCII lowercase forms are.
    @Test func asciiCaseIsTheOnlyCaseIgnored() {
        for a in 0...255 {
            let x = UInt8(a)
            let expectedLower: UInt8 = (0x41...0x5A).contains(x) ? x + 0x20 : x
            #expect(ByteClass.lower(x) == expectedLower)
            #expect(ByteClass.lowercasedString([x]).utf8.count >= 1)
            for b in 0...255 where (0x61...0x7A).contains(b) || b >= 0x80 || b < 0x41 {
                let y = UInt8(b)
                #expect(ByteClass.equalsLowercase([x], [y]) == (expectedLower == y), "\(x) \(y)")
            }
        }
        #expect(ByteClass.lowercasedString(Array("Set-Cookie: ÄB".utf8)) == "set-cookie: Äb")
        #expect(!ByteClass.equalsLowercase(Array("ab".utf8), Array("abc".utf8)))
    }

    /// The word-at-a-time comparison (eight bytes or more) agrees with the byte-by-byte one: every byte value in
    /// every lane of a word, next to every other, and lines of 8 to 24 bytes with one byte changed anywhere.
    @Test func eightBytesAtATimeAgreeWithOneAtATime() {
        for a in 0...255 {
            for b in stride(from: 0, through: 255, by: 5) {
                for lane in 0..<8 {
                    var bytes = [UInt8](repeating: UInt8(b), count: 8)
                    bytes[lane] = UInt8(a)
                    let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    let lowered = withUnsafeBytes(of: ByteClass.lowerWord(word)) { Array($0) }
                    #expect(lowered == bytes.map(ByteClass.lower), "\(bytes)")
                }
            }
        }
        let text = Array("Domain=Sub.Example.TEST;PATH".utf8)
        for count in 8...24 {
            let line = Array(text[0..<count])
            let lower = line.map(ByteClass.lower)
            #expect(ByteClass.equalsLowercase(line, lower))
            for k in 0..<count {
                var other = lower
                other[k] ^= 0x01
                #expect(!ByteClass.equalsLowercase(line, other), "\(count) \(k)")
                other[k] = lower[k] ^ 0x20  // the other case of a letter: the lowercase side must be lowercase
                #expect(ByteClass.equalsLowercase(line, other) == (other[k] == lower[k]))
            }
        }
    }
}

extension String {
    fileprivate var trimmingBrackets: String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}

/// `--listen`, `--ui` and `--resolve` values. (text, what it reads as; nil: refused)
@Suite struct CommandLineAddressTests {
    @Test(
        arguments: [
            ("127.0.0.1:8080", "127.0.0.1 8080"), ("8081", "127.0.0.1 8081"), ("localhost:0", "127.0.0.1 0"),
            ("[::1]:8443", "::1 8443"), ("0.0.0.0:80", "0.0.0.0 80"), ("host:99999", nil), ("nonsense", nil),
        ] as [(String, String?)])
    func aListenAddressIsHostAndPortOrABarePort(_ text: String, _ read: String?) {
        #expect(HostPort.listenAddress(text).map { "\($0.0) \($0.1)" } == read)
    }

    @Test(
        arguments: [
            ("App.Test:127.0.0.1", "app.test 127.0.0.1"), ("api.test:::1", "api.test ::1"), ("app.test", nil),
            (":127.0.0.1", nil), ("app.test:not-an-ip", nil),
        ] as [(String, String?)])
    func aResolveEntryIsAHostAndANumericAddress(_ text: String, _ read: String?) {
        #expect(HostPort.resolveEntry(text).map { "\($0.host) \($0.address)" } == read)
    }
}
