/// Text for a person's terminal, in which every byte a peer sent is shown, never obeyed.
///
/// A terminal acts on what it is given: ESC starts a control sequence (clear the screen, move the cursor, set the
/// window title, conceal what follows), BEL rings, BS and CR overwrite what was written, and the C1 controls do the
/// same in one byte (0x9B is CSI on a terminal that reads 8-bit controls, U+009B and U+0085 on one that reads
/// UTF-8). The Unicode controls that reorder or break lines (U+202A–U+202E, U+2066–U+2069 and the marks
/// U+200E/U+200F/U+061C; U+2028/U+2029) make a line read other than it is written ("Trojan Source", CVE-2021-42574).
/// A cookie name, a `Location` or a rule's echo of either that carried them could hide or forge log lines.
///
/// ``escape(_:keepTab:)`` is the one function that makes such text safe: each of those is written visibly and
/// reversibly, as the access log writes `\xNN` (nginx's `ngx_http_log_escape`):
///
/// | input | written |
/// |---|---|
/// | C0 controls U+0000–U+001F, DEL U+007F | `\x1b`, `\x0a`, `\x7f` (TAB kept unless asked) |
/// | C1 controls U+0080–U+009F | `\u{9b}`, `\u{85}` |
/// | bidi and line-breaking controls | `\u{202e}`, `\u{2028}` |
/// | a byte that is not UTF-8 (``escape(bytes:keepTab:)``) | `\x9b` |
/// | `\` | `\\` (so that every escape reads back one way) |
///
/// Everything else, printable non-ASCII included, is written as it is.
///
/// Text built by interpolation is escaped where it is interpolated: in `"  \(cookie.name) from \(url)\n" as
/// TerminalText` the two values are escaped and the literal's own line end is kept, so a report is written with
/// the program's words and layout as they are and every value in it as ``escape(_:keepTab:)`` writes it.
public struct TerminalText: Sendable, Equatable, CustomStringConvertible, ExpressibleByStringInterpolation {
    /// The text, safe to write to a terminal.
    public private(set) var text: String

    public init() { text = "" }

    /// A literal is the program's own text, kept as it is.
    public init(stringLiteral value: String) { text = value }

    public init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    /// Text from elsewhere (a peer, a file, a message that quotes either), escaped.
    public init(escaping value: String) { text = Self.escape(value) }

    /// Text of several lines whose line ends are the program's own (an error that quotes a line of a file, a
    /// help page): each line escaped, the line ends kept.
    public init(lines value: String) {
        text = value.split(separator: "\n", omittingEmptySubsequences: false).map { Self.escape(String($0)) }.joined(
            separator: "\n")
    }

    public var description: String { text }

    public static func += (lhs: inout TerminalText, rhs: TerminalText) { lhs.text += rhs.text }
    public static func + (lhs: TerminalText, rhs: TerminalText) -> TerminalText {
        var joined = lhs
        joined += rhs
        return joined
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) { text += literal }

        /// A value: escaped.
        public mutating func appendInterpolation<T>(_ value: T) {
            text += TerminalText.escape(String(describing: value))
        }

        /// Text of several lines of the program's own (``init(lines:)``).
        public mutating func appendInterpolation(lines value: String) { text += TerminalText(lines: value).text }

        /// An error: its description is the program's own text, of one line or several (a rules error quotes the
        /// line of the file it is about, and a caret under the column): each line escaped, the line ends kept.
        public mutating func appendInterpolation(_ error: any Error) { text += TerminalText(lines: "\(error)").text }

