/// A JSON value with ordered object keys, for output whose key order is part of its contract
/// (`cookie-proxy parse`, the transformation log). Writing only; compact, one line.
public enum JSONValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(_ string: String?) { self = string.map { .string($0) } ?? .null }
    public init(_ int: Int64?) { self = int.map { .int($0) } ?? .null }

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.serialized == b.serialized }
    public func hash(into hasher: inout Hasher) { hasher.combine(serialized) }

    /// Compact JSON text (RFC 8259), strings escaped, non-ASCII kept as UTF-8.
    public var serialized: String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the JSON text as UTF-8 bytes. The text is written into memory of its own with plain copies and
    /// appended to `out` once (an Array append costs about a hundred instructions, and a log record is ~150 of
    /// them: keys, values, punctuation).
    public func write(to out: inout [UInt8]) {
        var writer = ByteWriter(capacity: 512)
        write(to: &writer)
        writer.withElements { out.append(contentsOf: $0) }
    }

    func write(to out: inout ByteWriter) {
        switch self {
        case .null: out.append("null")
        case .bool(let b): out.append(b ? "true" : "false")
        case .int(let i): out.appendDecimal(i)
        case .double(let d): out.append(d.isFinite ? String(d) : "null")
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let items):
            out.append(0x5B)
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(0x2C) }
                item.write(to: &out)
            }
            out.append(0x5D)
        case .object(let pairs):
            out.append(0x7B)
            for (i, (key, value)) in pairs.enumerated() {
                if i > 0 { out.append(0x2C) }
                Self.writeString(key, to: &out)
                out.append(0x3A)
                value.write(to: &out)
            }
            out.append(0x7D)
        }
    }

    static func writeString(_ s: String, to out: inout ByteWriter) {
        out.append(0x22)
        var s = s
        s.withUTF8 { writeEscaped($0, to: &out) }
        out.append(0x22)
    }

    /// Whether any of a word's eight bytes needs a JSON escape: a byte below 0x20, '"', '\\' or DEL (a zero byte of
    /// the word XORed with each of them); a false alarm only sends the word to the byte loop.
    @inline(__always)
    static func mayNeedEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = w ^ (0x22 &* ones)
        let backslash = w ^ (0x5C &* ones)
        let del = w ^ (0x7F &* ones)
        let hit =
            ((w &- 0x20 &* ones) & ~w) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            | ((del &- ones) & ~del)
        return hit & 0x8080_8080_8080_8080 != 0
    }

    /// Appends `bytes` with JSON escapes, copying unescaped runs in one go. Nearly every string needs none: it is
    /// checked eight bytes at a time (its last few bytes in a word padded with `A`), and appended whole.
    static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout ByteWriter) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var i = 0
        while i + 8 <= count && !mayNeedEscape(UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) { i += 8 }
        if i + 8 > count {
            var tail: UInt64 = 0x4141_4141_4141_4141
            withUnsafeMutableBytes(of: &tail) { $0.baseAddress!.copyMemory(from: base + i, byteCount: count - i) }
            if !mayNeedEscape(tail) { return out.append(bytes) }
        }
        var runStart = 0
        while i < count {
            // Eight bytes at a time while none needs an escape.
            if i + 8 <= count && !mayNeedEscape(UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) {
                i += 8
                continue
            }
            let b = bytes[i]
            if b >= 0x20 && b != 0x22 && b != 0x5C && b != 0x7F {
                i += 1
                continue
            }
            if i > runStart { out.append(UnsafeBufferPointer(rebasing: bytes[runStart..<i])) }
            runStart = i + 1
            switch b {
            case 0x22: out.append("\\\"")
            case 0x5C: out.append("\\\\")
            case 0x0A: out.append("\\n")
            case 0x0D: out.append("\\r")
            case 0x09: out.append("\\t")
            default:
                let hex: StaticString = "0123456789abcdef"
                out.append("\\u00")
                out.append(hex.utf8Start[Int(b >> 4)])
                out.append(hex.utf8Start[Int(b & 0xF)])
            }
            i += 1
        }
        if count > runStart { out.append(UnsafeBufferPointer(rebasing: bytes[runStart..<count])) }
    }
}
