import CookieInspector
import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import ProxyCore

/// The log as an observer: each loop formats its responses' records into its own ``LogSink/Recorder``; a request
/// whose cookies were not all sent as expected gets a record of its verdicts.
extension LogSink: JudgementObserver {
    package func makeLoopObserver() -> (any LoopCookieObserver)? { Recorder(sink: self) }

    package func observe(judged: RequestJudgement, context: ExchangeContext, time: Int64) {
        guard judged.verdicts.contains(where: { $0.kind != .sentAsExpected }) else { return }
        submit(records: LifecycleLog.record(judged, context: context, time: time, redaction: redaction), count: 1)
    }
}

extension LogSink.Recorder: LoopCookieObserver {
    /// A record has the request's URL, and the lint of its line at that URL.
    package var readsRequest: Bool { true }

    package func begin(_ response: borrowing ResponseOutcome) { started = false }

    /// A record for each line a rule changed or asked to log, and for every line in a dry run.
    package func observe(_ line: borrowing LineOutcome, of response: borrowing ResponseOutcome) {
        guard line.changed || line.logRequested || line.dryRun else { return }
        if !started { start(response) }
        add(line, of: response)
    }

    /// The response's records handed to the sink in one piece.
    package func end(_ response: borrowing ResponseOutcome) { if started { sink.submit(self) } }
}

/// The inspector as an observer: each loop notes a response's outcomes in the compact form the inspector keeps
/// (``LineEdits``), and hands them over with the head as the client got it.
final class InspectorObserver: CookieObserver {
    let store: InspectorStore
    /// With the lifecycle on, where each request's judgement is kept.
    let tracker: LifecycleTracker?

    init(store: InspectorStore, tracker: LifecycleTracker?) { (self.store, self.tracker) = (store, tracker) }

    func makeLoopObserver() -> (any LoopCookieObserver)? { Notes(store: store, tracker: tracker) }

    final class Notes: LoopCookieObserver {
        let store: InspectorStore
        let tracker: LifecycleTracker?
        /// The response's outcomes, one per received line (the storage is kept from one response to the next).
        var edits = LineEdits()
        /// The rule set the outcomes were decided under (a reload in between does not rename them).
        var engine: RuleEngine? = nil
        var dryRun = false

        init(store: InspectorStore, tracker: LifecycleTracker?) { (self.store, self.tracker) = (store, tracker) }

        func begin(_ response: borrowing ResponseOutcome) {
            edits.reset()
            if engine !== response.engine { engine = response.engine }
            dryRun = response.dryRun
        }

        func observe(_ line: borrowing LineOutcome, of response: borrowing ResponseOutcome) {
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

        func forwarded(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {
            guard let engine else { return }
            store.responseForwarded(
                context: context, head: head, bytes: bytes, engine: engine, dryRun: dryRun,
                time: RulesHooks.wallMilliseconds(), edits: edits,
                judged: tracker?.judged(context.requestID) ?? (nil, nil, nil))
        }
    }
}

/// The lifecycle as an observer: each response's lines (as received, as forwarded, the rules that matched) fed to
/// the client's jar. Each loop gathers them in its ``SetLinesBuilder``, which keeps a repeated response's block.
final class LifecycleObserver: CookieObserver {
    let tracker: LifecycleTracker

    init(tracker: LifecycleTracker) { self.tracker = tracker }

    func makeLoopObserver() -> (any LoopCookieObserver)? { Lines(tracker: tracker) }

    final class Lines: LoopCookieObserver {
        let tracker: LifecycleTracker
        var lines = SetLinesBuilder()

        init(tracker: LifecycleTracker) { self.tracker = tracker }

        func begin(_ response: borrowing ResponseOutcome) {
            lines.reset(ruleNames: response.engine.cookieRuleNameTable)
        }

        func observe(_ line: borrowing LineOutcome, of response: borrowing ResponseOutcome) {
            // The bytes only: the lifecycle parses them if and when it replays them. The rules past the 64th only
            // when there are some (their array is not retained otherwise).
            let unchanged = line.dryRun || !line.changed
            lines.add(
                received: line.received, forwarded: unchanged ? line.received : line.edited, unchanged: unchanged,
                rules: line.matchedRulesLow, rulesBeyond64: line.rulesBeyond64)
        }

        func end(_ response: borrowing ResponseOutcome) {
            guard !lines.isEmpty else { return }
            tracker.response(context: response.context, lines: lines.result(), time: response.time)
        }
    }
}
