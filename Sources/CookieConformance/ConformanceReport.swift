import Terminal

/// What `cookie-proxy conformance` prints: a line per suite (its counted cases, and its informative ones said to be
/// disputed, not scored), each failure (and, unless quiet, each informative case that differs), and the total.
public struct ConformanceReport: Sendable {
    public private(set) var passed = 0
    public private(set) var failed = 0
    /// Informative cases: ones whose expectation the suite and RFC 6265bis disagree on (or upstream disabled).
    public private(set) var notCounted = 0
    public private(set) var text: TerminalText = ""

    /// Runs each suite.
    public init(_ suites: [ConformanceSuite], quiet: Bool) {
        for suite in suites {
            let results = suite.run()
            let counted = results.filter { !$0.informative }
            let informative = results.filter(\.informative)
            let ok = counted.filter(\.passed).count
            passed += ok
            failed += counted.count - ok
            notCounted += informative.count
            // The jar follows the draft, so "not matching" an informative case is not a failure.
            let agreeing = informative.filter(\.passed).count
            let disputed =
                informative.isEmpty
                ? ""
                : "; \(informative.count) informative (disputed expectations, not counted; the jar follows"
                    + " RFC 6265bis and agrees with the suite on \(agreeing) of them)"
            text += "\(suite.name): \(ok)/\(counted.count) counted cases pass\(disputed)\n"
            for result in results where !result.passed && !(quiet && result.informative) {
                let kind = result.informative ? "informative" : "FAIL"
                text +=
                    "  \(kind) \(result.id): expected \(result.expected!.debugDescription), got \(result.got!.debugDescription)\n"
            }
        }
        let uncounted =
            notCounted == 0 ? "" : " (\(passed + failed + notCounted) cases, \(notCounted) informative not counted)"
        text += "\(passed) passed, \(failed) failed\(uncounted)\n"
    }
}
