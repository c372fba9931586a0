import Testing

@testable import CookieKit

/// The parse reads a line eight bytes at a time (the separators and control characters found with SWAR tests, the
/// line's last bytes read as its last word shifted down); these tests hold every position it records to RFC 6265bis
/// §5.6 read one byte at a time, written out plainly here.
@Suite struct SetCookieScanTests {
    /// The positions §5.6 gives one line: the name-value-pair's and each cookie-av's, and the problem's code.
    struct Reading: Equatable, CustomStringConvertible {
        var pair: [Int]  // pairEnd, nameStart, nameEnd, valueStart, valueEnd, has '='
        var attributes: [[Int]]  // start, end, nameStart, nameEnd, valueStart, valueEnd, has '=', kind
        var problem: String?
        var description: String { "pair \(pair) attributes \(attributes) problem \(problem ?? "none")" }
    }

    static func isWSP(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    static func trim(_ b: [UInt8], _ range: Range<Int>) -> Range<Int> {
        var (s, e) = (range.lowerBound, range.upperBound)
        while s < e && isWSP(b[s]) { s += 1 }
        while e > s && isWSP(b[e - 1]) { e -= 1 }
        return s..<e
    }

    /// §5.6 one byte at a time.
    static func reference(_ b: [UInt8]) -> Reading {
        let pairEnd = b.firstIndex(of: 0x3B) ?? b.count
        let equals = b[..<pairEnd].firstIndex(of: 0x3D)
        var name = 0..<0
        var value: Range<Int>
        if let equals {
            name = trim(b, 0..<equals)
            value = trim(b, equals + 1..<pairEnd)
        } else {
            value = trim(b, 0..<pairEnd)
            name = value.lowerBound..<value.lowerBound
        }
        var attributes: [[Int]] = []
        var position = pairEnd
        while position < b.count {
            let start = position + 1
            let end = b[start...].firstIndex(of: 0x3B) ?? b.count
            let avEquals = b[start..<end].firstIndex(of: 0x3D)
            let n = trim(b, start..<(avEquals ?? end))
            let v = avEquals.map { trim(b, $0 + 1..<end) } ?? end..<end
            let kind = CookieAttributeKind(name: String(decoding: b[n], as: UTF8.self))
            // A name that is not valid UTF-8 is none of the known ones (their names are ASCII).
            let known = String(decoding: b[n], as: UTF8.self).utf8.elementsEqual(b[n]) ? kind : .unknown
            attributes.append([
                start, end, n.lowerBound, n.upperBound, v.lowerBound, v.upperBound, avEquals == nil ? 0 : 1,
                Int(known.rawValue),
            ])
            position = end
        }
        var problem: String? = nil
        if b.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            problem = "control-character"
        } else if name.count + value.count == 0 {
            problem = "empty-cookie"
        } else if name.count + value.count > 4096 {
            problem = "name-value-too-long"
        }
        return Reading(
            pair: [
                pairEnd, name.lowerBound, name.upperBound, value.lowerBound, value.upperBound, equals == nil ? 0 : 1,
            ],
            attributes: attributes, problem: problem)
    }

    /// What the parse recorded, through the proxy's path (a view of the line where it lies).
    static func parsed(_ b: [UInt8]) -> Reading {
        var parser = SetCookieParser()
        return b.withUnsafeBufferPointer { line in
            let view = parser.parse(line)
            let p = view.pair
            return Reading(
                pair: [
                    Int(p.pairEnd), Int(p.nameStart), Int(p.nameEnd), Int(p.valueStart), Int(p.valueEnd),
                    p.pairHasEquals ? 1 : 0,
                ],
                attributes: view.spans.map { s in
                    [
                        Int(s.start), Int(s.end), Int(s.nameStart), Int(s.nameEnd), Int(s.valueStart), Int(s.valueEnd),
                        s.hasEquals ? 1 : 0, Int(s.kind.rawValue),
                    ]
                }, problem: view.problem?.code)
        }
    }

    /// Lines made of the bytes the scan tells apart, and their neighbours in the SWAR tests (`:` and `<` sit
    /// just under `;` and `=`, where a borrow can raise a false flag), at every length around the word size.
    static func randomLines(count: Int, seed: UInt64) -> [[UInt8]] {
        let alphabet: [[UInt8]] = [
            [0x3B], [0x3D], [0x20], [0x09], [0x3A], [0x3C], [0x3E], [0x00], [0x01], [0x0A], [0x7F], [0x80], [0xFF],
            Array("a".utf8), Array("Z".utf8), Array("Path".utf8), Array("Domain".utf8), Array(" Secure".utf8),
            Array("; HttpOnly".utf8), Array("SameSite".utf8), Array("max-age".utf8), Array("Partitioned".utf8),
        ]
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            var line: [UInt8] = []
            let target = Int.random(in: 0...40, using: &rng)
            while line.count < target {
                // Mostly single bytes, so every position in a word is reached.
                let piece =
                    Int.random(in: 0..<100, using: &rng) < 75
                    ? Int.random(in: 0..<13, using: &rng)
                    : Int.random(in: 13..<alphabet.count, using: &rng)
                line += alphabet[piece]
            }
            return line
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func wordAtATimeParseRecordsWhatTheByteAtATimeReadingDoes(_ seed: UInt64) {
        for line in Self.randomLines(count: 5000, seed: seed) {
            let expected = Self.reference(line)
            #expect(Self.parsed(line) == expected, "\(line)")
            // A SetCookie parses its own copy the same way.
            let cookie = SetCookie(bytes: line)
            #expect(cookie.problem?.code == expected.problem, "\(line)")
            #expect(cookie.layout.spans.count == expected.attributes.count, "\(line)")
        }
    }

    /// Each separator at every offset of lines of 1 to 24 bytes: the last word's shift covers each offset.
    @Test(arguments: [UInt8(0x3B), 0x3D, 0x09, 0x7F, 0x0A])
    func separatorsAreFoundAtEveryOffsetOfShortLines(_ byte: UInt8) {
        for length in 1...24 {
            for offset in 0..<length {
                for filler in [UInt8(0x61), 0x3D, 0x3B, 0x20] where filler != byte {
                    var line = [UInt8](repeating: filler, count: length)
                    line[offset] = byte
                    #expect(Self.parsed(line) == Self.reference(line), "\(line)")
                }
            }
        }
    }
}
