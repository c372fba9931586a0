import CookieInspector
import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import Locking
import ProxyCore

/// The built-in observers, in the order they are told: the log, the inspector, the lifecycle, the run report, the
/// metrics, the access log. Each given is nil when off.
package func builtInObservers(
    log: TransformationLog?, inspector: InspectorStore?, tracker: LifecycleTracker, lifecycle: Bool, report: RunReport?,
    metrics: MetricsObserver?, accessLog: AccessLog?
) -> [any ExchangeObserver] {
    let all: [(any ExchangeObserver)?] = [
        log, inspector.map { InspectorObserver(store: $0, tracker: lifecycle ? tracker : nil) },
        lifecycle ? LifecycleObserver(tracker: tracker) : nil, report, metrics, accessLog,
    ]
    return all.compactMap { $0 }
}

extension TransformationLog.Recorder: LoopObserver {
    package func didForwardRequest(_ request: borrowing ForwardedRequest) {
        if !request.cookieEdits.isEmpty {
            sink.submit(
                records: LifecycleLog.requestCookieRecords(
                    request.cookieEdits, context: request.context, client: request.client, time: request.time,
                    dryRun: request.dryRun, redaction: log.redaction),
                count: request.cookieEdits.count)
        }
        if let judged = request.judged, judged.verdicts.contains(where: { $0.kind != .sentAsExpected }) {
            sink.submit(
                records: LifecycleLog.record(
                    judged, context: request.context, time: request.time, redaction: log.redaction),
                count: 1)
        }
    }

    /// A record for each line a rule changed or asked to log, and for every line in a dry run.
    package func didDecideLine(_ line: borrowing SetCookieLine) {
        guard line.changed || line.logRequested || line.dryRun else { return }
        if !started { start() }
        add(line)
    }

    /// The response's records handed to the sink in one piece.
    package func didForwardResponse(_ response: borrowing ForwardedResponse) {
        guard started else { return }
        started = false
        if chunk.records > 0 { chunk = sink.submit(chunk) }
    }
}

/// The inspector as an observer: each loop hands over each request as the client sent it and as it went upstream,
/// notes a response's outcomes in the compact form the inspector keeps (``LineEdits``), and hands them over with the
/// head as the client got it.
final class InspectorObserver: ExchangeObserver {
    let store: InspectorStore
    /// With the lifecycle on, where each request's judgement is kept.
    let tracker: LifecycleTracker?

    init(store: InspectorStore, tracker: LifecycleTracker?) { (self.store, self.tracker) = (store, tracker) }

    func makeLoopObserver() -> (any LoopObserver)? { Notes(store: store, tracker: tracker) }

    final class Notes: LoopObserver {
        /// This loop's recording: each request's heads until its response.
        let recorder: InspectorStore.Recorder
        let tracker: LifecycleTracker?
        /// The response's outcomes, one per received line (the storage is kept from one response to the next).
        var edits = LineEdits()

        init(store: InspectorStore, tracker: LifecycleTracker?) {
            (recorder, self.tracker) = (InspectorStore.Recorder(store: store), tracker)
        }

        func didForwardRequest(_ request: borrowing ForwardedRequest) {
            recorder.requestForwarded(
                id: request.context.requestID, head: request.received, sent: request.sent, time: request.time)
        }

        func exchangeEnded(_ exchange: borrowing EndedExchange) {
            recorder.exchangeEnded(id: exchange.context.requestID)
        }

        func didDecideLine(_ line: borrowing SetCookieLine) {
            guard let field = line.field else { return }
            if line.hasMore || (line.dryRun && line.rewritten != nil) {
                // A dry run's would-be line is kept: the inspector shows what the rules would have sent.
                edits.append(
                    field: field, edit: line.edit, wouldBe: line.dryRun ? line.rewritten.map { Array($0) } : nil)
            } else {
                edits.append(
                    field: field, matchedLow: line.matchedRulesLow, dropped: line.dropped,
                    logRequested: line.logRequested)
            }
        }

        func didForwardResponse(_ response: borrowing ForwardedResponse) {
            let context = response.context
            // The stage's reading of the clock when it read one (a response with Set-Cookie lines).
            let time = response.time > 0 ? response.time : RulesHooks.wallMilliseconds()
            recorder.responseForwarded(
                context: context, head: response.head, bytes: response.bytes, engine: response.engine,
                dryRun: response.dryRun,
                time: time, edits: edits,
                judged: tracker?.judged(context.requestID) ?? (nil, nil, nil))
            edits.reset()
        }
    }
}

/// The lifecycle as an observer: each response's lines (as received, as forwarded, the rules that matched) fed to
/// the client's jar. Each loop gathers them in its ``SetLinesBuilder``, which keeps a repeated response's block.
final class LifecycleObserver: ExchangeObserver {
    let tracker: LifecycleTracker

    init(tracker: LifecycleTracker) { self.tracker = tracker }

    func makeLoopObserver() -> (any LoopObserver)? { Lines(tracker: tracker) }

    final class Lines: LoopObserver {
        let tracker: LifecycleTracker
        var lines = SetLinesBuilder()
        /// A line of the response in hand was added (the builder was reset for it).
        var started = false

        init(tracker: LifecycleTracker) { self.tracker = tracker }

        func didDecideLine(_ line: borrowing SetCookieLine) {
            if !started {
                lines.reset(ruleNames: line.engine.cookieRuleNameTable)
                started = true
            }
            // The bytes only: the lifecycle parses them if and when it replays them. The rules past the 64th only
            // when there are some (their array is not retained otherwise).
            let unchanged = line.dryRun || !line.changed
            let forwarded = unchanged ? line.received : line.edited
            let (rules, beyond) = (line.matchedRulesLow, line.rulesBeyond64)
            line.received.withUnsafeBufferPointer { received in
                if let forwarded {
                    forwarded.withUnsafeBufferPointer { forwarded in
                        lines.add(
                            received: received, forwarded: forwarded, unchanged: unchanged, rules: rules,
                            rulesBeyond64: beyond)
                    }
                } else {
                    lines.add(
                        received: received, forwarded: nil, unchanged: unchanged, rules: rules, rulesBeyond64: beyond)
                }
            }
        }

        func didForwardResponse(_ response: borrowing ForwardedResponse) {
            guard started else { return }
            started = false
            guard !lines.isEmpty else { return }
            tracker.response(context: response.context, lines: lines.result(), time: response.time)
        }
    }
}

/// The run report (`run --report`) as an observer: the findings of each line as the client got it (rejects and
/// warnings), and the requests whose cookies were not all sent as expected.
extension RunReport: ExchangeObserver, LoopObserver {
    package func makeLoopObserver() -> (any LoopObserver)? { self }

    package func didForwardRequest(_ request: borrowing ForwardedRequest) {
        if let judged = request.judged { self.judged(judged.verdicts, context: request.context, time: request.time) }
    }

    package func didDecideLine(_ line: borrowing SetCookieLine) {
        guard let findings = line.forwardedLint?.findings,
            findings.contains(where: { $0.severity != .info })
        else { return }
        self.findings(
            findings, cookie: line.forwardedCookie?.name ?? "", rules: line.rules,
            context: line.context, time: line.time)
    }
}
