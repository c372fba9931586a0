import CookieInspector
import CookieKit
import CookieRules
import Foundation
import ProxyCore
import Locking

/// The rules and the log, plugged into the proxy's message heads. The rule set can be swapped at any time
/// (hot reload); each message uses the set that was current when its head arrived.
package final class RulesHooks: ProxyHooks, Sendable {
    private let engine: Locked<RuleEngine>
    package let dryRun: Bool
    package let sink: LogSink?
    /// The inspector's exchanges (nil with `--ui off`).
    package let inspector: InspectorStore?
    package let rewritten = AtomicCounter()
    package let observed = AtomicCounter()

    /// Hosts named with --intercept / --intercept-all.
    package let interceptFlags: HostPatternList
    /// Hosts the current rules target (their non-negated `host` conditions).
    private let ruleHosts: Locked<HostPatternList>

    package init(
        engine: RuleEngine, dryRun: Bool, sink: LogSink?, intercept: HostPatternList,
        inspector: InspectorStore? = nil
    ) {
        self.engine = Locked(engine)
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

    package static func messageContext(_ c: ExchangeContext) -> MessageContext {
        MessageContext(scheme: c.scheme, host: c.host, port: c.port, path: c.path, method: c.method, status: c.status)
    }

    package func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) {
        if let inspector {
            inspector.requestForwarded(
                id: context.requestID, head: head.source, time: Self.wallMilliseconds())
        }
        let engine = current
        guard engine.touchesRequests, !dryRun else { return }
        let message = Self.messageContext(context)
        Self.applyHeaderActions(engine.requestHeaderActions(message), to: &head)
        for index in head.indices(of: .cookie) {
            if let renamed = engine.renameBack(cookieHeader: head.value(at: index), context: message) {
                head.replaceValue(at: index, with: renamed)
            }
        }
    }

    /// The loop's ``CookieScratch``.
    package func makeLoopStorage() -> AnyObject? { CookieScratch() }

    package func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext, storage: AnyObject?) {
        let engine = current
        // The message's context lives in the plan (one copy of its strings per response, not two); it is built
        // only when the rules or the log read it.
        let plan = engine.cookiePlan(
            engine.readsMessageContext || sink != nil ? Self.messageContext(context) : .unread)
        if !dryRun { Self.applyHeaderActions(engine.responseHeaderActions(plan.context), to: &head) }
        guard dryRun || !plan.isEmpty else { return }
        var nowMS: Int64 = 0
        var changedCount = 0
        var seenCount = 0
        var droppedLines: [Int] = []
        var recorder: LogSink.Recorder? = nil  // set at the response's first record
        // One parser, one rewrite and one log recorder per event loop, for every line of every response: their
        // storage is reused (the head copies what it keeps). Only this hooks object makes the loop's storage.
        let scratch = storage.map { unsafeDowncast($0, to: CookieScratch.self) } ?? CookieScratch()
        for index in 0..<head.count where head.name(at: index, is: .setCookie) {
            if seenCount == 0 { nowMS = Self.wallMilliseconds() }
            seenCount += 1
            var changed = false
            var dropped = false
            // The line is parsed where it lies in the head (nothing copied); the rules' result is written by the
            // rewrite, and put into the head after this borrow of it ends.
            head.withValueBytes(at: index) { original in
                let edit = engine.apply(
                    plan, line: original, now: nowMS / 1000, parser: &scratch.parser, rewrite: &scratch.rewrite,
                    shapes: &scratch.shapes)
                (changed, dropped) = (edit.dropped || edit.rewritten, edit.dropped)
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

    package func didForwardResponse(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {
        // What the client got, after every edit (the inspector copies the bytes the proxy wrote).
        guard let inspector else { return }
        inspector.responseForwarded(
            context: context, head: head, bytes: bytes, engine: current, dryRun: dryRun, time: Self.wallMilliseconds())
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
}
