import HTTPHeads
import Testing

@testable import ProxyCore

/// The head parser reads a field name eight bytes at a time while every byte is a letter, a digit or `-` (exact
/// SWAR range tests); these tests hold where it ends the name and whether it calls the name a token to RFC 9110
/// §5.6.2 and RFC 9112 §5.1 read one byte at a time, written out plainly here.
@Suite struct FieldNameScanTests {
    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    static func isTchar(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
            || Array("!#$%&'*+-.^_`|~".utf8).contains(c)
    }

    /// The first colon before `end`, and whether every byte before it is a tchar.
    static func reference(_ b: [UInt8], _ start: Int, _ end: Int) -> (Int, Bool) {
        let colon = b[start..<end].firstIndex(of: 0x3A) ?? end
        return (colon, b[start..<colon].allSatisfy(isTchar))
    }

    static func scan(_ b: [UInt8], _ start: Int, _ end: Int) -> (Int, Bool) {
        b.withUnsafeBufferPointer { HTTPHeadParser.scanName($0, from: start, to: end) }
    }

    /// Bytes a name is made of, and the neighbours of every range the fast path tests (`/` `@` `[` `` ` `` `{`
    /// around the digits and letters, `,` `.` around `-`, `9`+1 and `;` around `:`), whitespace, controls, DEL and
    /// bytes with the high bit (on which the range tests do not hold).
    static let alphabet: [UInt8] =
        Array("abcxyzABCXYZ0189-".utf8) + Array("!#$%&'*+.^_`|~".utf8)
        + [
            0x2F, 0x40, 0x5B, 0x60, 0x7B, 0x2C, 0x2E, 0x3B, 0x3A, 0x3A, 0x20, 0x09, 0x00, 0x0D, 0x7F, 0x80, 0xC1, 0xE1,
            0xFF,
        ]

    /// Random names and values (the framing tests' deterministic generator: failures reproduce): mostly common
    /// bytes (so the word loop runs), now and then one from the rest, at every offset and length a word can
    /// straddle.
    @Test func everyNameEndsAndIsJudgedAsByteByByte() {
        var random = MessageGenerator(seed: 20_261_203)
        for _ in 0..<20000 {
            let length = 1 + random.next(40)
            let rare = random.next(4)  // 0: only common bytes before a colon
            var b: [UInt8] = (0..<length).map { _ in
                rare > 0 && random.next(12) == 0
                    ? Self.alphabet[random.next(Self.alphabet.count)] : Self.alphabet[random.next(17)]
            }
            if random.next(3) > 0 { b.insert(0x3A, at: random.next(b.count + 1)) }
            let start = random.next(min(b.count, 9))
            let end = start + random.next(b.count - start + 1)
            let (scanned, reference) = (Self.scan(b, start, end), Self.reference(b, start, end))
            #expect(scanned == reference, "\(b) from \(start) to \(end)")
            if scanned != reference { return }
        }
    }

    /// Each byte value, alone and in every position of a name of common bytes ending in a colon.
    @Test func eachByteValueInEachPositionOfAWord() {
        for value in 0...255 {
            for at in 0..<17 {
                var b = Array("Content-Security-Policy".utf8.prefix(17))
                b[at] = UInt8(value)
                b += Array(": x".utf8)
                #expect(Self.scan(b, 0, b.count) == Self.reference(b, 0, b.count), "byte \(value) at \(at)")
            }
        }
    }
}

/// The field names the proxy acts on are recognised in any ASCII case, wherever the name lies in the head (its
/// bytes read as words, or byte by byte at the buffer's end), and no other name is taken for one of them.
@Suite struct KnownFieldTests {
    static let known: [(String, KnownField)] = [
        ("te", .te), ("host", .host), ("cookie", .cookie), ("upgrade", .upgrade), ("set-cookie", .setCookie),
        ("connection", .connection), ("keep-alive", .keepAlive), ("content-length", .contentLength),
        ("proxy-connection", .proxyConnection), ("transfer-encoding", .transferEncoding),
        ("proxy-authorization", .proxyAuthorization), ("origin", .origin), ("referer", .referer), ("accept", .accept),
        ("sec-fetch-site", .secFetchSite), ("sec-fetch-dest", .secFetchDest), ("sec-fetch-mode", .secFetchMode),
    ]

    /// `name` classified where it is followed by a colon and a value (word loads) and where it ends the buffer.
    static func classified(_ name: [UInt8]) -> [KnownField] {
        [name + Array(": value\r\n".utf8), name].map { line in
            line.withUnsafeBufferPointer { KnownField.classify($0, 0, name.count) }
        }
            + [(Array("X: y\r\n".utf8) + name + Array(":".utf8))].map { line in
                line.withUnsafeBufferPointer { KnownField.classify($0, 6, 6 + name.count) }
            }
    }

    @Test(arguments: known)
    func aKnownNameInAnyCaseIsRecognised(name: String, field: KnownField) {
        let lower = Array(name.utf8)
        let upper = lower.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
        let mixed = lower.enumerated().map { $0.offset % 2 == 0 ? upper[$0.offset] : $0.element }
        for spelling in [lower, upper, mixed] {
            #expect(Self.classified(spelling) == [field, field, field], "\(String(decoding: spelling, as: UTF8.self))")
        }
        #expect(KnownField(name: name) == field)
        #expect(field.lowercaseName == name)
    }

    /// Every one-byte change of a known name (to each other token byte), and the name with a byte more or less, is
    /// some other field.
    @Test(arguments: known)
    func anyOtherNameIsOther(name: String, field: KnownField) {
        let bytes = Array(name.utf8)
        let tokens = (0x21...0x7E).map(UInt8.init).filter { FieldNameScanTests.isTchar($0) }
        for at in bytes.indices {
            for byte in tokens where byte | 0x20 != bytes[at] | 0x20 {
                var changed = bytes
                changed[at] = byte
                #expect(Self.classified(changed) == [.other, .other, .other], "\(changed) for \(name)")
            }
        }
        for changed in [bytes + [0x73], Array(bytes.dropLast()), Array(bytes.dropFirst()), [0x78] + bytes] {
            #expect(!Self.classified(changed).contains(field), "\(changed)")
        }
    }

    /// A head knows which known fields it has (the bits its lookups skip by), and an outgoing head counts the
    /// lines written to it: a known field written is found and removed like a received one.
    @Test(arguments: known)
    func aHeadKnowsWhichKnownFieldsItHas(name: String, field: KnownField) throws {
        let parser = HTTPHeadParser()
        let head = try parser.parseHead(Array("HTTP/1.1 200 OK\r\nX-A: 1\r\n\(name): v\r\nX-B: 2\r\n\r\n".utf8))
        for other in Self.known.map(\.1) { #expect(head.has(other) == (other == field), "\(other)") }
        let built = HTTPHead(bytes: head.bytes, startLine: head.startLine, fields: head.fields)
        #expect(built.knownFields == head.knownFields)
        let without = try parser.parseHead(Array("HTTP/1.1 200 OK\r\nX-A: 1\r\nX-B: 2\r\n\r\n".utf8))
        #expect(!without.has(field))
        var out = OutgoingHead(without)
        #expect(out.indices(of: field).isEmpty)
        out.append(name: name.uppercased(), value: Array("w".utf8))
        #expect(out.indices(of: field) == [2])
        out.removeAll(field)
        #expect(out.count == 2)
    }
}
