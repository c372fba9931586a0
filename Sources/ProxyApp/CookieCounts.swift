import CookieKit
import CookieLifecycle
import CookieRules
import Locking
import ProxyCore

/// What happened to cookies, for the metrics (kept only with `--metrics`): Set-Cookie lines the rules rewrote or
/// dropped, by rule; the findings of the lines clients got, by lint code; the lifecycle's verdicts, by kind and
/// reason. Bounded labels: the rules' names (the configuration's own), the lint's codes and two enumerations; never
/// a cookie name, a value or a host.
///
/// Lines are counted where they are decided, into each event loop's ``LoopCounts`` (the rules by their index, the
/// codes by a small integer: a dictionary keyed by strings cost more per line than everything else the metrics do),
/// and added up when the metrics are read.
package final class CookieCounts: Sendable {
    private static let reasons: [CookieVerdict.Reason.Code?] = [nil] + CookieVerdict.Reason.Code.allCases
    /// One atomic counter per (kind, reason): a verdict costs one add, no lock.
    private let verdicts: AtomicCounters
    /// Each loop's counts, and what counts since replaced had counted (by rule name, and by finding key): a scrape
    /// and a replacement each hold the lock, so every line is read once.
    private let state = Locked<Counted>(Counted())

    struct Counted {
        var loops: [LoopCounts] = []
        var rules: [String: (rewritten: Int, dropped: Int)] = [:]
        var findings: [Int] = []
    }

    init() {
        verdicts = AtomicCounters(count: CookieVerdict.Kind.allCases.count * Self.reasons.count)
    }

    private static func index(_ kind: CookieVerdict.Kind, _ reason: CookieVerdict.Reason.Code?) -> Int {
        let k = CookieVerdict.Kind.allCases.firstIndex(of: kind)!
        return k * reasons.count + (reasons.firstIndex(of: reason) ?? 0)
    }

    func judged(_ verdicts: [CookieVerdict]) {
        for v in verdicts { self.verdicts.add(Self.index(v.kind, v.reason?.code), 1) }
    }

    /// One loop's counts under one rule set: its rules' changed lines by index in the set
    /// (``RuleEngine/cookieRuleNameTable``), and findings by ``FindingKeys`` key. Only that loop's thread adds to
    /// them (relaxed atomic adds: no lock, nothing gathered per response); a scrape reads them.
    final class LoopCounts: Sendable {
        let engine: RuleEngine
        let rewritten: AtomicCounters
        let dropped: AtomicCounters
        let findings: AtomicCounters

        init(engine: RuleEngine, findingKeys: Int) {
            self.engine = engine
            let n = engine.cookieRuleNameTable.count
            (rewritten, dropped) = (AtomicCounters(count: n), AtomicCounters(count: n))
            findings = AtomicCounters(count: findingKeys)
        }

        /// Adds what it counted to `counted`'s totals by rule name and by finding key.
        func add(to counted: inout Counted) {
            for (k, name) in engine.cookieRuleNameTable.enumerated() {
                let (r, d) = (rewritten.load(k), dropped.load(k))
                guard r > 0 || d > 0 else { continue }
                var c = counted.rules[name] ?? (0, 0)
                (c.rewritten, c.dropped) = (c.rewritten + r, c.dropped + d)
                counted.rules[name] = c
            }
            while counted.findings.count < findings.count { counted.findings.append(0) }
            for k in 0..<findings.count { counted.findings[k] += findings.load(k) }
        }
    }

    /// A loop's counts for `engine` with room for `findingKeys` keys, in place of `old` (its rule set changed, or a
    /// finding's key is past its room), whose counts are kept by name. Called by the loop whose counts they are, so
    /// nothing is added to `old` after.
    func replace(_ old: LoopCounts?, engine: RuleEngine, findingKeys: Int) -> LoopCounts {
        let made = LoopCounts(engine: engine, findingKeys: findingKeys)
        state.withLock { s in
            if let old, let i = s.loops.firstIndex(where: { $0 === old }) {
                old.add(to: &s)
                s.loops[i] = made
            } else {
                s.loops.append(made)
            }
        }
        return made
    }

    /// Everything counted so far: the loops' counts added to what replaced counts had counted.
    private var counted: Counted {
        state.withLock { s in
            var all = Counted(rules: s.rules, findings: s.findings)
            for loop in s.loops { loop.add(to: &all) }
            return all
        }
    }

    /// Every rule's lines rewritten and dropped so far, by name.
    package var transformationSamples: [(rule: String, action: String, count: Int)] {
        let counts = counted.rules
        return counts.keys.sorted().flatMap { rule in
            [(rule, "rewrite", counts[rule]!.rewritten), (rule, "drop", counts[rule]!.dropped)]
        }
    }

    /// Every (verdict, reason) that can occur (``CookieVerdict/Kind/reasons``), zeros included; `none` for
    /// sent-as-expected, which has no reason.
    package var verdictSamples: [(verdict: String, reason: String, count: Int)] {
        var out: [(String, String, Int)] = []
        for kind in CookieVerdict.Kind.allCases {
            let reasons: [CookieVerdict.Reason.Code?] = kind.reasons.isEmpty ? [nil] : kind.reasons
            for reason in reasons {
                out.append((kind.rawValue, reason?.rawValue ?? "none", verdicts.load(Self.index(kind, reason))))
            }
        }
        return out
    }

    /// Findings of forwarded lines so far (rejects and warnings; informational ones are not counted).
    package var findingSamples: [(code: String, severity: String, count: Int)] {
        counted.findings.enumerated().filter { $0.element > 0 }.map { key, n in
            let (code, severity) = FindingKeys.shared.name(key)
            return (code, severity.rawValue, n)
        }.sorted { ($0.code, $0.severity) < ($1.code, $1.severity) }
    }
}

