/// A growable list of plain values in memory of its own, for hot loops that make many small appends (an Array
/// append checks uniqueness and capacity through generic code: about a hundred instructions): the Set-Cookie
/// rewrite's entries and output, the JSON writer. Noncopyable: it owns its pointer. Elements are plain values
/// (no deinitialisation).
public struct GrowableBuffer<Element>: ~Copyable {
    @usableFromInline var base: UnsafeMutablePointer<Element>
    public var count = 0
    @usableFromInline var capacity: Int

    @inlinable
    public init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    @inlinable deinit { base.deallocate() }

    @inlinable @inline(__always)
    public mutating func reserve(_ n: Int) {
        if count &+ n > capacity { grow(n) }
    }

    @usableFromInline mutating func grow(_ n: Int) {
        capacity = max(2 * capacity, count + n)
        let grown = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        grown.initialize(from: base, count: count)
        base.deallocate()
        base = grown
    }

    @inlinable @inline(__always)
    public mutating func append(_ element: Element) {
        reserve(1)
        (base + count).initialize(to: element)
        count += 1
    }

    @inlinable @inline(__always)
    public mutating func append(_ elements: UnsafeBufferPointer<Element>) {
        guard let source = elements.baseAddress, elements.count > 0 else { return }
        let n = elements.count
        reserve(n)
        if MemoryLayout<Element>.stride == 1 && n <= 16 {
            // Bytes: a short run (most of a Set-Cookie's or a JSON record's pieces) in two overlapping words, not a
            // call to memcpy.
            let (from, to) = (UnsafeRawPointer(source), UnsafeMutableRawPointer(base + count))
            if n >= 8 {
                to.storeBytes(of: from.loadUnaligned(as: UInt64.self), as: UInt64.self)
                to.storeBytes(
                    of: from.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self), toByteOffset: n - 8,
                    as: UInt64.self)
            } else if n >= 4 {
                to.storeBytes(of: from.loadUnaligned(as: UInt32.self), as: UInt32.self)
                to.storeBytes(
                    of: from.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self), toByteOffset: n - 4,
                    as: UInt32.self)
            } else {
                for k in 0..<n {
                    to.storeBytes(of: from.load(fromByteOffset: k, as: UInt8.self), toByteOffset: k, as: UInt8.self)
                }
            }
        } else {
            (base + count).initialize(from: source, count: n)
        }
        count += n
    }

    @inlinable
    public subscript(index: Int) -> Element {
        get { base[index] }
        set { base[index] = newValue }
    }

    /// Forgets the elements, keeping the memory.
    @inlinable
    public mutating func removeAll() { count = 0 }

    /// The elements, valid until the next change.
    @inlinable public var elements: UnsafeBufferPointer<Element> { UnsafeBufferPointer(start: base, count: count) }

    /// The elements, for the duration of `body`.
    @inlinable
    public func withElements<R>(_ body: (UnsafeBufferPointer<Element>) -> R) -> R {
        body(elements)
    }
}

/// Bytes written by many small appends (the JSON writer, the Set-Cookie rewrite's output).
public typealias ByteWriter = GrowableBuffer<UInt8>

extension GrowableBuffer where Element == UInt8 {

    @inlinable @inline(__always)
    public mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inlinable
    public mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    /// An integer in decimal, without going through a String: its digits counted, then written from the last one
    /// straight into the buffer.
    @inlinable
    public mutating func appendDecimal(_ value: Int64) {
        if value < 0 { append(0x2D) }
        var v = value.magnitude
        var digits = 1
        var bound: UInt64 = 10
        while v >= bound && digits < 19 {
            digits &+= 1
            bound &*= 10
        }
        if v >= bound { digits = 20 }  // 10^19 ≤ v: bound would overflow
        reserve(digits)
        var at = base + count + digits
        repeat {
            at -= 1
            at.pointee = UInt8(truncatingIfNeeded: v % 10) &+ 0x30
            v /= 10
        } while v > 0
        count &+= digits
    }
}
