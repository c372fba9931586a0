import CookieKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The Set-Cookie lines of one response as the lifecycle keeps them: one block of bytes (each line as received,
/// and as forwarded when a rule changed it) and, per line, the rules that matched as bits into a table of rule names
/// that every response of one rule set shares. Immutable once made, so a client whose responses repeat (a server
/// that refreshes the same cookies on every response) keeps one block for all of them.
public final class SetLines: Sendable {
    struct Line: Sendable, Equatable {
        var received: Range<Int>?
        /// Nil: dropped by a rule. The received range when forwarded unchanged.
        var forwarded: Range<Int>?
        var rules: UInt64
        var rulesBeyond64: [Int]
    }
    let bytes: [UInt8]
    let lines: [Line]
    let ruleNames: [String]

    init(bytes: [UInt8], lines: [Line], ruleNames: [String]) {
        (self.bytes, self.lines, self.ruleNames) = (bytes, lines, ruleNames)
    }

    public var count: Int { lines.count }

    /// Line `i` as received and as forwarded, and the names of the rules that matched it.
    func line(_ i: Int) -> (received: ArraySlice<UInt8>?, forwarded: ArraySlice<UInt8>?, rules: [String]) {
        let l = lines[i]
        var names: [String] = []
        var bits = l.rules
        while bits != 0 {
            let k = bits.trailingZeroBitCount
            if k < ruleNames.count { names.append(ruleNames[k]) }
            bits &= bits - 1
        }
        for k in l.rulesBeyond64 where k < ruleNames.count { names.append(ruleNames[k]) }
        return (l.received.map { bytes[$0] }, l.forwarded.map { bytes[$0] }, names)
    }
}

/// Where a response's lines are gathered before they are kept: its storage is reused from one response to the
/// next (one per event loop), and it is copied into a ``SetLines`` only when it differs from the client's last.
public struct SetLinesBuilder: Sendable {
    var bytes: [UInt8] = []
    var lines: [SetLines.Line] = []
    var ruleNames: [String] = []

    public init() {}

    public var isEmpty: Bool { lines.isEmpty }

    /// Starts a response's lines; `ruleNames`: the rule set's names, which the rules' bits index.
    public mutating func reset(ruleNames: [String]) {
        bytes.removeAll(keepingCapacity: true)
        lines.removeAll(keepingCapacity: true)
        self.ruleNames = ruleNames
    }

    /// Adds a line: as received (nil: added by the proxy), as forwarded (nil: dropped; `unchanged`: the received
    /// bytes), and the bits of the rules that matched (rule `k` is bit `k`; past the 64th, their indices).
    public mutating func add(
        received: UnsafeBufferPointer<UInt8>?, forwarded: UnsafeBufferPointer<UInt8>?, unchanged: Bool,
        rules: UInt64 = 0, rulesBeyond64: [Int] = []
    ) {
        var r: Range<Int>? = nil
        if let received {
            let start = bytes.count
            bytes.append(contentsOf: received)
            r = start..<bytes.count
        }
        var f: Range<Int>? = unchanged ? r : nil
        if !unchanged, let forwarded {
            let start = bytes.count
            bytes.append(contentsOf: forwarded)
            f = start..<bytes.count
        }
        lines.append(SetLines.Line(received: r, forwarded: f, rules: rules, rulesBeyond64: rulesBeyond64))
    }

    /// Adds a line from whole values (a HAR's, a test's).
    public mutating func add(_ line: ClientCookies.SetLine) {
        let names = line.rules.compactMap { name in ruleNames.firstIndex(of: name) ?? appendName(name) }
        var bits: UInt64 = 0
        var beyond: [Int] = []
        for k in names { if k < 64 { bits |= 1 << UInt64(k) } else { beyond.append(k) } }
        func withOptional(_ b: [UInt8]?, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
            if let b { b.withUnsafeBufferPointer { body($0) } } else { body(nil) }
        }
        withOptional(line.received) { r in
            withOptional(line.forwarded) { f in
                add(
                    received: r, forwarded: f, unchanged: line.received != nil && line.received == line.forwarded,
                    rules: bits, rulesBeyond64: beyond)
            }
        }
    }

    private mutating func appendName(_ name: String) -> Int {
        ruleNames.append(name)
        return ruleNames.count - 1
    }

    /// Whether `kept` holds these very lines (and the same rule set's names).
    func same(as kept: SetLines) -> Bool {
        guard lines.count == kept.lines.count, bytes.count == kept.bytes.count else { return false }
        for i in lines.indices {
            let (a, b) = (lines[i], kept.lines[i])
            guard a.received == b.received, a.forwarded == b.forwarded, a.rules == b.rules,
                a.rulesBeyond64.isEmpty ? b.rulesBeyond64.isEmpty : a.rulesBeyond64 == b.rulesBeyond64
            else { return false }
        }
        let equal = bytes.withUnsafeBytes { x in
            kept.bytes.withUnsafeBytes { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
        guard equal else { return false }
        // The table is one array per rule set: the same storage, or equal names.
        let sameStorage = ruleNames.withUnsafeBufferPointer { a in
            kept.ruleNames.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress }
        }
        return sameStorage || ruleNames == kept.ruleNames
    }

    func make() -> SetLines { SetLines(bytes: bytes, lines: lines, ruleNames: ruleNames) }
}
