import CookieKit
import CookieRules
import Foundation

/// What the observers work out from a line (its parsed cookies, the attribute changes, the lint's findings, the
/// log's record of it), kept for the next time the same line is decided the same way: a server sets the same
/// cookies on every response, so each is parsed, diffed, linted and written as a record once a second per URL,
/// not once per response and observer. Everything kept is a function of the key (the line as received and as the
/// rules left it, the rules that matched, the request's URL and site context, the second — an `Expires` is judged
/// against it — and the dry run) and of the rule set, which empties the table when it changes; the key is compared
/// exactly, so a collision costs a miss, never a wrong finding or record.
final class LineMemo {
    let digest: UInt64
    let original: [UInt8]
    let result: [UInt8]?
    let rulesLow: UInt64
    let rulesHigh: [Int]
    let place: LintPlace
    let second: Int64
    let dryRun: Bool

    var received: SetCookie? = nil
    var transformation: Transformation? = nil
    /// The lint of the line as the rules left it (of the received line when dropped).
    var editedLint: Linted? = nil { didSet { editedKeys = editedLint?.keys } }
    /// The lint of the received line, in a dry run that would have changed it (what the client got).
    var receivedLint: Linted? = nil { didSet { receivedKeys = receivedLint?.keys } }
    /// The lints' ``CountedKeys``, read without copying the lints.
    private(set) var editedKeys: CountedKeys? = nil
    private(set) var receivedKeys: CountedKeys? = nil
    /// The log's: the cookie part of the line's record (`,"cookie":` to the end) as its sink writes it, when
    /// ``recorded``.
    var record = JSONWriter(capacity: 0)
    var recorded = false

    init(digest: UInt64, _ line: borrowing SetCookieLine, _ m: borrowing MessageContext, second: Int64, dryRun: Bool) {
        self.digest = digest
        original = Array(line.received)
        result = line.edited.map { Array($0) }
        (rulesLow, rulesHigh) = (line.matchedRulesLow, line.rulesBeyond64)
        place = LintPlace(m)
        (self.second, self.dryRun) = (second, dryRun)
    }

    /// Whether it was made for this line of this response (the lines compared with memcmp).
    @inline(__always)
    func matches(_ line: borrowing SetCookieLine, _ m: MessageBox, second: Int64, dryRun: Bool) -> Bool {
        let edited = line.edited
        guard self.second == second, self.dryRun == dryRun, rulesLow == line.matchedRulesLow,
            (result == nil) == (edited == nil), LifecycleTracker.sameBytes(original, line.received),
            edited.map({ LifecycleTracker.sameBytes(result!, $0) }) ?? true,
            rulesHigh == line.rulesBeyond64
        else { return false }
        return place.isFor(m)
    }
}

/// One event loop's stage's memos (``LineMemo``), direct-mapped by the top bits of the line's digest, and the line
/// in hand's, looked up when a part first asks for it (most lines of most configurations: never).
final class LineFacts {
    private static let slotBits = 12
    private var memos = [LineMemo?](repeating: nil, count: 1 << LineFacts.slotBits)
    /// The rule set the memos were made under.
    private var engine: RuleEngine? = nil
    /// This line's memo, once looked up.
    private var held: LineMemo? = nil

    /// A new line.
    @inline(__always)
    func reset() { if held != nil { held = nil } }

    /// The line's memo: the one kept for it, or a new one in its slot.
    @inline(__always)
    func memo(_ line: borrowing SetCookieLine, _ response: ForwardedResponse) -> LineMemo {
        if let held { return held }
        return lookUp(line, response)
    }

    /// Looks the line's memo up (or makes it) and holds it.
    @inline(never)
    private func lookUp(_ line: borrowing SetCookieLine, _ response: ForwardedResponse) -> LineMemo {
        if engine !== response.engine {
            for i in memos.indices { memos[i] = nil }
            engine = response.engine
        }
        let second = response.time / 1000
        let digest = line.digest(second: second)
        let slot = Int(truncatingIfNeeded: digest >> UInt64(64 - Self.slotBits))
        let dryRun = response.dryRun
        let box = response.messageBox
        let found: LineMemo
        if let kept = memos[slot], kept.digest == digest, kept.matches(line, box, second: second, dryRun: dryRun) {
            found = kept
        } else {
            found = LineMemo(digest: digest, line, box.message, second: second, dryRun: dryRun)
            memos[slot] = found
        }
        held = found
        return found
    }
}
