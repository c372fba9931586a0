import Terminal
import Testing

@Suite struct TerminalTextTests {
    /// What a hostile site puts in a cookie name or a Location, and what the terminal is given instead.
    @Test(arguments: [
        ("plain", "plain"), ("", ""), ("é ü 日本 🍪", "é ü 日本 🍪"),
        ("\u{1B}[2J\u{1B}[H", "\\x1b[2J\\x1b[H"),  // clear the screen, cursor home
        ("\u{1B}]0;owned\u{07}", "\\x1b]0;owned\\x07"),  // window title, BEL
        ("a\u{1B}[8mhidden", "a\\x1b[8mhidden"),  // conceal
        ("ok\u{08}\u{08}no", "ok\\x08\\x08no"),  // backspace over what was written
        ("x\ry", "x\\x0dy"), ("line\nforged", "line\\x0aforged"), ("nul\u{0}", "nul\\x00"), ("del\u{7F}", "del\\x7f"),
        ("\u{9B}2J", "\\u{9b}2J"), ("next\u{85}line", "next\\u{85}line"), ("\u{80}\u{9F}", "\\u{80}\\u{9f}"),
        ("evil\u{202E}gpj.exe", "evil\\u{202e}gpj.exe"), ("\u{2066}a\u{2069}", "\\u{2066}a\\u{2069}"),
        ("a\u{2028}b\u{2029}c", "a\\u{2028}b\\u{2029}c"), ("\u{200E}\u{200F}\u{061C}", "\\u{200e}\\u{200f}\\u{61c}"),
        ("back\\x1b", "back\\\\x1b"),  // a literal backslash cannot pass for an escape
        ("tab\tkept", "tab\tkept"), ("\u{A0}\u{AD}\u{2030}", "\u{A0}\u{AD}\u{2030}"),
    ])
    func controlsAreWrittenAsEscapes(_ input: String, _ expected: String) {
        #expect(TerminalText.escape(input) == expected)
    }

    @Test func aTabIsEscapedWhereTheFormatCannotHoldOne() {
        #expect(TerminalText.escape("a\tb", keepTab: false) == "a\\x09b")
    }

    /// Bytes that are not UTF-8 are written `\xNN`: a raw 0x9B (8-bit CSI) reads back as the byte it was, apart
    /// from the scalar U+009B (`\u{9b}`).
    @Test(
        arguments: [
            ([0x61, 0x9B, 0x32, 0x4A], "a\\x9b2J"), ([0xC2, 0x9B], "\\u{9b}"), ([0xC0, 0x80], "\\xc0\\x80"),
            ([0xED, 0xA0, 0x80], "\\xed\\xa0\\x80"), ([0xE2, 0x80, 0xAE], "\\u{202e}"), ([0xE2, 0x80], "\\xe2\\x80"),
            ([0xF0, 0x9F, 0x8D, 0xAA], "🍪"), ([0xF4, 0x90, 0x80, 0x80], "\\xf4\\x90\\x80\\x80"), ([0xFF], "\\xff"),
            ([0x1B, 0x5B, 0x41], "\\x1b[A"),
        ] as [([UInt8], String)])
    func bytesThatAreNotUTF8AreWrittenAsHex(_ bytes: [UInt8], _ expected: String) {
        #expect(TerminalText.escape(bytes: bytes) == expected)
    }

    /// Every scalar below U+0800 and every single byte: what is escaped is exactly the controls, DEL, C1, `\` and
    /// the marks of the table; the rest is kept as it is.
    @Test func aSweepEscapesExactlyTheControls() {
        for v in UInt32(0)..<0x800 {
            let s = String(Unicode.Scalar(v)!)
            let escaped = TerminalText.escape(s)
            let control = v < 0x20 && v != 0x09 || v == 0x5C || (0x7F...0x9F).contains(v) || v == 0x61C
            #expect((escaped != s) == control, "U+\(String(v, radix: 16))")
            #expect(
                !escaped.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" || (0x7F...0x9F).contains($0.value) })
        }
        for b in UInt8(0)...255 {
            let escaped = TerminalText.escape(bytes: [b])
            #expect(
                escaped.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "\t" }, "byte \(b)")
        }
    }

    /// Interpolated values are escaped; the literal's own text (its line ends, the program's colours) is kept.
    @Test func interpolationEscapesTheValuesOnly() {
        let name = "sid\u{1B}[2J"
        let url = "http://a.example/\nforged line"
        var out: TerminalText = "cookie \(name) from \(url)\n"
        out += "  next\t\(42)\n"
        #expect(out.text == "cookie sid\\x1b[2J from http://a.example/\\x0aforged line\n  next\t42\n")
        let inner: TerminalText = "\(name)"
        let outer: TerminalText = "[\(inner)]"
        #expect(outer.text == "[sid\\x1b[2J]")
        #expect(TerminalText(escaping: "\u{7}").text == "\\x07")
    }
}
