/// The pairs of a request's `Cookie` header (RFC 6265bis §4.2.1: `cookie-pair *( ";" SP cookie-pair )`, read
/// leniently as browsers write it and servers read it: split on ";", optional whitespace around each pair, a pair
/// without "=" is a nameless cookie). Each pair is a range of the header's bytes, so an edit can change one pair and
/// leave every other byte where it was.
public struct CookieHeader: Sendable, Hashable {
    public struct Pair: Sendable, Hashable {
        /// The whole pair, whitespace trimmed.
        public var range: Range<Int>
        /// The name's bytes (empty for a nameless cookie).
        public var name: Range<Int>
        /// The value's bytes.
        public var value: Range<Int>
    }

    public var bytes: [UInt8]
    public private(set) var pairs: [Pair]

    public init<C: Collection<UInt8>>(_ header: C) {
        bytes = Array(header)
        pairs = Self.scan(bytes)
    }

    static func scan(_ bytes: [UInt8]) -> [Pair] {
        var out: [Pair] = []
        var start = 0
        while start <= bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != 0x3B { end += 1 }
            var lo = start
            var hi = end
            while lo < hi && (bytes[lo] == 0x20 || bytes[lo] == 0x09) { lo += 1 }
            while hi > lo && (bytes[hi - 1] == 0x20 || bytes[hi - 1] == 0x09) { hi -= 1 }
            if lo < hi {
                if let eq = bytes[lo..<hi].firstIndex(of: 0x3D) {
                    var nameEnd = eq
                    while nameEnd > lo && (bytes[nameEnd - 1] == 0x20 || bytes[nameEnd - 1] == 0x09) { nameEnd -= 1 }
                    var valueStart = eq + 1
                    while valueStart < hi && (bytes[valueStart] == 0x20 || bytes[valueStart] == 0x09) {
                        valueStart += 1
                    }
                    out.append(Pair(range: lo..<hi, name: lo..<nameEnd, value: valueStart..<hi))
                } else {
                    out.append(Pair(range: lo..<hi, name: lo..<lo, value: lo..<hi))
                }
            }
            start = end + 1
        }
        return out
    }

    public func name(_ pair: Pair) -> String { String(lossy: bytes[pair.name]) }
    public func value(_ pair: Pair) -> String { String(lossy: bytes[pair.value]) }
    public func nameBytes(_ pair: Pair) -> ArraySlice<UInt8> { bytes[pair.name] }
    public func valueBytes(_ pair: Pair) -> ArraySlice<UInt8> { bytes[pair.value] }

    /// The header with `pair` (an index into ``pairs``) and the separator before it (or after it, for the first)
    /// taken out; every other byte as it was.
    public mutating func remove(at index: Int) {
        let pair = pairs[index]
        let cut: Range<Int>
        if index > 0 {
            // From the end of the previous pair: its ";" and the whitespace.
            cut = pairs[index - 1].range.upperBound..<pair.range.upperBound
        } else if pairs.count > 1 {
            cut = pair.range.lowerBound..<pairs[1].range.lowerBound
        } else {
            cut = 0..<bytes.count
        }
        bytes.removeSubrange(cut)
        pairs = Self.scan(bytes)
    }

    /// Replaces the value of `pair` (an index into ``pairs``).
    public mutating func setValue(at index: Int, to value: some Collection<UInt8>) {
        bytes.replaceSubrange(pairs[index].value, with: value)
        pairs = Self.scan(bytes)
    }

    /// Replaces the name of `pair` (an index into ``pairs``); a nameless cookie gains `name=`.
    public mutating func setName(at index: Int, to name: some Collection<UInt8>) {
        let pair = pairs[index]
        if pair.name.isEmpty && pair.value.lowerBound == pair.range.lowerBound {
            bytes.replaceSubrange(pair.range.lowerBound..<pair.range.lowerBound, with: Array(name) + [0x3D])
        } else {
            bytes.replaceSubrange(pair.name, with: name)
        }
        pairs = Self.scan(bytes)
    }

    /// Appends `name=value` after the last pair, with "; " (RFC 6265bis §5.8.3 step 6's separator).
    public mutating func append(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        if let last = pairs.last {
            bytes.insert(contentsOf: [0x3B, 0x20] + Array(name) + [0x3D] + Array(value), at: last.range.upperBound)
        } else {
            bytes = Array(name) + [0x3D] + Array(value)
        }
        pairs = Self.scan(bytes)
    }
}
