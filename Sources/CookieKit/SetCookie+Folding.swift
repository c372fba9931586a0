extension SetCookie {
    /// Splits a legacy comma-folded line (`a=1; Path=/, b=2; Expires=Wed, 09 Jun 2021 10:18:14 GMT`) into
    /// its Set-Cookie values. Opt-in only: RFC 6265bis §3 says origin servers SHOULD NOT fold Set-Cookie
    /// (RFC 9110 §5.3), and a proxy never splits or joins on its own. A comma splits only when what follows
    /// it is a new `name=` (a token then `=`), and never inside an Expires value.
    public static func splitFolded(_ line: String) -> [String] {
        let b = Array(line.utf8)
        var pieces: [String] = []
        var pieceStart = 0
        var avStart = 0  // start of the current segment (name-value-pair or cookie-av)
        var i = 0
        while i < b.count {
            let byte = b[i]
            if byte == 0x3B {
                avStart = i + 1
            } else if byte == 0x2C && !insideExpires(b, avStart, i) && startsNewCookie(b, i + 1) {
                pieces.append(trimmedString(b, pieceStart, i))
                pieceStart = i + 1
                avStart = i + 1
            }
            i += 1
        }
        pieces.append(trimmedString(b, pieceStart, b.count))
        return pieces.filter { !$0.isEmpty }
    }

    /// Whether the segment `[start, comma)` is `Expires=` followed by a weekday name only (`Wed`).
    private static func insideExpires(_ b: [UInt8], _ start: Int, _ comma: Int) -> Bool {
        var s = start
        while s < comma && ASCII.isWSP(b[s]) { s += 1 }
        guard comma - s >= 8, ASCII.hasPrefixIgnoringCase(b[s..<s + 7], "expires") else { return false }
        var k = s + 7
        while k < comma && ASCII.isWSP(b[k]) { k += 1 }
        guard k < comma, b[k] == 0x3D else { return false }
        k += 1
        while k < comma && ASCII.isWSP(b[k]) { k += 1 }
        return b[k..<comma].allSatisfy(ASCII.isAlpha)
    }

    /// Whether `b[from...]` is optional whitespace, a token and `=`.
    private static func startsNewCookie(_ b: [UInt8], _ from: Int) -> Bool {
        var k = from
        while k < b.count && ASCII.isWSP(b[k]) { k += 1 }
        let nameStart = k
        while k < b.count && ASCII.isTokenChar(b[k]) { k += 1 }
        return k > nameStart && k < b.count && b[k] == 0x3D
    }

    private static func trimmedString(_ b: [UInt8], _ start: Int, _ end: Int) -> String {
        var s = start
        var e = end
        while s < e && ASCII.isWSP(b[s]) { s += 1 }
        while e > s && ASCII.isWSP(b[e - 1]) { e -= 1 }
        return String(lossy: b[s..<e])
    }
}
