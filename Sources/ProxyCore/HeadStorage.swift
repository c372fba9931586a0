import HTTPHeads

/// The storage heads are parsed and rewritten into — the received head's bytes, its field list, the outgoing line
/// list and the buffer of the lines the proxy writes — kept from one head to the next, so that an exchange
/// allocates none of them. One per event loop, shared by its connections (an idle connection holds none), used by
/// that loop's thread alone and by one head at a time: a head's storage is taken when it is parsed and kept again
/// once the head has been forwarded, to be reused when that head is gone.
///
/// Reuse never changes a value anyone holds: storage still referenced when it is taken again (a hook kept a copy
/// of the head) is copied on write, and the next head simply gets new storage.
public final class HeadStorage {
    private var bytes: [UInt8] = []
    private var fields: [HTTPHead.Field] = []
    private var lines: [OutgoingHead.Line] = []
    private var written: EditedLines? = nil
    /// Larger storage is let go: a rare large head does not stay allocated.
    static let maximumBytes = 16384
    static let maximumEntries = 256

    /// The hooks' stage for this loop (``ProxyHooks/makeStage()``), which every exchange of the loop goes through;
    /// made at the first use when the loop did not set it.
    public var stage: (any ExchangeStage)? = nil

    /// The loop's clock: microseconds on the monotonic clock, as the loop last read it (once per event it handles;
    /// 0 when nothing sets it). Exchanges date their steps by it (``ExchangeTimes``) without reading a clock.
    public var now: Int64 = 0

    /// ``stage``, made by `hooks` if need be.
    @inline(__always)
    func stage(_ hooks: any ProxyHooks) -> any ExchangeStage {
        if let stage { return stage }
        let made = hooks.makeStage()
        stage = made
        return made
    }

    public init() {}

    /// `source` copied into the kept byte storage.
    func bytes(copying source: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var b = Self.take(&bytes)
        b.removeAll(keepingCapacity: true)
        b.append(contentsOf: source)
        return b
    }

    /// The kept field list's storage (for ``HTTPHeadParser/parseHead(_:strictValues:fieldStorage:)``).
    func takeFields() -> [HTTPHead.Field] { Self.take(&fields) }

    /// The kept line list's storage and written-line buffer (for ``OutgoingHead/init(_:storage:)``). The buffer only
    /// when no one else holds it any more (a head a hook kept still reads it), emptied.
    func takeOutgoing() -> OutgoingHead.Storage {
        var buffer: EditedLines? = nil
        swap(&buffer, &written)
        if isKnownUniquelyReferenced(&buffer) { buffer!.removeAll() } else { buffer = nil }
        return OutgoingHead.Storage(lines: Self.take(&lines), written: buffer)
    }

    /// `kept`'s storage, `kept` left empty (so that the storage taken is the only reference to it).
    @inline(__always)
    private static func take<Element>(_ kept: inout [Element]) -> [Element] {
        var taken: [Element] = []
        swap(&taken, &kept)
        return taken
    }

    /// Keeps `head`'s bytes and fields for the next head: a reference now, storage to reuse once `head` is gone.
    func keep(_ head: HTTPHead) {
        if head.bytes.capacity <= Self.maximumBytes { bytes = head.bytes }
        if head.fields.capacity <= Self.maximumEntries { fields = head.fields }
    }

    /// Keeps `out`'s line list and written-line buffer for the next head.
    func keep(_ out: OutgoingHead) {
        if out.lines.capacity <= Self.maximumEntries { lines = out.lines }
        if let buffer = out.writtenStorage, buffer.room <= Self.maximumBytes { written = buffer }
    }
}
