import CookieKit
import CookieLifecycle
import Locking

/// What happened to cookies, for the metrics (kept only with `--metrics`): Set-Cookie lines the rules rewrote or
/// dropped, by rule; the lifecycle's verdicts, by kind and reason. Bounded labels: the rules' names (the
/// configuration's own) and two enumerations; never a cookie name, a value or a host.
package final class CookieCounts: Sendable {
    private static let reasons: [CookieVerdict.Reason.Code?] = [nil] + CookieVerdict.Reason.Code.allCases
    /// One atomic counter per (kind, reason): a verdict costs one add, no lock.
    private let verdicts: [AtomicCounter]
    private let transformations = Locked<[String: (rewritten: Int, dropped: Int)]>([:])
    /// Lint findings of forwarded lines, by code and severity (the lint's own codes: a bounded set).
    private let findings = Locked<[String: (rejects: Int, warning: Int)]>([:])

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

    /// A line the rules rewrote or dropped, with the rules that matched it.
    package func transformed(rules: [String], dropped: Bool) {
        transformations.withLock { counts in
            for rule in rules {
                var c = counts[rule] ?? (0, 0)
                if dropped { c.dropped += 1 } else { c.rewritten += 1 }
                counts[rule] = c
            }
        }
    }

    /// Findings of forwarded lines (rejects and warnings; informational ones are not counted).
    package func found(_ list: [(code: String, severity: LintFinding.Severity)]) {
        findings.withLock { counts in
            for (code, severity) in list {
                var c = counts[code] ?? (0, 0)
                if severity == .rejects { c.rejects += 1 } else { c.warning += 1 }
                counts[code] = c
            }
        }
    }

    package var findingSamples: [(code: String, severity: String, count: Int)] {
        findings.withLock { counts in
            counts.keys.sorted().flatMap { code in
                [(code, "rejects", counts[code]!.rejects), (code, "warning", counts[code]!.warning)].filter {
                    $0.2 > 0
                }
            }
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

    package var transformationSamples: [(rule: String, action: String, count: Int)] {
        transformations.withLock { counts in
            counts.keys.sorted().flatMap { rule in
                [(rule, "rewrite", counts[rule]!.rewritten), (rule, "drop", counts[rule]!.dropped)]
            }
        }
    }
}
