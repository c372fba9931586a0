/// A growable list of plain values in memory of its own, for hot loops that make many small appends (an Array
/// append checks uniqueness and capacity through generic code: about a hundred instructions): the Set-Cookie
/// rewrite's entries and output, the JSON writer. Noncopyable: it owns its pointer. Elements are plain values
/// (no deinitialisation).
struct GrowableBuffer<Element>: ~Copyable {
    private var base: UnsafeMutablePointer<Element>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    private mutating func reserve(_ n: Int) {
        guard count + n > capacity else { return }
        capacity = max(2 * capacity, count + n)
        let grown = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        grown.initialize(from: base, count: count)
        base.deallocate()
        base = grown
    }

    mutating func append(_ element: Element) {
        reserve(1)
        (base + count).initialize(to: element)
        count += 1
    }

    mutating func append(_ elements: UnsafeBufferPointer<Element>) {
        guard let source = elements.baseAddress, elements.count > 0 else { return }
        reserve(elements.count)
        (base + count).initialize(from: source, count: elements.count)
        count += elements.count
    }

    subscript(index: Int) -> Element {
        get { base[index] }
        set { base[index] = newValue }
    }

    /// Forgets the elements, keeping the memory.
    mutating func removeAll() { count = 0 }

    /// The elements, for the duration of `body`.
    func withElements<R>(_ body: (UnsafeBufferPointer<Element>) -> R) -> R {
        body(UnsafeBufferPointer(start: base, count: count))
    }
}

/// Bytes written by many small appends (the JSON writer, the Set-Cookie rewrite's output).
typealias ByteWriter = GrowableBuffer<UInt8>

extension GrowableBuffer where Element == UInt8 {

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
}
