import CookieKit
import Testing

@Suite struct SetCookieParsingTests {
    struct Case: Sendable, CustomStringConvertible {
        var input: String
        var name: String
        var value: String
        var attributes: [String]  // "Name=value" or "Name" as written
        var description: String { input }
    }

    static let cases: [Case] = [
        .init(input: "a=b", name: "a", value: "b", attributes: []),
        .init(input: "  a  =  b  ", name: "a", value: "b", attributes: []),
        .init(input: "foo", name: "", value: "foo", attributes: []),
        .init(input: "=foo", name: "", value: "foo", attributes: []),
        .init(input: "a=b=c", name: "a", value: "b=c", attributes: []),
        .init(input: "a=\"quoted; not\"", name: "a", value: "\"quoted", attributes: ["not\""]),
        .init(input: "a=\"q\"", name: "a", value: "\"q\"", attributes: []),
        .init(
            input: "id=1; Path=/; Domain=.Example.COM; Secure; HttpOnly; SameSite=Lax", name: "id", value: "1",
            attributes: ["Path=/", "Domain=.Example.COM", "Secure", "HttpOnly", "SameSite=Lax"]),
        .init(input: "a=b;;Secure;", name: "a", value: "b", attributes: ["", "Secure", ""]),
        .init(input: "a=b; Foo=bar; Foo=baz", name: "a", value: "b", attributes: ["Foo=bar", "Foo=baz"]),
        .init(
            input: "a=b; expires = Wed, 09 Jun 2021 10:18:14 GMT", name: "a", value: "b",
            attributes: ["expires=Wed, 09 Jun 2021 10:18:14 GMT"]),
        .init(input: "a=b;\tmax-age\t=\t10", name: "a", value: "b", attributes: ["max-age=10"]),
    ]

    @Test(arguments: cases)
    func splitsNameValueAndAttributesAsWritten(_ c: Case) {
        let cookie = SetCookie(c.input)
        #expect(cookie.name == c.name)
        #expect(cookie.value == c.value)
        #expect(cookie.writtenAttributes.map { a in a.value.map { "\(a.name)=\($0)" } ?? a.name } == c.attributes)
        #expect(cookie.description == c.input)
    }

    @Test func everyConformanceHeaderRoundTripsByteForByte() throws {
        var count = 0
        for header in try ConformanceHeaders.all() {
            let cookie = SetCookie(bytes: header)
            #expect(cookie.bytes == header)
            count += 1
        }
        #expect(count > 1000)
    }

    @Test func randomByteStringsParseWithoutCrashingAndRoundTrip() {
        var rng = SplitMix64(seed: 0x5EED_C00C_1E)
        let alphabet: [UInt8] = Array("a=; ,\"\\\t.-_/:".utf8) + [0, 0x0A, 0x0D, 0x7F, 0x80, 0xFF, 0xC3, 0xA9]
        for _ in 0..<100_000 {
            let length = Int(rng.next() % 64)
            var bytes = [UInt8]()
            bytes.reserveCapacity(length)
            for _ in 0..<length {
                let r = rng.next()
                bytes.append(
                    r & 1 == 0 ? alphabet[Int((r >> 8) % UInt64(alphabet.count))] : UInt8(truncatingIfNeeded: r >> 16))
            }
            let cookie = SetCookie(bytes: bytes)
            if cookie.bytes != bytes {
                Issue.record("round trip changed \(bytes)")
                return
            }
            _ = cookie.attributes
            _ = cookie.writtenAttributes
        }
    }

    /// RFC 6265bis §5.6 step 1: every CTL except HTAB makes the whole line ignored; no other byte does.
    @Test(arguments: 0...255)
    func controlCharactersOtherThanTabRejectTheLine(_ byte: Int) {
        let bytes = Array("a=b".utf8) + [UInt8(byte)] + Array("c; Path=/".utf8)
        let cookie = SetCookie(bytes: bytes)
        let isCTL = (byte < 0x20 && byte != 0x09) || byte == 0x7F
        #expect((cookie.problem?.code == "control-character") == isCTL)
        #expect(cookie.bytes == bytes)
    }

    @Test(
        arguments: [
            ("a=b", nil), ("=", "empty-cookie"), ("; Path=/", "empty-cookie"), ("  ", "empty-cookie"), ("foo", nil),
        ] as [(String, String?)])
    func emptyNameAndValueIsRejected(_ input: String, _ code: String?) {
        #expect(SetCookie(input).problem?.code == code)
    }

    @Test(arguments: [(4096, false), (4097, true)])
    func nameAndValueOver4096BytesAreRejected(_ total: Int, _ rejected: Bool) {
        let input = "n=" + String(repeating: "v", count: total - 1)
        #expect((SetCookie(input).problem?.code == "name-value-too-long") == rejected)
    }
}

/// Every Set-Cookie header of the conformance corpora, as bytes.
enum ConformanceHeaders {
    static func all() throws -> [[UInt8]] {
        var headers: [[UInt8]] = []
        for file in ["http-state.json", "wpt.json"] {
            let suite = try ConformanceSuiteHeaders.load("\(ConformanceTests.folder)/\(file)")
            headers += suite
        }
        return headers
    }
}

/// A small deterministic PRNG for property tests.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct ControlCharacterScanTests {
    /// The scan for forbidden control characters (RFC 6265bis §5.6 step 1) reads eight bytes at a time: a
    /// control character at every offset of a long line is found at that offset; HTAB and bytes ≥ 0x80 are not.
    @Test(arguments: [UInt8(0x00), 0x01, 0x0A, 0x0D, 0x1F, 0x7F])
    func forbiddenControlsAreFoundAtEveryOffset(_ control: UInt8) {
        let line = Array("name=value; Path=/; Domain=example.com; Max-Age=100; Secure".utf8)
        for offset in line.indices {
            var bytes = line
            bytes[offset] = control
            let cookie = SetCookie(bytes: bytes)
            #expect(cookie.problem?.code == "control-character", "offset \(offset)")
            #expect(cookie.problem?.description.contains("at byte \(offset) ") == true, "offset \(offset)")
        }
    }

    @Test(arguments: [UInt8(0x09), 0x20, 0x80, 0xC3, 0xFF])
    func tabsAndHighBytesAreNotControls(_ byte: UInt8) {
        let line = Array("name=value; Path=/; Domain=example.com; Max-Age=100; Secure".utf8)
        for offset in line.indices {
            var bytes = line
            bytes[offset] = byte
            #expect(SetCookie(bytes: bytes).problem?.code != "control-character", "offset \(offset)")
        }
    }
}
