/// A pull reader of JSON text (RFC 8259) from a byte source read a block at a time, so that a document larger than
/// memory can be walked: the caller reads the structure it expects (``readObject(_:_:)``, ``readArray(_:_:)``),
/// skips what it does not need (``skipValue(_:)``) and builds trees only of the parts it keeps (``readValue(_:)``).
/// Every error names where in the document it is, as a path (`log.entries[3].request`) and a byte offset.
public struct JSONReader {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var offset: Int
        public var message: String
        public var description: String { "\(path.isEmpty ? "$" : path) (byte \(offset)): \(message)" }
        public init(path: String, offset: Int, message: String) {
            (self.path, self.offset, self.message) = (path, offset, message)
        }
    }

    /// Fills the buffer it is given; returns how many bytes it wrote, 0 at the end.
    public typealias Source = (UnsafeMutableBufferPointer<UInt8>) -> Int

    private let source: Source
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var consumed = 0
    private var ended = false
    /// Nesting allowed before the document is refused (a HAR is a few levels deep).
    public var maximumDepth = 64
    private var depth = 0

    public init(blockSize: Int = 1 << 20, source: @escaping Source) {
        self.source = source
        buffer = [UInt8](repeating: 0, count: max(16, blockSize))
    }

    /// A reader over bytes already in memory.
    public init(bytes: [UInt8]) {
        var offset = 0
        self.init(blockSize: 1 << 16) { out in
            let n = min(out.count, bytes.count - offset)
            for i in 0..<n { out[i] = bytes[offset + i] }
            offset += n
            return n
        }
    }

    /// Bytes read so far.
    public var offset: Int { consumed + start }

    private mutating func refill() -> Bool {
        guard !ended else { return false }
        if start > 0 {
            buffer.replaceSubrange(0..<(end - start), with: buffer[start..<end])
            consumed += start
            end -= start
            start = 0
        }
        if end == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
        let n = buffer.withUnsafeMutableBufferPointer { b in source(UnsafeMutableBufferPointer(rebasing: b[end...])) }
        if n <= 0 {
            ended = true
            return false
        }
        end += n
        return true
    }

    private mutating func peek() -> UInt8? {
        if start == end && !refill() { return nil }
        return buffer[start]
    }

    private mutating func next() -> UInt8? {
        guard let b = peek() else { return nil }
        start += 1
        return b
    }

    /// A failure at the current offset (for a reader of a structure that finds what it read is not what it expects).
    public func fail(_ path: String, _ message: String) -> Failure {
        Failure(path: path, offset: offset, message: message)
    }

    private mutating func skipSpace() {
        while let b = peek(), b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { start += 1 }
    }

    private mutating func expect(_ byte: UInt8, _ path: String, _ what: String) throws(Failure) {
        skipSpace()
        guard let b = next() else { throw fail(path, "the document ends where \(what) was expected (truncated?)") }
        guard b == byte else { throw fail(path, "expected \(what), found '\(Self.show(b))'") }
    }

    static func show(_ b: UInt8) -> String {
        b >= 0x20 && b < 0x7F ? String(UnicodeScalar(b)) : "0x\(String(b, radix: 16))"
    }

    /// The kind of the next value, without reading it: `{`, `[`, `"`, or the first byte of a literal.
    public mutating func peekKind(_ path: String) throws(Failure) -> UInt8 {
        skipSpace()
        guard let b = peek() else { throw fail(path, "the document ends where a value was expected (truncated?)") }
        return b
    }

    /// Reads an object, calling `body` with each key (the reader positioned at its value, which `body` must read
    /// or skip).
    public mutating func readObject(_ path: String, _ body: (inout JSONReader, String) throws(Failure) -> Void)
        throws(Failure)
    {
        try expect(0x7B, path, "an object")
        try enter(path)
        defer { depth -= 1 }
        skipSpace()
        if peek() == 0x7D {
            start += 1
            return
        }
        while true {
            skipSpace()
            guard peek() == 0x22 else {
                throw peek() == nil
                    ? fail(path, "the document ends inside an object (truncated?)")
                    : fail(path, "expected a key, found '\(Self.show(peek()!))'")
            }
            let key = try readString(path)
            try expect(0x3A, path.isEmpty ? key : path + "." + key, "':'")
            try body(&self, key)
            skipSpace()
            guard let b = next() else { throw fail(path, "the document ends inside an object (truncated?)") }
            if b == 0x7D { return }
            guard b == 0x2C else { throw fail(path, "expected ',' or '}', found '\(Self.show(b))'") }
        }
    }

    /// Reads an array, calling `body` with each index (the reader positioned at the element).
    public mutating func readArray(_ path: String, _ body: (inout JSONReader, Int) throws(Failure) -> Void)
        throws(Failure)
    {
        try expect(0x5B, path, "an array")
        try enter(path)
        defer { depth -= 1 }
        skipSpace()
        if peek() == 0x5D {
            start += 1
            return
        }
        var index = 0
        while true {
            try body(&self, index)
            index += 1
            skipSpace()
            guard let b = next() else { throw fail(path, "the document ends inside an array (truncated?)") }
            if b == 0x5D { return }
            guard b == 0x2C else { throw fail(path, "expected ',' or ']', found '\(Self.show(b))'") }
        }
    }

    private mutating func enter(_ path: String) throws(Failure) {
        depth += 1
        if depth > maximumDepth { throw fail(path, "nested more than \(maximumDepth) levels") }
    }

    /// Reads a string (RFC 8259 §7: escapes, surrogate pairs; an unpaired surrogate becomes U+FFFD).
    public mutating func readString(_ path: String) throws(Failure) -> String {
        try expect(0x22, path, "a string")
        var out: [UInt8] = []
        while true {
            guard let b = next() else { throw fail(path, "the document ends inside a string (truncated?)") }
            if b == 0x22 { break }
            if b < 0x20 { throw fail(path, "a control character (0x\(String(b, radix: 16))) inside a string") }
            guard b == 0x5C else {
                out.append(b)
                continue
            }
            guard let e = next() else { throw fail(path, "the document ends inside a string (truncated?)") }
            switch e {
            case 0x22, 0x5C, 0x2F: out.append(e)
            case 0x62: out.append(0x08)
            case 0x66: out.append(0x0C)
            case 0x6E: out.append(0x0A)
            case 0x72: out.append(0x0D)
            case 0x74: out.append(0x09)
            case 0x75:
                var scalar = try hex4(path)
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    // A high surrogate: its low half should follow as another \u escape.
                    if peek() == 0x5C {
                        start += 1
                        guard next() == 0x75 else { throw fail(path, "a bad escape after a surrogate") }
                        let low = try hex4(path)
                        scalar =
                            low >= 0xDC00 && low < 0xE000
                            ? 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00) : 0xFFFD
                    } else {
                        scalar = 0xFFFD
                    }
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    scalar = 0xFFFD
                }
                out.append(contentsOf: Array(String(UnicodeScalar(scalar) ?? "\u{FFFD}").utf8))
            default: throw fail(path, "a bad escape '\\\(Self.show(e))' in a string")
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private mutating func hex4(_ path: String) throws(Failure) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let h = next() else { throw fail(path, "the document ends inside a string (truncated?)") }
            let d: UInt32
            switch h {
            case 0x30...0x39: d = UInt32(h - 0x30)
            case 0x41...0x46: d = UInt32(h - 0x41 + 10)
            case 0x61...0x66: d = UInt32(h - 0x61 + 10)
            default: throw fail(path, "a bad \\u escape")
            }
            v = v << 4 | d
        }
        return v
    }

    /// Reads any value into a tree.
    public mutating func readValue(_ path: String) throws(Failure) -> JSONValue {
        switch try peekKind(path) {
        case 0x7B:
            var fields: [(String, JSONValue)] = []
            try readObject(path) { (r: inout JSONReader, key: String) throws(Failure) in
                fields.append((key, try r.readValue(path.isEmpty ? key : path + "." + key)))
            }
            return .object(fields)
        case 0x5B:
            var items: [JSONValue] = []
            try readArray(path) { (r: inout JSONReader, i: Int) throws(Failure) in
                items.append(try r.readValue("\(path)[\(i)]"))
            }
            return .array(items)
        case 0x22: return .string(try readString(path))
        default: return try readLiteral(path)
        }
    }

    /// Skips any value (nothing is kept).
    public mutating func skipValue(_ path: String) throws(Failure) {
        switch try peekKind(path) {
        case 0x7B:
            try readObject(path) { (r: inout JSONReader, key: String) throws(Failure) in
                try r.skipValue(path.isEmpty ? key : path + "." + key)
            }
        case 0x5B:
            try readArray(path) { (r: inout JSONReader, i: Int) throws(Failure) in try r.skipValue("\(path)[\(i)]") }
        case 0x22: _ = try readString(path)
        default: _ = try readLiteral(path)
        }
    }

    /// `true`, `false`, `null` or a number (RFC 8259 §6).
    private mutating func readLiteral(_ path: String) throws(Failure) -> JSONValue {
        var text: [UInt8] = []
        while let b = peek(),
            b == 0x2D || b == 0x2B || b == 0x2E || (b | 0x20) == 0x65 || b &- 0x30 < 10 || b &- 0x61 < 26
        {
            text.append(b)
            start += 1
        }
        let s = String(decoding: text, as: UTF8.self)
        switch s {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default:
            let grammar = s.utf8.first.map { $0 == 0x2D || $0 &- 0x30 < 10 } ?? false
            if grammar, let i = Int64(s) { return .int(i) }
            if grammar, let d = Double(s), d.isFinite { return .double(d) }
            if s.isEmpty, let b = peek() { throw fail(path, "expected a value, found '\(Self.show(b))'") }
            if s.isEmpty { throw fail(path, "the document ends where a value was expected (truncated?)") }
            throw fail(path, "'\(s)' is not a JSON value")
        }
    }

    /// After the document's value: only whitespace may follow.
    public mutating func finish() throws(Failure) {
        skipSpace()
        if let b = peek() { throw fail("", "unexpected '\(Self.show(b))' after the document") }
    }
}

extension JSONValue {
    /// An object's value for `key` (the first).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let fields) = self else { return nil }
        return fields.first { $0.0 == key }?.1
    }
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var int: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d == d.rounded() && abs(d) < 9e18: return Int64(d)
        default: return nil
        }
    }
}
