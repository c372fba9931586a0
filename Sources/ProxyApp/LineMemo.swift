import CookieKit
import CookieRules
import Foundation
import JSONStream

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

    init(digest: UInt64, _ line: borrowing SetCookieLine, _ place: LintPlace, second: Int64, dryRun: Bool) {
        self.digest = digest
        original = Array(line.received)
        result = line.edited.map { Array($0) }
        (rulesLow, rulesHigh) = (line.matchedRulesLow, line.rulesBeyond64)
        self.place = place
        (self.second, self.dryRun) = (second, dryRun)
    }

    /// Whether it was made for this line of this response (the lines compared with memcmp).
    @inline(__always)
    func matches(_ line: borrowing SetCookieLine, _ response: ResponseInHand, second: Int64, dryRun: Bool) -> Bool {
        guard self.second == second, self.dryRun == dryRun, rulesLow == line.matchedRulesLow,
            LifecycleTracker.sameBytes(original, line.received),
            line.beyond64 ? rulesHigh == line.rulesBeyond64 : rulesHigh.isEmpty
        else { return false }
        // The line as the rules left it (``SetCookieLine/edited``), compared without making it.
        guard let result else { return line.dropped && response.isPlace(place) }
        return !line.dropped && line.editedIs(result) && response.isPlace(place)
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
    /// The memos of the last response's lines, by their place in it, and the place in the response in hand of the
    /// line in hand: a server sends the same lines in the same order, so the memo at the same place is compared
    /// first, without hashing the line (for a response's first 64 lines; the rest go by the digest alone).
    private var recent: [LineMemo?] = []
    private var ordinal = -1

    /// A new response.
    @inline(__always)
    func startResponse() { ordinal = -1 }

    /// A new line.
    @inline(__always)
    func reset() {
        ordinal += 1
        if held != nil { held = nil }
    }

    /// The line's memo: the one kept for it, or a new one in its slot.
    @inline(__always)
    func memo(_ line: borrowing SetCookieLine, _ response: ResponseInHand) -> LineMemo {
        if let held { return held }
        return lookUp(line, response)
    }

    /// Looks the line's memo up (or makes it) and holds it.
    @inline(never)
    private func lookUp(_ line: borrowing SetCookieLine, _ response: ResponseInHand) -> LineMemo {
        if engine !== response.engine {
            for i in memos.indices { memos[i] = nil }
            recent.removeAll()
            engine = response.engine
        }
        let second = response.time / 1000
        let dryRun = response.dryRun
        let k = ordinal
        if k >= 0 && k < recent.count, let kept = recent[k],
            kept.matches(line, response, second: second, dryRun: dryRun)
        {
            held = kept
            return kept
        }
        let digest = line.digest(second: second)
        let slot = Int(truncatingIfNeeded: digest >> UInt64(64 - Self.slotBits))
        let found: LineMemo
        if let kept = memos[slot], kept.digest == digest, kept.matches(line, response, second: second, dryRun: dryRun) {
            found = kept
        } else {
            found = LineMemo(digest: digest, line, response.newPlace(), second: second, dryRun: dryRun)
            memos[slot] = found
        }
        if k >= 0 && k < 64 {
            if k >= recent.count { recent += repeatElement(nil, count: k + 1 - recent.count) }
            recent[k] = found
        }
        held = found
        return found
    }
}
