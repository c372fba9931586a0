import CookieKit
import CookieLifecycle
import CookieRules
import Locking

/// What happened to cookies, for the metrics (kept only with `--metrics`): Set-Cookie lines the rules rewrote or
/// dropped, by rule; the findings of the lines clients got, by lint code; the lifecycle's verdicts, by kind and
/// reason. Bounded labels: the rules' names (the configuration's own), the lint's codes and two enumerations; never
/// a cookie name, a value or a host.
///
/// Lines are counted where they are decided, by each event loop's ``Tally`` (the rules by their index, the codes in a
/// short list: a dictionary keyed by strings cost more per line than everything else the metrics do), and added up
/// when the metrics are read.
package final class CookieCounts: Sendable {
    private static let reasons: [CookieVerdict.Reason.Code?] = [nil] + CookieVerdict.Reason.Code.allCases
    /// One atomic counter per (kind, reason): a verdict costs one add, no lock.
    private let verdicts: [AtomicCounter]
    /// Each loop's tally, and what tallies of earlier rule sets counted (by rule name).
    private let tallies = Locked<[Locked<Tally>]>([])
    private let retired = Locked<[String: (rewritten: Int, dropped: Int)]>([:])

    package init() {
        verdicts = (0..<(CookieVerdict.Kind.allCases.count * Self.reasons.count)).map { _ in AtomicCounter() }
    }

    private static func index(_ kind: CookieVerdict.Kind, _ reason: CookieVerdict.Reason.Code?) -> Int {
        let k = CookieVerdict.Kind.allCases.firstIndex(of: kind)!
        return k * reasons.count + (reasons.firstIndex(of: reason) ?? 0)
    }

    package func judged(_ verdicts: [CookieVerdict]) {
        for v in verdicts { self.verdicts[Self.index(v.kind, v.reason?.code)].add(1) }
    }

    /// A new loop's tally, read with the others.
    func tally() -> Locked<Tally> {
        let t = Locked(Tally())
        tallies.withLock { $0.append(t) }
        return t
    }

    /// One loop's counts: by rule index in its rule set (``engine``'s cookie rules), and by lint code.
    struct Tally: Sendable {
        var engine: RuleEngine? = nil
        var rewritten: [Int] = []
        var dropped: [Int] = []
        var findings: [Int] = []

        /// Counts a changed line for each rule that matched it (rule `k`: bit `k` of `low`, or in `high`).
        mutating func transformed(low: UInt64, high: [Int], dropped isDrop: Bool) {
            func count(_ k: Int) {
                guard k < rewritten.count else { return }
                if isDrop { dropped[k] += 1 } else { rewritten[k] += 1 }
            }
            var bits = low
            while bits != 0 {
                count(bits.trailingZeroBitCount)
                bits &= bits - 1
            }
            for k in high { count(k) }
        }

        /// Findings counted by ``FindingKeys`` key.
        mutating func add(found: [Int]) {
            while findings.count < found.count { findings.append(0) }
            for (k, n) in found.enumerated() where n > 0 { findings[k] += n }
        }

        /// Adds what it counted to `counts`, by rule name.
        func add(to counts: inout [String: (rewritten: Int, dropped: Int)]) {
            guard let names = engine?.cookieRuleNameTable else { return }
            for (k, name) in names.enumerated() where rewritten[k] > 0 || dropped[k] > 0 {
                var c = counts[name] ?? (0, 0)
                (c.rewritten, c.dropped) = (c.rewritten + rewritten[k], c.dropped + dropped[k])
                counts[name] = c
            }
        }
    }

    /// A loop's tally moves to another rule set: what it counted under the old one is kept by rule name.
    func retire(_ t: inout Tally, for engine: RuleEngine) {
        let counted = t
        retired.withLock { counted.add(to: &$0) }
        let n = engine.cookieRuleNameTable.count
        (t.engine, t.rewritten, t.dropped) = (engine, Array(repeating: 0, count: n), Array(repeating: 0, count: n))
    }

    /// Every rule's lines rewritten and dropped so far, by name.
    package var transformationSamples: [(rule: String, action: String, count: Int)] {
        var counts = retired.withLock { $0 }
        for t in tallies.withLock({ $0 }) { t.withLock { $0.add(to: &counts) } }
        return counts.keys.sorted().flatMap { rule in
            [(rule, "rewrite", counts[rule]!.rewritten), (rule, "drop", counts[rule]!.dropped)]
        }
    }

    /// Every (verdict, reason) that can occur, zeros included; `none` for a verdict without a reason.
    package var verdictSamples: [(verdict: String, reason: String, count: Int)] {
        var out: [(String, String, Int)] = []
        for kind in CookieVerdict.Kind.allCases {
            for reason in Self.reasons {
                // sent-as-expected has no reason; the other kinds always have one.
                guard (kind == .sentAsExpected) == (reason == nil) else { continue }
                out.append((kind.rawValue, reason?.rawValue ?? "none", verdicts[Self.index(kind, reason)].load()))
            }
        }
        return out
    }

    /// Findings of forwarded lines so far (rejects and warnings; informational ones are not counted).
    package var findingSamples: [(code: String, severity: String, count: Int)] {
        var counts: [Int] = []
        for t in tallies.withLock({ $0 }) {
            t.withLock { t in
                while counts.count < t.findings.count { counts.append(0) }
                for (k, n) in t.findings.enumerated() { counts[k] += n }
            }
        }
        return counts.enumerated().filter { $0.element > 0 }.map { key, n in
            let (code, severity) = FindingKeys.shared.name(key)
            return (code, severity.rawValue, n)
        }.sorted { ($0.code, $0.severity) < ($1.code, $1.severity) }
    }
}
