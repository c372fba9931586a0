/// Byte buffers an observer keeps its waiting requests' bytes in (the inspector's heads, the access log's Referer
/// and User-Agent), by slot, beside the request's entry in a ``RequestTable``: a slot given back is taken again with
/// its memory, so a request allocates nothing once the loop has as many buffers as it has requests in flight.
public struct ByteSlots {
    @usableFromInline var buffers: [[UInt8]] = []
    @usableFromInline var free: [Int] = []

    public init() {}

    /// An empty buffer's slot: a slot given back when there is one (its memory kept), else a new one.
    @inlinable
    public mutating func take() -> Int {
        guard let slot = free.popLast() else {
            buffers.append([])
            return buffers.count - 1
        }
        buffers[slot].removeAll(keepingCapacity: true)
        return slot
    }

    /// Gives `slot` back; a buffer grown past 16 KiB lets its memory go (one large request does not keep it).
    @inlinable
    public mutating func release(_ slot: Int) {
        if buffers[slot].capacity > 16384 { buffers[slot] = [] }
        free.append(slot)
    }

    /// The bytes at `slot`.
    @inlinable
    public subscript(slot: Int) -> [UInt8] { buffers[slot] }

    /// `body` with the buffer at `slot`, to write into it in place.
    @inlinable
    public mutating func write<R>(_ slot: Int, _ body: (inout [UInt8]) -> R) -> R { body(&buffers[slot]) }
}
