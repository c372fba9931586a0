import CookieKit
import Testing

@testable import CookieLifecycle

/// A response's lines gathered against the previous response's block: the same lines give the same block (nothing
/// copied), and any difference (a byte, a line more or less, a rule, a drop) gives a block that reads back exactly
/// the lines given.
@Suite struct SetLinesTests {
    typealias L = (received: String?, forwarded: String?, rules: UInt64, beyond: [Int])

    static func build(_ b: inout SetLinesBuilder, _ lines: [L]) -> SetLines {
        b.reset(ruleNames: names)
        for l in lines {
            let received = l.received.map { Array($0.utf8) }
            let forwarded = l.forwarded.map { Array($0.utf8) }
            func with(_ x: [UInt8]?, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
                if let x { x.withUnsafeBufferPointer { body($0) } } else { body(nil) }
            }
            with(received) { r in
                with(forwarded) { f in
                    b.add(
                        received: r, forwarded: f, unchanged: received != nil && received == forwarded, rules: l.rules,
                        rulesBeyond64: l.beyond)
                }
            }
        }
        return b.result()
    }

    static let names = (0..<70).map { "rule \($0)" }

    static func read(_ s: SetLines) -> [L] {
        (0..<s.count).map { i in
            let l = s.line(i)
            var bits: UInt64 = 0
            var beyond: [Int] = []
            for name in l.rules {
                let k = names.firstIndex(of: name)!
                if k < 64 { bits |= 1 << UInt64(k) } else { beyond.append(k) }
            }
            return (
                l.received.map { String(decoding: $0, as: UTF8.self) },
                l.forwarded.map { String(decoding: $0, as: UTF8.self) },
                bits, beyond
            )
        }
    }

    static let base: [L] = [
        ("a=1; Path=/", "a=1; Path=/", 0, []), ("b=2", "b=2; Secure", 0b101, []), ("c=3", nil, 0b10, []),
        (nil, "added=1", 0, []), ("d=4", "d=4", 0, [65, 69]),
    ]

    /// Each variant of the base response, after the base: (what changes, the lines).
    static let variants: [(String, [L])] = [
        ("the same", base),
        ("a byte of a received line", [("a=2; Path=/", "a=2; Path=/", 0, [])] + base.dropFirst()),
        ("a forwarded line", [base[0], ("b=2", "b=2; HttpOnly", 0b101, [])] + base.dropFirst(2)),
        ("forwarded unchanged instead of changed", [base[0], ("b=2", "b=2", 0b101, [])] + base.dropFirst(2)),
        ("not dropped", Array(base.prefix(2)) + [("c=3", "c=3", 0b10, [])] + base.dropFirst(3)),
        ("the rules", [("a=1; Path=/", "a=1; Path=/", 1, [])] + base.dropFirst()),
        ("the rules past 64", Array(base.prefix(4)) + [("d=4", "d=4", 0, [66])]),
        ("a line fewer", Array(base.prefix(4))),
        ("a line more", base + [("e=5", "e=5", 0, [])]),
        ("no line", []),
        ("the last line only", [base[4]]),
    ]

    @Test(arguments: variants.indices)
    func aRepeatIsTheSameBlockAndADifferenceReadsBackExactly(_ i: Int) {
        let (what, lines) = Self.variants[i]
        var b = SetLinesBuilder()
        let first = Self.build(&b, Self.base)
        let second = Self.build(&b, lines)
        #expect((first === second) == (what == "the same"), "\(what)")
        let back = Self.read(second)
        #expect(back.count == lines.count, "\(what)")
        for (x, y) in zip(back, lines) {
            #expect(
                x.received == y.received && x.forwarded == y.forwarded && x.rules == y.rules && x.beyond == y.beyond,
                "\(what): \(x) \(y)")
        }
        // And the block after it is compared with the new one.
        let third = Self.build(&b, lines)
        #expect(third === second || lines.isEmpty)
    }
}