        /// Text already made safe: kept.
        public mutating func appendInterpolation(_ value: TerminalText) { text += value.text }
    }

    /// `text` with every control a terminal would act on written as an escape (the table above). `keepTab`: a TAB
    /// stays a TAB (it moves the cursor but hides nothing); false where a tab would break the line's columns.
    public static func escape(_ text: String, keepTab: Bool = true) -> String {
        // Nearly every text needs nothing: checked first, without building a copy.
        guard text.unicodeScalars.contains(where: { needsEscape($0, keepTab: keepTab) }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars { append(scalar, keepTab: keepTab, to: &out) }
        return out
    }

    /// `bytes` as UTF-8 text, escaped as ``escape(_:keepTab:)`` does; a byte that is not part of a valid UTF-8
    /// sequence (a raw `0x9B`, a lone continuation byte, an overlong form) is written `\xNN`, so that what a peer
    /// sent can be read back byte for byte.
    public static func escape<C: Collection<UInt8>>(bytes: C, keepTab: Bool = true) -> String {
        let b = Array(bytes)
        var out = ""
        out.reserveCapacity(b.count)
        var i = 0
        while i < b.count {
            if let (scalar, width) = scalar(in: b, at: i) {
                append(scalar, keepTab: keepTab, to: &out)
                i += width
            } else {
                appendHex(b[i], to: &out)
                i += 1
            }
        }
        return out
    }

    /// The scalar a well-formed UTF-8 sequence at `i` encodes, and its length (the Unicode Standard's Table 3-7:
    /// no overlong form, no surrogate, nothing above U+10FFFF); nil when the byte at `i` does not start one.
    static func scalar(in b: [UInt8], at i: Int) -> (Unicode.Scalar, Int)? {
        let lead = b[i]
        if lead < 0x80 { return (Unicode.Scalar(lead), 1) }
        let width: Int
        var range: ClosedRange<UInt8> = 0x80...0xBF
        var value: UInt32
        switch lead {
        case 0xC2...0xDF: (width, value) = (2, UInt32(lead & 0x1F))
        case 0xE0: (width, value, range) = (3, 0, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (width, value) = (3, UInt32(lead & 0x0F))
        case 0xED: (width, value, range) = (3, 0x0D, 0x80...0x9F)
        case 0xF0: (width, value, range) = (4, 0, 0x90...0xBF)
        case 0xF1...0xF3: (width, value) = (4, UInt32(lead & 0x07))
        case 0xF4: (width, value, range) = (4, 4, 0x80...0x8F)
        default: return nil
        }
        guard i + width <= b.count else { return nil }
        for k in 1..<width {
            let c = b[i + k]
            guard (k == 1 ? range : 0x80...0xBF).contains(c) else { return nil }
            value = value << 6 | UInt32(c & 0x3F)
        }
        return Unicode.Scalar(value).map { ($0, width) }
    }

    @inline(__always)
    static func needsEscape(_ s: Unicode.Scalar, keepTab: Bool) -> Bool {
        let v = s.value
        if v < 0x20 { return !(keepTab && v == 0x09) }
        if v < 0x7F { return v == 0x5C }
        if v <= 0x9F { return true }
        if v < 0x061C { return false }
        return v == 0x061C || v == 0x200E || v == 0x200F || (0x2028...0x202E).contains(v)
            || (0x2066...0x2069).contains(v)
    }

    static func append(_ s: Unicode.Scalar, keepTab: Bool, to out: inout String) {
        guard needsEscape(s, keepTab: keepTab) else { return out.unicodeScalars.append(s) }
        let v = s.value
        if v == 0x5C { return out += "\\\\" }
        if v < 0x80 { return appendHex(UInt8(v), to: &out) }
        out += "\\u{" + String(v, radix: 16) + "}"
    }

    static func appendHex(_ b: UInt8, to out: inout String) {
        let digits = Array("0123456789abcdef".unicodeScalars)
        out += "\\x"
        out.unicodeScalars.append(digits[Int(b >> 4)])
        out.unicodeScalars.append(digits[Int(b & 0xF)])
    }
}

extension Sequence where Element == TerminalText {
    /// The texts one after another, `separator` between each two.
    public func joined(separator: TerminalText = "") -> TerminalText {
        var out = TerminalText()
        var first = true
        for t in self {
            if !first { out += separator }
            out += t
            first = false
        }
        return out
    }
}
