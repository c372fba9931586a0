/// Shell-style glob matching: `*` any run of characters, `?` one character; everything else literal.
public struct Glob: Sendable, Hashable {
    let pattern: [UInt8]
    public init(_ pattern: String) { self.pattern = Array(pattern.utf8) }
    /// The pattern as written.
    public var source: String { String(decoding: pattern, as: UTF8.self) }

    public static func isGlob(_ s: String) -> Bool { s.contains("*") || s.contains("?") }

    public func matches(_ text: String) -> Bool { matches(Array(text.utf8)) }

    public func matches<C: Collection<UInt8>>(_ text: C) -> Bool where C.Index == Int {
        // Iterative matcher with one backtrack point (linear for patterns with one kind of star run).
        var p = 0
        var t = text.startIndex
        var starP = -1
        var starT = 0
        while t < text.endIndex {
            if p < pattern.count && (pattern[p] == 0x3F || pattern[p] == text[t]) {
                p += 1
                t += 1
            } else if p < pattern.count && pattern[p] == 0x2A {
                starP = p
                starT = t
                p += 1
            } else if starP >= 0 {
                p = starP + 1
                starT += 1
                t = starT
            } else {
                return false
            }
        }
        while p < pattern.count && pattern[p] == 0x2A { p += 1 }
        return p == pattern.count
    }
}
