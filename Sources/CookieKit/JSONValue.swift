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

    /// Appends the JSON text as UTF-8 bytes (the fast path: no per-character String appends).
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let b): out.append(contentsOf: b ? Array("true".utf8) : Array("false".utf8))
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d): out.append(contentsOf: (d.isFinite ? String(d) : "null").utf8)
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

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        if s.utf8.withContiguousStorageIfAvailable({ writeEscaped($0, to: &out) }) == nil {
            Array(s.utf8).withUnsafeBufferPointer { writeEscaped($0, to: &out) }
        }
        out.append(0x22)
    }

    /// Appends `bytes` with JSON escapes, copying unescaped runs in one go.
    static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var runStart = 0
        var i = 0
        let count = bytes.count
        while i < count {
            let b = bytes[i]
            if b >= 0x20 && b != 0x22 && b != 0x5C && b != 0x7F {
                i += 1
                continue
            }
            if i > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i])) }
            runStart = i + 1
            switch b {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, 0x6E])
            case 0x0D: out.append(contentsOf: [0x5C, 0x72])
            case 0x09: out.append(contentsOf: [0x5C, 0x74])
            default:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]])
            }
            i += 1
        }
        if count > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<count])) }
    }
}
