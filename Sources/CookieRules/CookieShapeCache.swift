#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import CookieKit

/// What the rules did to the recent cookie *shapes* — a Set-Cookie line's bytes after its name-value-pair — under
/// plans whose rules read nothing else (``RuleEngine/CookiePlan/shapeKey``: `cookie-domain` conditions; flags,
/// Domain, Path and SameSite values, a dot, removals, `log`, `drop`).
///
/// A backend sends the same cookie-avs on every response (a session cookie's value changes, its `; Path=/;
/// HttpOnly` does not), and under such a plan a line's outcome is a function of them: the rules that match (their
/// conditions read the Domain in effect), whether the line is dropped or logged, and its edited cookie-avs, which the
/// rewrite writes after the received pair unchanged. So a line whose shape is here skips the parse, the match and
/// the rewrite: its pair is found and checked, and the kept cookie-avs are written after it. A line whose pair gives a
/// user agent reason to ignore it (RFC 6265bis §5.6) is never looked up, and an outcome the rewrite made on a
/// working copy (the cases its plan does not model) is never kept.
///
/// Direct-mapped, 32 entries of at most 512 bytes (the cookie-avs as received and as edited) in one allocation per
/// thread: bounded memory, and no allocation or reference count per line. An entry is used only when its hash,
/// plan and bytes all equal the line's; the entries are dropped when the engine changes (a reload).
package struct CookieShapeCache: ~Copyable {
    private struct Entry {
        var hash: UInt64 = 0
        var plan: UInt64 = 0
        var matched: UInt64 = 0
        /// -1: no entry.
        var shapeLength: Int32 = -1
        var outputLength: Int32 = 0
        var dropped = false
        var logRequested = false
        var rewritten = false
    }

    private static let slots = 32
    private static let slotBytes = 512
    private let entries: UnsafeMutablePointer<Entry>
    /// Slot `i`'s bytes at `i * slotBytes`: the shape as received, then as edited.
    private let bytes: UnsafeMutablePointer<UInt8>
    /// The engine whose outcomes the entries are (held, so that a reloaded one is never taken for it).
    private var engine: RuleEngine? = nil
    /// Lines whose outcome was found here (for tests).
    package private(set) var hits = 0

    package init() {
        entries = .allocate(capacity: Self.slots)
        entries.initialize(repeating: Entry(), count: Self.slots)
        bytes = .allocate(capacity: Self.slots * Self.slotBytes)
    }

    deinit {
        entries.deallocate()
        bytes.deallocate()
    }

    /// The kept outcome of `shape` under `plan` and `engine`, its edited line (`pair` then the edited shape)
    /// written into `rewrite`'s output when it was rewritten; nil when there is none.
    mutating func outcome(
        _ engine: RuleEngine, plan: UInt64, shape: UnsafeBufferPointer<UInt8>, hash: UInt64,
        pair: UnsafeBufferPointer<UInt8>, rewrite: inout SetCookieRewrite
    ) -> RuleEngine.Edit? {
        if self.engine !== engine {
            for i in 0..<Self.slots { entries[i].shapeLength = -1 }
            self.engine = engine
            return nil
        }
        let slot = Self.slot(hash)
        let entry = entries[slot]
        guard entry.hash == hash, entry.plan == plan, Int(entry.shapeLength) == shape.count else { return nil }
        let kept = bytes + slot * Self.slotBytes
        if shape.count > 0 && memcmp(kept, shape.baseAddress!, shape.count) != 0 { return nil }
        if entry.rewritten {
            rewrite.write(
                pair, UnsafeBufferPointer(start: kept + shape.count, count: Int(entry.outputLength)))
        }
        var matched = RuleMatches()
        matched.low = entry.matched
        var edit = RuleEngine.Edit(
            matched: matched, dropped: entry.dropped, logRequested: entry.logRequested, notes: [])
        edit.rewritten = entry.rewritten
        hits += 1
        return edit
    }

    /// Keeps `edit`, the outcome of a line of `pair` and `shape` worked out in full, when it is a function of the
    /// shape alone (no note, the edited line's pair as received, not edited on a working copy) and fits a slot.
    mutating func keep(
        _ edit: RuleEngine.Edit, plan: UInt64, shape: UnsafeBufferPointer<UInt8>, hash: UInt64,
        pair: UnsafeBufferPointer<UInt8>, rewrite: inout SetCookieRewrite
    ) {
        guard !edit.hasNotes, !edit.matched.hasBeyond64, shape.count <= Self.slotBytes else { return }
        let slot = Self.slot(hash)
        let kept = bytes + slot * Self.slotBytes
        var outputLength = 0
        if edit.rewritten {
            if rewrite.editedInPlace { return }
            let fits = rewrite.withOutput { output -> Bool in
                guard output.count >= pair.count, output.count - pair.count + shape.count <= Self.slotBytes,
                    pair.count == 0 || memcmp(output.baseAddress!, pair.baseAddress!, pair.count) == 0
                else { return false }
                outputLength = output.count - pair.count
                if outputLength > 0 {
                    (kept + shape.count).update(from: output.baseAddress! + pair.count, count: outputLength)
                }
                return true
            }
            guard fits else { return }
        }
        if shape.count > 0 { kept.update(from: shape.baseAddress!, count: shape.count) }
        entries[slot] = Entry(
            hash: hash, plan: plan, matched: edit.matched.low, shapeLength: Int32(shape.count),
            outputLength: Int32(outputLength), dropped: edit.dropped, logRequested: edit.logRequested,
            rewritten: edit.rewritten)
    }

    @inline(__always)
    private static func slot(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash >> 59) }

    /// A 64-bit hash of `b` and `seed` (the plan): ``WordHash``, whose top five bits pick the slot.
    @inline(__always)
    static func hash(_ b: UnsafeBufferPointer<UInt8>, seed: UInt64) -> UInt64 {
        WordHash.hash(UnsafeRawBufferPointer(b), seed: seed)
    }
}
