import CookieKit
import CookieLifecycle
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

    /// One loop's counts: by rule index in its rule set (``names``), and by lint code.
    struct Tally: Sendable {
        var names: [String] = []
        var rewritten: [Int] = []
        var dropped: [Int] = []
        var findings: [Int] = []

        /// Counts a changed line for each rule that matched it (rule `k`: bit `k` of `low`, or in `high`).
        mutating func transformed(low: UInt64, high: [Int], dropped isDrop: Bool) {
            var bits = low
            while bits != 0 {
                let k = bits.trailingZeroBitCount
                if k < rewritten.count { if isDrop { dropped[k] += 1 } else { rewritten[k] += 1 } }
                bits &= bits - 1
            }
            for k in high where k < rewritten.count { if isDrop { dropped[k] += 1 } else { rewritten[k] += 1 } }
        }

        /// Findings counted by ``FindingKeys`` key.
        mutating func add(found: [Int]) {
            while findings.count < found.count { findings.append(0) }
            for (k, n) in found.enumerated() where n > 0 { findings[k] += n }
        }
    }

    /// A loop's tally moves to a new rule set: what it counted under the old one is kept by rule name.
    func retire(_ t: inout Tally, names: [String]) {
        if t.rewritten.contains(where: { $0 > 0 }) || t.dropped.contains(where: { $0 > 0 }) {
            let counted = t
            retired.withLock { r in
                for (k, name) in counted.names.enumerated() {
                    var c = r[name] ?? (0, 0)
                    c.rewritten += counted.rewritten[k]
                    c.dropped += counted.dropped[k]
                    r[name] = c
                }
            }
        }
        t.names = names
        t.rewritten = Array(repeating: 0, count: names.count)
        t.dropped = Array(repeating: 0, count: names.count)
    }

    /// Every rule's lines rewritten and dropped so far, by name.
    package var transformationSamples: [(rule: String, action: String, count: Int)] {
        var counts = retired.withLock { $0 }
        for t in tallies.withLock({ $0 }) {
            t.withLock { t in
                for (k, name) in t.names.enumerated() where t.rewritten[k] > 0 || t.dropped[k] > 0 {
                    var c = counts[name] ?? (0, 0)
                    c.rewritten += t.rewritten[k]
                    c.dropped += t.dropped[k]
                    counts[name] = c
                }
            }
        }
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
