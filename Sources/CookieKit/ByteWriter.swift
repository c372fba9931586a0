/// Growable bytes in memory of its own, for writers that make many small appends (an Array append costs about a
/// hundred instructions): the JSON writer, the Set-Cookie rewrite's output. Noncopyable: it owns its pointer.
struct ByteWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    private mutating func reserve(_ n: Int) {
        guard count + n > capacity else { return }
        capacity = max(2 * capacity, count + n)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.initialize(from: base, count: count)
        base.deallocate()
        base = grown
    }

    mutating func append(_ byte: UInt8) {
        reserve(1)
        (base + count).initialize(to: byte)
        count += 1
    }

    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).initialize(from: source, count: bytes.count)
        count += bytes.count
    }

    mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    /// An integer in decimal, without going through a String.
    mutating func appendDecimal(_ value: Int64) {
        if value == 0 { return append(0x30) }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        var v = value.magnitude
        withUnsafeMutableBytes(of: &digits) { d in
            while v > 0 {
                d[19 - n] = UInt8(truncatingIfNeeded: v % 10) &+ 0x30
                v /= 10
                n += 1
            }
            if value < 0 { append(0x2D) }
            append(UnsafeBufferPointer(start: d.baseAddress!.assumingMemoryBound(to: UInt8.self) + 20 - n, count: n))
        }
    }

    /// Forgets what was written, keeping the memory.
    mutating func removeAll() { count = 0 }

    /// The bytes written, for the duration of `body`.
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        body(UnsafeBufferPointer(start: base, count: count))
    }
}
