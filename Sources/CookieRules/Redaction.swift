import CookieKit
import HTTPGrammar
import JSONStream

/// Cookie values in logs: replaced by a short hash so that the same value stays recognisable across records and
/// runs, while the value itself stays out of the log. The hash is keyed (SipHash-2-4 with a per-installation
/// secret, kept next to the CA with mode 0600): without the key, a low-entropy value (a user id, an email) cannot
/// be found by hashing candidates, so logs can be shared.
public struct Redaction: Sendable {
    /// `--log-values`: values are written as they are.
    public var showValues: Bool
    let k0: UInt64
    let k1: UInt64

    /// `key`: 16 bytes (more are ignored; fewer are zero-padded).
    public init(showValues: Bool, key: [UInt8]) {
        self.showValues = showValues
        var k = key + [UInt8](repeating: 0, count: max(0, 16 - key.count))
        k = Array(k.prefix(16))
        k0 = k[0..<8].enumerated().reduce(0) { $0 | UInt64($1.element) << UInt64(8 * $1.offset) }
        k1 = k[8..<16].enumerated().reduce(0) { $0 | UInt64($1.element) << UInt64(8 * $1.offset) }
    }

    /// `h:` and the first 8 hex digits of the keyed hash of the value bytes.
    public func hash<C: Collection<UInt8>>(_ bytes: C) -> String { String(decoding: hashText(bytes), as: UTF8.self) }

    /// `h:` and 8 hex digits, as bytes.
    func hashText<C: Collection<UInt8>>(_ bytes: C) -> [UInt8] {
        let h = SipHash24.hash(bytes, k0, k1) >> 32
        var text: [UInt8] = [0x68, 0x3A]
        text.reserveCapacity(10)
        for i in 0..<8 {
            // Lowercase hex: '0'…'9' from 0x30, 'a'…'f' from 0x61.
            let digit = UInt8(truncatingIfNeeded: h >> UInt64(28 - 4 * i)) & 0xF
            text.append(digit < 10 ? 0x30 + digit : 0x57 + digit)
        }
        return text
    }

    /// A value as records show it: `[h:…]`, or as it is with `--log-values`.
    public func value<C: Collection<UInt8>>(_ bytes: C) -> String {
        showValues ? String(decoding: bytes, as: UTF8.self) : "[\(hash(bytes))]"
    }

    /// The Set-Cookie text with its value replaced by `[h:…]` (empty values stay empty).
    public func text(_ cookie: SetCookie) -> String {
        if showValues { return cookie.description }
        var redacted = cookie
        let value = cookie.valueBytes
        if !value.isEmpty { try? redacted.setValue(self.value(value)) }
        return redacted.description
    }

    /// ``text(_:)`` as a JSON string, written without building it: the bytes around the value, and the hash.
    public func write(_ cookie: SetCookie, to out: inout JSONWriter) {
        // Text that is not ASCII goes the way of `description` (invalid UTF-8 repaired as String does it).
        let b = cookie.bytes
        guard ByteClass.isASCII(b) else { return out.string(text(cookie)) }
        let value = cookie.valueRange
        out.raw(0x22)
        if showValues || value.isEmpty {
            out.escaped(b[...])
        } else {
            out.escaped(b[..<value.lowerBound])
            out.raw(0x5B)
            out.raw(hashText(b[value])[...])
            out.raw(0x5D)
            out.escaped(b[value.upperBound...])
        }
        out.raw(0x22)
    }
}

/// SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012): a keyed 64-bit hash.
enum SipHash24 {
    static func hash<C: Collection<UInt8>>(_ bytes: C, _ k0: UInt64, _ k1: UInt64) -> UInt64 {
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ k1
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ k1
        @inline(__always) func round() {
            v0 = v0 &+ v1
            v1 = (v1 << 13 | v1 >> 51) ^ v0
            v0 = v0 << 32 | v0 >> 32
            v2 = v2 &+ v3
            v3 = (v3 << 16 | v3 >> 48) ^ v2
            v0 = v0 &+ v3
            v3 = (v3 << 21 | v3 >> 43) ^ v0
            v2 = v2 &+ v1
            v1 = (v1 << 17 | v1 >> 47) ^ v2
            v2 = v2 << 32 | v2 >> 32
        }
        var word: UInt64 = 0
        var n = 0
        for b in bytes {
            word |= UInt64(b) << UInt64(8 * (n & 7))
            n += 1
            if n & 7 == 0 {
                v3 ^= word
                round()
                round()
                v0 ^= word
                word = 0
            }
        }
        word |= UInt64(n & 0xFF) << 56
        v3 ^= word
        round()
        round()
        v0 ^= word
        v2 ^= 0xFF
        round()
        round()
        round()
        round()
        return v0 ^ v1 ^ v2 ^ v3
    }
}
