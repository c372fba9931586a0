/// What an observer keeps about a request until its response or its exchange's end, found by the request's id
/// (``ExchangeContext/requestID``): an open-addressed table with linear probing on `id & mask`, at most half full,
/// removal by shifting the entries after the hole back (Knuth's algorithm R: no tombstones). The proxy numbers its
/// requests consecutively, so the low bits spread them without hashing (a Dictionary hashed each id with SipHash,
/// twice per exchange).
///
/// An exchange whose end is never told leaves its entry: ``letGo(past:newest:)`` lets such entries go.
public struct RequestTable<Value> {
    @usableFromInline var keys: [UInt64]
    @usableFromInline var values: [Value?]
    @usableFromInline var held = 0

    @inlinable static var empty: UInt64 { .max }

    /// Entries held.
    @inlinable public var count: Int { held }

    public init() {
        keys = [UInt64](repeating: Self.empty, count: 16)
        values = [Value?](repeating: nil, count: 16)
    }

    @inlinable var mask: Int { keys.count &- 1 }

    /// Puts `value` for `id`; the value it replaced, if any.
    @inlinable @discardableResult
    public mutating func insert(_ value: Value, for id: UInt64) -> Value? {
        if (held &+ 1) &* 2 > keys.count { grow() }
        var i = Int(truncatingIfNeeded: id) & mask
        while keys[i] != Self.empty {
            if keys[i] == id {
                let old = values[i]
                values[i] = value
                return old
            }
            i = (i &+ 1) & mask
        }
        keys[i] = id
        values[i] = value
        held &+= 1
        return nil
    }

    /// Takes `id`'s value out (nil: none is held).
    @inlinable
    public mutating func remove(_ id: UInt64) -> Value? {
        var i = Int(truncatingIfNeeded: id) & mask
        while keys[i] != id {
            if keys[i] == Self.empty { return nil }
            i = (i &+ 1) & mask
        }
        let found = values[i].take()
        keys[i] = Self.empty
        held &-= 1
        // An entry after the hole whose home is not cyclically within (hole, entry] would not be found past the hole:
        // it moves into it, and its old place is the next hole.
        var j = (i &+ 1) & mask
        while keys[j] != Self.empty {
            let home = Int(truncatingIfNeeded: keys[j]) & mask
            let between = i <= j ? (i < home && home <= j) : (i < home || home <= j)
            if !between {
                keys[i] = keys[j]
                values[i] = values[j].take()
                keys[j] = Self.empty
                i = j
            }
            j = (j &+ 1) & mask
        }
        return found
    }

    /// When more than `limit` entries are held, takes out those more than `limit / 2` ids older than `newest`
    /// and returns their values (else none). Half at once: a table filled by exchanges that never end is swept once
    /// every `limit / 2` requests, not at each.
    @inlinable
    public mutating func letGo(past limit: Int, newest: UInt64) -> [Value] {
        held > limit ? letGo(olderThan: newest - min(newest, UInt64(limit / 2))) : []
    }

    @usableFromInline mutating func letGo(olderThan bound: UInt64) -> [Value] {
        let old = keys.filter { $0 != Self.empty && $0 < bound }
        return old.compactMap { remove($0) }
    }

    @usableFromInline mutating func grow() {
        let (oldKeys, oldValues) = (keys, values)
        keys = [UInt64](repeating: Self.empty, count: oldKeys.count * 2)
        values = [Value?](repeating: nil, count: oldKeys.count * 2)
        held = 0
        for (k, key) in oldKeys.enumerated() where key != Self.empty {
            if let value = oldValues[k] { insert(value, for: key) }
        }
    }
}
