import CookieKit
import CookieLifecycle
import CookieReports
import HTTPGrammar
import Locking

/// `run --report`: the run's findings and verdicts, collected as the proxy forwards (``FindingsReport``), read when a
/// report is written (at exit, and on SIGUSR1). Each forwarded Set-Cookie line is linted here (only with a report
/// asked for: the log lints the lines it records on its own thread).
package final class RunReport: Sendable {
    private let state = Locked(FindingsReport())
    private let suffixes: PublicSuffixList

    package init(suffixes: PublicSuffixList = .system) { self.suffixes = suffixes }

    /// A Set-Cookie line as the client got it, with the rules that matched it.
    package func line(
        _ bytes: UnsafeBufferPointer<UInt8>, rules: [String], context: ExchangeContext, site: RequestSite.Kind?,
        time: Int64
    ) {
        let line = SetCookie(bytes: Array(bytes))
        let findings =
            CookieLint.findings(for: line, from: context.requestURL, now: time / 1000, suffixes: suffixes)
            + CookieLint.siteFindings(for: line, site: site)
        guard findings.contains(where: { $0.severity != .info }) else { return }
        let (host, url) = (context.host, context.url)
        state.withLock { $0.add(findings: findings, cookie: line.name, host: host, url: url, time: time, rules: rules) }
    }

    /// A request's verdicts.
    package func judged(_ verdicts: [CookieVerdict], context: ExchangeContext, time: Int64) {
        guard verdicts.contains(where: { $0.kind != .sentAsExpected }) else { return }
        let (host, url) = (context.host, context.url)
        state.withLock { $0.add(verdicts: verdicts, host: host, url: url, time: time) }
    }

    package var snapshot: FindingsReport { state.withLock { $0 } }
}
