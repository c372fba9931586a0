import CookieKit
import CookieLifecycle
import CookieReports
import ExchangeFacts
import HTTPGrammar
import Locking

/// `run --report`: the run's findings and verdicts, collected as the proxy forwards (``FindingsReport``), read when a
/// report is written (at exit, and on SIGUSR1). An observer of the cookie stage: each forwarded line's findings are
/// the stage's (``SetCookieLine/forwardedLint(_:)``), worked out once for every observer that reads them.
package final class RunReport: Sendable {
    private let state = Locked(FindingsReport())

    init() {}

    /// A forwarded Set-Cookie line's findings, with the rules that matched it.
    package func findings(
        _ findings: [LintFinding], cookie: String, rules: [String], context: ExchangeContext, time: Int64
    ) {
        let (host, url) = (context.host, context.url)
        state.withLock {
            $0.add(findings: findings, cookie: cookie, host: host, url: url, time: time, rules: rules)
        }
    }

    /// A request's verdicts.
    func judged(_ verdicts: [CookieVerdict], context: ExchangeContext, time: Int64) {
        guard verdicts.contains(where: { $0.kind != .sentAsExpected }) else { return }
        let (host, url) = (context.host, context.url)
        state.withLock { $0.add(verdicts: verdicts, host: host, url: url, time: time) }
    }

    var snapshot: FindingsReport { state.withLock { $0 } }
}
