@testable import CookieKit
import Testing

/// Host parsing of IP hosts as the URL Standard does it (cases from its IPv4 and IPv6 parser sections and
/// web-platform-tests' url/resources/urltestdata.json).
@Suite struct IPHostTests {
    @Test(arguments: [
        ("[::1]", IPHost.Parsed.ip("::1")), ("[0:0::1]", .ip("::1")), ("[0:0:0:0:0:0:0:1]", .ip("::1")),
        ("[1:0::]", .ip("1::")), ("[::]", .ip("::")), ("[2001:DB8::8A2E:370:7334]", .ip("2001:db8::8a2e:370:7334")),
        ("[1:0:0:2:0:0:0:3]", .ip("1:0:0:2::3")), ("[1:0:0:2:0:0:3:4]", .ip("1::2:0:0:3:4")),
        ("[::ffff:127.0.0.1]", .ip("::ffff:7f00:1")), ("[::127.0.0.1]", .ip("::7f00:1")),
        ("127.0.0.1", .ip("127.0.0.1")), ("127.1", .ip("127.0.0.1")), ("0x7f.0.0.1", .ip("127.0.0.1")),
        ("0177.0.0.1", .ip("127.0.0.1")), ("2130706433", .ip("127.0.0.1")), ("127.0.0.1.", .ip("127.0.0.1")),
        ("0x7F000001", .ip("127.0.0.1")), ("192.168.257", .ip("192.168.1.1")), ("0", .ip("0.0.0.0")),
        ("0x", .ip("0.0.0.0")), ("0x.0X.0.0x", .ip("0.0.0.0")), ("00.0.0.0", .ip("0.0.0.0")), ("1.2.3", .ip("1.2.0.3")),
        ("255.255.255.255", .ip("255.255.255.255")), ("10.0.0.010", .ip("10.0.0.8")), ("1.65535", .ip("1.0.255.255")),
        ("9.99.100.200", .ip("9.99.100.200")), ("1.2.3.4..", .domain("1.2.3.4..")), (".", .domain(".")),
        ("example.com", .domain("example.com")), ("1.example", .domain("1.example")), ("a.0xg", .domain("a.0xg")),
    ])
    func ipHostsParseToTheirSerialisedForm(_ host: String, _ expected: IPHost.Parsed) {
        #expect(IPHost.parse(host) == expected)
    }

    @Test(arguments: [
        "[1:2]", "[::1::2]", "[1:2:3:4:5:6:7:8:9]", "[::1%eth0]", "[:1]", "[1:]", "[12345::]", "[::1.2.3]",
        "[::1.2.3.04]", "[::256.0.0.1]", "[]", "::1", "1:2", "256.0.0.0.0", "1.2.3.4.5", "4294967296", "0x100000000",
        "1.256.0.256", "08.0.0.1", "example.09", "192.168.0.257",
        "1..2", ".1", "1.2.3.0x100", "1.0xg.1", "1.65536.1",
    ])
    func hostsThatFailHostParsingAreInvalid(_ host: String) {
        guard case .invalid = IPHost.parse(host) else {
            Issue.record("\(host) parsed as \(IPHost.parse(host))")
            return
        }
    }

    @Test func requestHostsAreCompared() {
        #expect(RequestURL("http://[0:0::1]:8080/p")?.host == "::1")
        #expect(RequestURL("http://0x7f.1/")?.host == "127.0.0.1")
        #expect(RequestURL("http://1.2.3.4.5/") == nil)
        #expect(RequestURL(scheme: "http", host: "0:0::1", path: "/").host == "::1")
    }
}
