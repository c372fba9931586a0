import CookieInspector
import CookieKit
import CookieLifecycle
import CookieRules
import Foundation
import HTTPGrammar
import Locking
import ProxyCore

/// The rules and the log, plugged into the proxy's message heads. The rule set can be swapped at any time
/// (hot reload); each message uses the set that was current when its head arrived.
package final class RulesHooks: ProxyHooks, Sendable {
    private let engine: Locked<RuleEngine>
    package let dryRun: Bool
    package let sink: LogSink?
    /// The inspector's exchanges (nil with `--ui off`).
    package let inspector: InspectorStore?
    /// Each request's site context, and with `lifecycle` each client's cookies across requests.
    package let tracker: LifecycleTracker
    /// Whether requests are judged against the client's jar (expected vs sent) and responses fed to it.
    package let lifecycle: Bool
    package let rewritten = AtomicCounter()
    package let observed = AtomicCounter()
    /// `run --report`: findings and verdicts for CI (nil without it).
    package let report: RunReport?
    /// Transformations by rule and verdicts by kind and reason, for the metrics (nil without `--metrics`).
    package let counts: CookieCounts?
    /// What is told each line's outcome and each request's verdicts: the report, the counts, and `observers`.
    let observers: [any CookieObserver]
    /// Responses by protocol, mode and status class, for the metrics (nil without `--metrics`).
    package let responses: ResponseCounts?

    /// Hosts named with --intercept / --intercept-all.
    package let interceptFlags: HostPatternList
    /// Hosts the current rules target (their non-negated `host` conditions).
    private let ruleHosts: Locked<HostPatternList>

    package init(
        engine: RuleEngine, dryRun: Bool, sink: LogSink?, intercept: HostPatternList,
        inspector: InspectorStore? = nil, lifecycle: Bool = false, tracker: LifecycleTracker = LifecycleTracker(),
        responses: ResponseCounts? = nil, report: RunReport? = nil, observers: [any CookieObserver] = []
    ) {
        self.engine = Locked(engine)
        self.responses = responses
        let counts = responses == nil ? nil : CookieCounts()
        self.counts = counts
        self.observers = [report as (any CookieObserver)?, counts].compactMap { $0 } + observers
        self.report = report
        self.lifecycle = lifecycle
        self.tracker = tracker
        self.dryRun = dryRun
        self.sink = sink
        self.inspector = inspector
        self.interceptFlags = intercept
        self.ruleHosts = Locked(Self.targetedHosts(engine.ruleSet))
    }

    package var current: RuleEngine { engine.withLock { $0 } }
    package func replace(_ new: RuleEngine) {
        let hosts = Self.targetedHosts(new.ruleSet)
        engine.withLock { $0 = new }
        ruleHosts.withLock { $0 = hosts }
    }

    /// The hosts a rule set names in non-negated `host` conditions (`host *` names every host).
    package static func targetedHosts(_ set: RuleSet) -> HostPatternList {
        var list = HostPatternList()
        for rule in set.rules {
            for case let condition in rule.conditions where !condition.negated {
                guard case .host(let patterns) = condition.test else { continue }
                for p in patterns {
                    switch p {
                    case .exact(let h): _ = list.add(h)
                    case .subdomains(let suffix, _): _ = list.add("*." + suffix)
                    case .any: list.all = true
                    }
                }
            }
        }
        return list
    }

    /// What is intercepted, for the banner.
    package var interceptDescription: String {
        var parts: [String] = []
        if !interceptFlags.isEmpty { parts.append(interceptFlags.description) }
        let fromRules = ruleHosts.withLock { $0 }
        if !fromRules.isEmpty { parts.append("\(fromRules.description) (targeted by rules)") }
        return parts.joined(separator: "; ")
    }

    package var wantsInterception: Bool { !interceptFlags.isEmpty || !ruleHosts.withLock { $0.isEmpty } }

    package func shouldIntercept(host: String, port: Int) -> Bool {
        interceptFlags.matches(host) || ruleHosts.withLock { $0.matches(host) }
    }

    package func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) {
        responses?.requestForwarded(context.requestID)
        let engine = current
        let time = inspector != nil || lifecycle || sink != nil ? Self.wallMilliseconds() : 0
        if let inspector {
            inspector.requestForwarded(id: context.requestID, head: head.source, time: time)
        }
        // The site context (RFC 6265bis §5.2) when the lifecycle or a `site` condition reads it; kept for the
        // response by the tracker.
        var site: RequestSite? = nil
        var judgedClient: String? = nil
        if lifecycle || engine.readsSite {
            let s = tracker.site(of: head.source, context: context)
            site = s
            if lifecycle {
                // Judged on the Cookie header as the client sent it: the browser's behaviour, before any rule. The
                // log gets the requests where something was not as expected (all of their verdicts).
                let r = tracker.request(head: head.source, context: context, site: s, time: time)
                judgedClient = r.client
                for observer in observers { observer.observe(judged: r, context: context, time: time) }
                if let sink, r.verdicts.contains(where: { $0.kind != .sentAsExpected }) {
                    sink.submit(
                        records: LifecycleLog.record(r, context: context, time: time, redaction: sink.redaction),
                        count: 1)
                }
            } else {
                tracker.note(
                    context.requestID, client: tracker.client(of: head.source, address: context.clientAddress), site: s)
            }
        }
        guard engine.touchesRequests else { return }
        var message = MessageContext(context)
        message.site = site?.kind
        if !dryRun { Self.applyHeaderActions(engine.requestHeaderActions(message), to: &head) }
        if engine.editsRequestCookies {
            editRequestCookies(
                &head, engine: engine, context: context, message: message,
                client: judgedClient ?? context.clientAddress, site: site, time: time)
        }
        guard !dryRun else { return }
        for index in head.indices(of: .cookie) {
            if let renamed = engine.renameBack(cookieHeader: head.value(at: index), context: message) {
                head.replaceValue(at: index, with: renamed)
            }
        }
    }

    /// `request-cookie` actions: each Cookie field edited in place (an emptied field removed, a field added for a
    /// cookie set on a request without one); each change logged (in a dry run, logged and not made).
    private func editRequestCookies(
        _ head: inout OutgoingHead, engine: RuleEngine, context: ExchangeContext, message: MessageContext,
        client: String, site: RequestSite?, time: Int64
    ) {
        let indices = head.indices(of: .cookie)
        var headers = indices.map { CookieHeader(head.valueBytes(at: $0)) }
        let jar = lifecycle ? tracker.jarCookie(client: client, context: context, time: time) : nil
        let changes = engine.editRequestCookies(&headers, context: message, jar: jar)
        guard !changes.isEmpty else { return }
        if let sink {
            sink.submit(
                records: LifecycleLog.requestCookieRecords(
                    changes, context: context, time: time, dryRun: dryRun, redaction: sink.redaction),
                count: changes.count)
        }
        rewritten.add(changes.count)
        guard !dryRun else { return }
        for (k, index) in indices.enumerated().reversed() {
            if headers[k].bytes.isEmpty {
                head.remove(at: index)
            } else if !headers[k].bytes.elementsEqual(head.valueBytes(at: index)) {
                head.replaceValue(at: index, with: headers[k].bytes)
            }
        }
        if indices.isEmpty, let added = headers.first, !added.bytes.isEmpty {
            head.append(name: "Cookie", value: added.bytes)
        }
    }

    /// The loop's ``CookieScratch``.
    package func makeLoopStorage() -> AnyObject? { CookieScratch() }

    package func exchangeFinished(_ requestID: UInt64) { responses?.exchangeFinished(requestID) }

    package func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext, storage: AnyObject?) {
        responses?.count(context)
        let engine = current
        // The message's context lives in the plan (one copy of its strings per response, not two); it is built
        // only when the rules or the log read it.
        // The request's site context is read for `site` conditions and the log's cross-site findings.
        let plan = engine.cookiePlan(
            engine.readsSite || (lifecycle && sink != nil)
                ? MessageContext(context, site: tracker.site(of: context.requestID)?.kind)
                : engine.readsMessageContext || sink != nil ? MessageContext(context) : .unread)
        if !dryRun { Self.applyHeaderActions(engine.responseHeaderActions(plan.context), to: &head) }
        // One parser, one rewrite and one log recorder per event loop, for every line of every response: their
        // storage is reused (the head copies what it keeps). Only this hooks object makes the loop's storage.
        let scratch = storage.map { unsafeDowncast($0, to: CookieScratch.self) } ?? CookieScratch()
        // The inspector's record of this response's outcomes (read by ``didForwardResponse``) starts empty.
        if inspector != nil {
            scratch.inspected.reset()
            if scratch.inspectedEngine !== engine { scratch.inspectedEngine = engine }
        }
        guard dryRun || lifecycle || !observers.isEmpty || !plan.isEmpty else { return }
        // The observers get each line in the request's site context (read once per response).
        let observedSite = observers.isEmpty ? nil : tracker.site(of: context.requestID)?.kind
        var nowMS: Int64 = 0
        var changedCount = 0
        var seenCount = 0
        var droppedLines: [Int] = []
        var recorder: LogSink.Recorder? = nil  // set at the response's first record
        // What the client's jar is fed: each line as received, as forwarded, and the rules that matched (into the
        // loop's storage, reused from one response to the next).
        if lifecycle { scratch.lifecycle.reset(ruleNames: engine.cookieRuleNameTable) }
        for index in 0..<head.count where head.name(at: index, is: .setCookie) {
            if seenCount == 0 { nowMS = Self.wallMilliseconds() }
            seenCount += 1
            var changed = false
            var dropped = false
            // The received field the inspector knows the line by (read here: inside the borrow of the head below,
            // reading the head again copied it whole for every line).
            var inspectedField: Int? = nil
            if inspector != nil, case .original(let field) = head.lines[index] { inspectedField = field }
            // The line is parsed where it lies in the head (nothing copied); the rules' result is written by the
            // rewrite, and put into the head after this borrow of it ends.
            head.withValueBytes(at: index) { original in
                let edit = engine.apply(
                    plan, line: original, now: nowMS / 1000, parser: &scratch.parser, rewrite: &scratch.rewrite,
                    shapes: &scratch.shapes)
                (changed, dropped) = (edit.dropped || edit.rewritten, edit.dropped)
                if let field = inspectedField {
                    // The outcome as decided here: the inspector makes its Transformation from it, never running
                    // the rules again (in a dry run with the line the rules would have sent).
                    let wouldBe = dryRun && edit.rewritten ? scratch.rewrite.withOutput { Array($0) } : nil
                    scratch.inspected.append(field: field, edit: edit, wouldBe: wouldBe)
                }
                if lifecycle {
                    // The bytes only: the lifecycle parses them if and when it replays them.
                    // The rules past the 64th only when there are some (their array is not retained otherwise).
                    let rules = (
                        low: edit.matchedRulesLow, high: edit.matchedRulesBeyond64 ? edit.matchedRules.high : []
                    )
                    if dryRun || !changed {
                        scratch.lifecycle.add(
                            received: original, forwarded: original, unchanged: true, rules: rules.low,
                            rulesBeyond64: rules.high)
                    } else if edit.dropped {
                        scratch.lifecycle.add(
                            received: original, forwarded: nil, unchanged: false, rules: rules.low,
                            rulesBeyond64: rules.high)
                    } else {
                        scratch.rewrite.withOutput {
                            scratch.lifecycle.add(
                                received: original, forwarded: $0, unchanged: false, rules: rules.low,
                                rulesBeyond64: rules.high)
                        }
                    }
                }
                if !observers.isEmpty {
                    let rules = edit.matchedAny ? engine.ruleNames(edit) : []
                    func hand(_ rewritten: UnsafeBufferPointer<UInt8>?) {
                        let outcome = LineOutcome(
                            received: original, rewritten: rewritten, dropped: edit.dropped, dryRun: dryRun,
                            rules: rules, context: context, site: observedSite, time: nowMS)
                        for observer in observers { observer.observe(outcome) }
                    }
                    if edit.rewritten && !edit.dropped { scratch.rewrite.withOutput { hand($0) } } else { hand(nil) }
                }
                guard let sink, changed || edit.logRequested || dryRun else { return }
                if recorder == nil {
                    recorder = scratch.log
                    recorder!.begin(sink: sink, engine: engine, time: nowMS, dryRun: dryRun)
                }
                // The result is in the rewrite's output when it changed.
                if edit.dropped {
                    recorder!.add(original: original, result: nil, edit: edit, context: context, message: plan.context)
                } else if edit.rewritten {
                    scratch.rewrite.withOutput {
                        recorder!.add(
                            original: original, result: $0, edit: edit, context: context, message: plan.context)
                    }
                } else {
                    recorder!.add(
                        original: original, result: original, edit: edit, context: context, message: plan.context)
                }
            }
            if changed && !dryRun {
                changedCount += 1
                if dropped {
                    droppedLines.append(index)
                } else {
                    scratch.rewrite.withOutput { head.replaceValue(at: index, with: $0) }
                }
            }
        }
        if let recorder, let sink { sink.submit(recorder) }
        if lifecycle && !scratch.lifecycle.isEmpty {
            tracker.response(context: context, lines: scratch.lifecycle.result(), time: nowMS)
        }
        if seenCount > 0 { observed.add(seenCount) }
        if changedCount > 0 { rewritten.add(changedCount) }
        for index in droppedLines.reversed() { head.remove(at: index) }
    }

    /// Milliseconds since the epoch, from clock_gettime (Foundation's Date costs several times as much).
    package static func wallMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    package func didForwardResponse(
        _ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext, storage: AnyObject?
    ) {
        // What the client got, after every edit (the inspector copies the bytes the proxy wrote), and how each
        // received line's outcome was decided (noted by ``willForwardResponse`` in the loop's storage).
        guard let inspector else { return }
        let judged = lifecycle ? tracker.judged(context.requestID) : (nil, nil, nil)
        guard let storage else {
            inspector.responseForwarded(
                context: context, head: head, bytes: bytes, engine: current, dryRun: dryRun,
                time: Self.wallMilliseconds(), judged: judged)
            return
        }
        let scratch = unsafeDowncast(storage, to: CookieScratch.self)
        // The rule set the outcomes were decided under (a reload in between does not rename them).
        inspector.responseForwarded(
            context: context, head: head, bytes: bytes, engine: scratch.inspectedEngine ?? current, dryRun: dryRun,
            time: Self.wallMilliseconds(), edits: scratch.inspected, judged: judged)
    }

    package static func applyHeaderActions(_ actions: [HeaderAction], to head: inout OutgoingHead) {
        for action in actions {
            switch action {
            case .set(let name, let value):
                head.removeAll(name.lowercased())
                head.append(name: name, value: value)
            case .add(let name, let value):
                head.append(name: name, value: value)
            case .remove(let name):
                head.removeAll(name.lowercased())
            }
        }
    }
}

/// The response path's working storage, one per event loop (``RulesHooks/makeLoopStorage()``, handed back with each
/// response head by the loop's ``HeadStorage``): a response would otherwise allocate and free four buffers. Only its
/// loop's thread ever sees it.
package final class CookieScratch {
    var parser = SetCookieParser()
    var rewrite = SetCookieRewrite()
    var shapes = CookieShapeCache()
    /// Made when the loop first logs.
    lazy var log = LogSink.Recorder()
    /// A response's Set-Cookie lines for the lifecycle.
    var lifecycle = SetLinesBuilder()
    /// A response's outcomes for the inspector, one per received Set-Cookie line the rules ran on.
    var inspected = LineEdits()
    var inspectedEngine: RuleEngine? = nil
}
