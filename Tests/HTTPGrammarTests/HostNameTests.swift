import HTTPGrammar
import Testing

@Suite struct HostNameTests {
    @Test(arguments: [
        ("example.com", HostName.Kind.dnsName), ("localhost", .dnsName), ("my_service.local", .dnsName),
        ("a-b.c", .dnsName), ("xn--bcher-kva.example", .dnsName), ("1.example", .dnsName), ("example.123a", .dnsName),
        ("127.0.0.1", .ipv4), ("0.0.0.0", .ipv4), ("255.255.255.255", .ipv4), ("10.0.0.10", .ipv4),
        ("::1", .ipv6), ("::", .ipv6), ("fe80::1", .ipv6), ("2001:db8::8a2e:370:7334", .ipv6),
        ("1:2:3:4:5:6:7:8", .ipv6), ("::ffff:127.0.0.1", .ipv6), ("1::", .ipv6), ("1:2:3:4:5:6::8", .ipv6),
        ("1:2:3:4:5:6:1.2.3.4", .ipv6),
    ])
    func hostsOfTheGrammarAreRecognised(_ host: String, _ kind: HostName.Kind) {
        #expect(HostName.kind(host) == kind)
    }

    /// Each of these is read as another host by some resolver, URL parser or certificate syntax.
    @Test(arguments: [
        "", ".", "a..b", ".a", "-a.b", "a-.b", "a b", "a,b", "a,DNS:evil.example", "a/b", "a@b", "a%2eb", "a\\b",
        "127.1", "0x7f.0.0.1", "2130706433", "017700000001", "010.0.0.1", "256.0.0.1", "1.2.3.4.5", "1.2.3.",
        "example.0x1f",
        "a.b.123", "1:2:3:4:5:6:7:8:9", "1::2::3", ":1", "1:", "12345::", "::1%eth0", "fe80::1%25eth0",
        "::ffff:256.0.0.1", "1:2:3:4:5:6:7:1.2.3.4", "[::1]", "g::1", String(repeating: "a", count: 64) + ".com",
        String(repeating: "abcdefgh.", count: 30) + "com", "é.example", "a\u{0}b",
    ])
    func hostsOutsideTheGrammarAreRefused(_ host: String) {
        #expect(HostName.kind(host) == nil)
    }

    /// A byte sweep: which single bytes may stand in a DNS label.
    @Test func labelBytesAreLettersDigitsHyphenAndUnderscore() {
        for b in 0...255 {
            let byte = UInt8(b)
            // A dot splits the label in two, which is a name as well.
            let allowed =
                (byte | 0x20) &- 0x61 < 26 || byte &- 0x30 < 10 || byte == 0x2D || byte == 0x5F || byte == 0x2E
            let name: [UInt8] = [0x61, byte, 0x61, 0x2E, 0x63, 0x6F, 0x6D]
            #expect(HostName.isDNSName(name) == allowed, "byte \(b)")
        }
    }
}

@Suite struct ByteClassTests {
    /// RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
    /// / DIGIT / ALPHA. Checked for every byte value against the grammar written out.
    @Test func tokenCharactersAreExactlyTheRFCSet() {
        let grammar = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
        for byte in UInt8.min...UInt8.max {
            #expect(ByteClass.isTokenChar(byte) == grammar.contains(byte), "byte 0x\(String(byte, radix: 16))")
        }
    }
}