/// The metrics (`--metrics`) as an observer: Set-Cookie lines seen and changed, request cookies a rule changed, what
/// happened to cookies by rule and finding (``CookieCounts``), the responses forwarded and the exchanges' durations
/// (``ResponseCounts``). Nothing it exposes is counted anywhere but by its parts.
package final class MetricsObserver: ExchangeObserver {
    package let cookies = CookieCounts()
    package let responses: ResponseCounts
    /// Set-Cookie lines the stage read.
    package let linesSeen = AtomicCounter()
    /// Set-Cookie lines a rule rewrote or dropped (not counted in a dry run: nothing was changed).
    package let linesChanged = AtomicCounter()
    /// Cookies of requests' Cookie headers a `request-cookie` rule removed, set, added or renamed (in a dry run:
    /// would have).
    package let requestCookiesChanged = AtomicCounter()
    /// Whether the lifecycle judges requests (its verdicts are exposed only then).
    let lifecycle: Bool

    package init(reverse: Bool, lifecycle: Bool) {
        responses = ResponseCounts(reverse: reverse)
        self.lifecycle = lifecycle
    }

    package func makeLoopObserver() -> (any LoopObserver)? { Part(self) }

    /// One loop's counting: the lines the rules changed, by rule, and the findings of each line as the client got
    /// it, by code and severity (``FindingKeys``), added as each line is seen to the loop's ``CookieCounts/LoopCounts``;
    /// each request's verdicts; each response by class; each exchange's durations.
    final class Part: LoopObserver {
        let metrics: MetricsObserver
        let counts: CookieCounts
        let responses: ResponseCounts
        /// The response's lines seen and changed, added up once it is forwarded.
        var seen = 0
        var changed = 0
        /// The loop's counts under the rule set of the response in hand (made at the loop's first line), and its
        /// rows.
        var current: CookieCounts.LoopCounts? = nil
        var rewritten = AtomicCounters(count: 0)
        var dropped = AtomicCounters(count: 0)
        var findings = AtomicCounters(count: 0)
        /// ``current``'s rule set's rules that drop a line and those that edit one (``RuleEngine/cookieRuleDrops``),
        /// taken once per rule set, not per line.
        var drops: [Bool] = []
        var edits: [Bool] = []

        init(_ metrics: MetricsObserver) {
            (self.metrics, counts, responses) = (metrics, metrics.cookies, metrics.responses)
        }

        /// The loop's counts are replaced: for another rule set, or with room for `findingKeys` keys.
        private func replace(engine: RuleEngine, findingKeys: Int) {
            let made = counts.replace(current, engine: engine, findingKeys: findingKeys)
            (current, rewritten, dropped, findings) = (made, made.rewritten, made.dropped, made.findings)
            (drops, edits) = (engine.cookieRuleDrops, engine.cookieRuleEdits)
        }

        func didForwardRequest(_ request: borrowing ForwardedRequest) {
            if let judged = request.judged { counts.judged(judged.verdicts) }
            if !request.cookieEdits.isEmpty { metrics.requestCookiesChanged.add(request.cookieEdits.count) }
        }

        func didDecideLine(_ line: borrowing SetCookieLine) {
            seen += 1
            let response = line.response
            if current?.engine !== response.engine {
                replace(engine: response.engine, findingKeys: max(findings.count, 64))
            }
            if !line.dryRun, line.changed {
                changed += 1
                // Each rule that did it: a drop counts for the rules that drop, a rewrite for those that edit.
                if line.dropped { count(line, in: dropped, drops) } else { count(line, in: rewritten, edits) }
            }
            let keys = line.forwardedKeys
            if keys == .overflow {
                for key in line.forwardedLint?.counted ?? [] { count(key, response) }
            } else {
                keys.forEach { count($0, response) }
            }
        }

        /// One for each rule that matched `line` and whose action `did` says is of this kind.
        @inline(__always)
        private func count(_ line: borrowing SetCookieLine, in counters: AtomicCounters, _ did: [Bool]) {
            var bits = line.matchedRulesLow
            while bits != 0 {
                let k = bits.trailingZeroBitCount
                if k < counters.count && did[k] { counters.add(k, 1) }
                bits &= bits - 1
            }
            if line.beyond64 {
                for k in line.rulesBeyond64 where k < counters.count && did[k] { counters.add(k, 1) }
            }
        }

        @inline(__always)
        private func count(_ key: Int, _ response: ResponseInHand) {
            if key >= findings.count {
                replace(engine: response.engine, findingKeys: max(key + 1, 2 * findings.count))
            }
            findings.add(key, 1)
        }

        func didForwardResponse(_ response: borrowing ForwardedResponse) {
            responses.count(response.context)
            guard seen > 0 else { return }
            metrics.linesSeen.add(seen)
            if changed > 0 { metrics.linesChanged.add(changed) }
            (seen, changed) = (0, 0)
        }

        func exchangeEnded(_ exchange: borrowing EndedExchange) {
            responses.observe(exchange.times, relayed: exchange.ending == .relayed)
        }
    }
}
