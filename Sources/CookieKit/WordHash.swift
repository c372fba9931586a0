/// The one 64-bit hash of the caches that are keyed by bytes and confirmed by comparing them (the rules' shape
/// cache, the log's record cache): eight bytes at a time, multiply and rotate (as in wyhash and its kin), the last
/// bytes as one word overlapping the one before. Every input bit reaches the top bits, which the caches use to pick
/// a slot. Not for anything an attacker may aim collisions at without a byte comparison behind it.
public enum WordHash {
    @inlinable
    public static func hash(_ b: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        let k: UInt64 = 0xFF51_AFD7_ED55_8CCD
        var h = (seed ^ UInt64(b.count)) &* 0x9E37_79B9_7F4A_7C15
        guard let base = b.baseAddress else { return h ^ (h >> 32) }
        let count = b.count
        if count < 8 {
            for i in 0..<count { h = (h ^ UInt64(base.load(fromByteOffset: i, as: UInt8.self))) &* k }
            return h ^ (h >> 32)
        }
        var i = 0
        while i + 8 <= count {
            h = (h ^ base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* k
            h = h << 31 | h >> 33
            i += 8
        }
        // The last bytes in one word that overlaps the one before (the length is folded in already).
        if i < count { h = (h ^ base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)) &* k }
        h = (h ^ (h >> 29)) &* 0x9E37_79B9_7F4A_7C15
        return h ^ (h >> 32)
    }
}
