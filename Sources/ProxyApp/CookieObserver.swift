import CookieKit
import CookieLifecycle
import CookieRules
import HTTPGrammar
import ProxyCore

/// One Set-Cookie line of a response as the cookie stage decided it, lent for the length of the call: what an
/// observer reads of it (the line as received, what the rules made of it, the rules that matched, the exchange),
/// without parsing the response again or running the rules again.
package struct LineOutcome {
    /// The line as the upstream sent it.
    package let received: UnsafeBufferPointer<UInt8>
    /// What the rules made of it when they changed it (in a dry run, what they would have sent); nil when they did
    /// not change it or dropped it.
    package let rewritten: UnsafeBufferPointer<UInt8>?
    package let dropped: Bool
    /// Nothing was changed: the client got ``received``.
    package let dryRun: Bool
    /// The rules that matched, in file order.
    package let rules: [String]
    package let context: ExchangeContext
    package let site: RequestSite.Kind?
    /// Milliseconds since the epoch.
    package let time: Int64

    /// The line as the client got it: nil when a rule dropped it.
    package var forwarded: UnsafeBufferPointer<UInt8>? {
        if dryRun { return received }
        if dropped { return nil }
        return rewritten ?? received
    }
}

/// What is told what became of cookies, line by line and request by request (mitmproxy's addons, hummingbird's
/// middleware are the pictures): the run report, the metrics' counts, and any other reader, added to the cookie
/// stage's list without touching its loop.
package protocol CookieObserver: Sendable {
    /// One Set-Cookie line of a forwarded response.
    func observe(_ line: LineOutcome)
    /// A request's cookies judged against the client's jar (with the lifecycle on).
    func observe(judged: RequestJudgement, context: ExchangeContext, time: Int64)
}

extension RunReport: CookieObserver {
    package func observe(_ line: LineOutcome) {
        guard let forwarded = line.forwarded else { return }
        self.line(forwarded, rules: line.rules, context: line.context, site: line.site, time: line.time)
    }

    package func observe(judged: RequestJudgement, context: ExchangeContext, time: Int64) {
        self.judged(judged.verdicts, context: context, time: time)
    }
}

extension CookieCounts: CookieObserver {
    package func observe(_ line: LineOutcome) {
        guard !line.dryRun, line.dropped || line.rewritten != nil else { return }
        transformed(rules: line.rules, dropped: line.dropped)
    }

    package func observe(judged: RequestJudgement, context: ExchangeContext, time: Int64) {
        self.judged(judged.verdicts)
    }
}
