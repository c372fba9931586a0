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
        /// The rules past the 64th that matched: an index into ``SetLines/beyond64``, or -1 (plain values only, so
        /// that a line is copied and compared without reference counting).
        var beyond: Int
    }
    /// Memory of its own, never changed after ``init``: read without reference counting or bounds checks while
    /// a response is compared with it.
    nonisolated(unsafe) let bytes: UnsafeMutableBufferPointer<UInt8>
    nonisolated(unsafe) let lines: UnsafeMutableBufferPointer<Line>
    let ruleNames: [String]
    let beyond64: [[Int]]

    init(bytes: [UInt8], lines: [Line], ruleNames: [String], beyond64: [[Int]]) {
        self.bytes = .allocate(capacity: bytes.count)
        _ = self.bytes.initialize(from: bytes)
        self.lines = .allocate(capacity: lines.count)
        _ = self.lines.initialize(from: lines)
        (self.ruleNames, self.beyond64) = (ruleNames, beyond64)
    }

    deinit {
        bytes.deallocate()
        lines.deallocate()
    }

    public var count: Int { lines.count }

    /// The bytes of a line's range.
    func slice(_ r: Range<Int>) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[r]) }

    /// Line `i` as received and as forwarded, and the names of the rules that matched it.
    func line(_ i: Int) -> (received: [UInt8]?, forwarded: [UInt8]?, rules: [String]) {
        let l = lines[i]
        var names: [String] = []
        var bits = l.rules
        while bits != 0 {
            let k = bits.trailingZeroBitCount
            if k < ruleNames.count { names.append(ruleNames[k]) }
            bits &= bits - 1
        }
        if l.beyond >= 0 { for k in beyond64[l.beyond] where k < ruleNames.count { names.append(ruleNames[k]) } }
        return (l.received.map { Array(slice($0)) }, l.forwarded.map { Array(slice($0)) }, names)
    }
}

/// Where a response's lines are gathered before they are kept (one per event loop). Lines are compared with the
/// previous response's block as they come and copied only from the first that differs, so a response that repeats
/// the previous one (the common case: a server that sets the same cookies on every response) copies nothing and
/// yields the previous block itself (``result()``).
public struct SetLinesBuilder: Sendable {
    var bytes: [UInt8] = []
    var lines: [SetLines.Line] = []
    var ruleNames: [String] = []
    var beyond64: [[Int]] = []
    /// The block the previous response yielded, and how many of this response's lines equal its first ones (while
    /// all of them do, nothing is copied).
    var previous: SetLines? = nil
    var matched = 0
    var matching = false

    public init() {}

    public var isEmpty: Bool { matching ? matched == 0 : lines.isEmpty }

    /// Starts a response's lines; `ruleNames`: the rule set's names, which the rules' bits index.
    public mutating func reset(ruleNames: [String]) {
        // Emptied only when something is in them: a response that repeats the previous one left them empty.
        if !bytes.isEmpty { bytes.removeAll(keepingCapacity: true) }
        if !lines.isEmpty { lines.removeAll(keepingCapacity: true) }
        if !beyond64.isEmpty { beyond64.removeAll() }
        // The same rule set's table (most responses): nothing to compare or keep again.
        if !Self.sameStorage(self.ruleNames, ruleNames) {
            if let p = previous, !Self.sameTable(p.ruleNames, ruleNames) { previous = nil }
            self.ruleNames = ruleNames
        }
        matched = 0
        matching = previous != nil
    }

    /// Whether two tables are the same array (one rule set's), without comparing their names.
    static func sameStorage(_ a: [String], _ b: [String]) -> Bool {
        a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress } }
    }

    static func sameTable(_ a: [String], _ b: [String]) -> Bool { sameStorage(a, b) || a == b }

    @inline(__always)
    static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    /// Adds a line: as received (nil: added by the proxy), as forwarded (nil: dropped; `unchanged`: the received
    /// bytes), and the bits of the rules that matched (rule `k` is bit `k`; past the 64th, their indices).
    public mutating func add(
        received: UnsafeBufferPointer<UInt8>?, forwarded: UnsafeBufferPointer<UInt8>?, unchanged: Bool,
        rules: UInt64 = 0, rulesBeyond64: [Int] = []
    ) {
        if matching {
            // Borrowed: the builder holds the block while it compares.
            unowned(unsafe) let p = previous.unsafelyUnwrapped
            if matched < p.lines.count {
                let l = p.lines[matched]
                var same = l.rules == rules && (l.beyond < 0) == rulesBeyond64.isEmpty
                if same, let received {
                    if let range = l.received { same = Self.equal(received, p.slice(range)) } else { same = false }
                } else if same {
                    same = l.received == nil
                }
                if same {
                    if unchanged {
                        same = l.received != nil && l.forwarded == l.received
                    } else if let forwarded {
                        if let range = l.forwarded, range != l.received {
                            same = Self.equal(forwarded, p.slice(range))
                        } else {
                            same = false
                        }
                    } else {
                        same = l.forwarded == nil
                    }
                }
                if same && l.beyond >= 0 { same = p.beyond64[l.beyond] == rulesBeyond64 }
                if same {
                    matched += 1
                    return
                }
            }
            // The first line that differs: the previous block's lines so far are this response's too.
            copyMatchedPrefix(p)
        }
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
        var b = -1
        if !rulesBeyond64.isEmpty {
            beyond64.append(rulesBeyond64)
            b = beyond64.count - 1
        }
        lines.append(SetLines.Line(received: r, forwarded: f, rules: rules, beyond: b))
    }

    /// Takes the previous block's first `matched` lines as this response's, and stops comparing.
    private mutating func copyMatchedPrefix(_ p: SetLines) {
        matching = false
        var upTo = 0
        for k in 0..<matched {
            upTo = max(upTo, p.lines[k].received?.upperBound ?? 0, p.lines[k].forwarded?.upperBound ?? 0)
            if p.lines[k].beyond >= 0 {
                beyond64.append(p.beyond64[p.lines[k].beyond])
                var l = p.lines[k]
                l.beyond = beyond64.count - 1
                lines.append(l)
            } else {
                lines.append(p.lines[k])
            }
        }
        bytes.append(contentsOf: p.slice(0..<upTo))
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
        previous = nil
        matching = false
        ruleNames.append(name)
        return ruleNames.count - 1
    }

    /// The block of this response's lines: the previous one when they are all its lines, else a new one (which the
    /// next response is compared with).
    public mutating func result() -> SetLines {
        if matching, let p = previous, matched == p.lines.count { return p }
        // Fewer lines than the previous block: its first ones.
        if matching, let p = previous { copyMatchedPrefix(p) }
        let made = SetLines(bytes: bytes, lines: lines, ruleNames: ruleNames, beyond64: beyond64)
        previous = made
        return made
    }
}
