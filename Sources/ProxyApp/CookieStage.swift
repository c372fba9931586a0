import CookieKit
import CookieRules
import ExchangeFacts
import HTTPGrammar
import ProxyCore

/// The cookie stage of one event loop (``RulesHooks/makeResponseStage()``): each response's Set-Cookie lines run
/// through the rules, and each line's outcome handed to the observers' parts for this loop. One parser, one rewrite
/// and one shape cache for every line of every response of the loop: their storage is reused (the head copies what
/// it keeps). Only the loop's thread uses it.
final class CookieStage: ResponseStage {
    let hooks: RulesHooks
    var parser = SetCookieParser()
    var rewrite = SetCookieRewrite()
    var shapes = CookieShapeCache()
    /// This loop's part of each of the hooks' observers, which are told each line's outcome: a chain, each link
    /// handing on to the next (nil: no observer).
    let observers: Observers?
    /// What observers work out from a line (its parsed cookies, its lint), once for all of them.
    let facts = LineFacts()
    /// Whether an observer reads the request's URL and site context (the message is made for it).
    let readsRequest: Bool

    init(hooks: RulesHooks) {
        self.hooks = hooks
        let parts = hooks.observers.compactMap { $0.makeLoopObserver() }
        observers = parts.reversed().reduce(nil) { next, part in Observers(part, next: next) }
        readsRequest = parts.contains { $0.readsRequest }
    }

    func willForward(_ head: inout OutgoingHead, context: ExchangeContext) {
        // Counted from the borrowed context (through the pointer below it was copied).
        hooks.responses?.count(context)
        withUnsafePointer(to: context) { forward(&head, context: $0) }
    }

    private func forward(_ head: inout OutgoingHead, context: UnsafePointer<ExchangeContext>) {
        let engine = hooks.current
        let observing = observers != nil
        // The message's context lives in the plan (one copy of its strings per response, not two); it is built
        // only when the rules or an observer read it, with the request's site context (noted by the tracker) for
        // `site` conditions and, with the lifecycle on, the observers' cross-site findings.
        let message: MessageContext =
            engine.readsSite || (readsRequest && hooks.lifecycle)
            ? MessageContext(context.pointee, site: hooks.tracker.site(of: context.pointee.requestID)?.kind)
            : engine.readsMessageContext || readsRequest ? MessageContext(context.pointee) : .unread
        let plan = engine.cookiePlan(consume message)
        let dryRun = hooks.dryRun
        let actions = dryRun ? [] : engine.responseHeaderActions(plan.context)
        if !actions.isEmpty { RulesHooks.applyHeaderActions(actions, to: &head) }
        guard dryRun || observing || !plan.isEmpty else { return }
        // The clock is read once, for a response with Set-Cookie lines (received, or added by a header action).
        let time = head.source.has(.setCookie) || !actions.isEmpty ? RulesHooks.wallMilliseconds() : 0
        let response = ResponseOutcome(
            exchange: context, plan: consume plan, engine: engine, dryRun: dryRun, time: time)
        let observers = self.observers
        let facts = self.facts
        observers?.begin(response)
        var changedCount = 0
        var seenCount = 0
        var droppedLines: [Int] = []
        for index in 0..<head.count where head.name(at: index, is: .setCookie) {
            seenCount += 1
            var changed = false
            var dropped = false
            // The received field the line is (read here: inside the borrow of the head below, reading the head
            // again copied it whole for every line).
            var field: Int? = nil
            if observing, case .original(let f) = head.lines[index] { field = f }
            // The line is parsed where it lies in the head (nothing copied); the rules' result is written by the
            // rewrite, and put into the head after this borrow of it ends.
            head.withValueBytes(at: index) { original in
                var edit = engine.apply(
                    response.plan, line: original, now: time / 1000, parser: &parser, rewrite: &rewrite,
                    shapes: &shapes)
                (changed, dropped) = (edit.dropped || edit.rewritten, edit.dropped)
                guard observing else { return }
                facts.reset()
                // Each observer is lent the line's outcome in turn.
                withUnsafePointer(to: &edit) { edit in
                    if edit.pointee.rewritten && !edit.pointee.dropped {
                        rewrite.withOutput { out in
                            let line = LineOutcome(
                                received: original, rewritten: out, edit: edit, field: field, dryRun: dryRun,
                                facts: facts)
                            observers?.observe(line, of: response)
                        }
                    } else {
                        let line = LineOutcome(
                            received: original, rewritten: nil, edit: edit, field: field, dryRun: dryRun,
                            facts: facts)
                        observers?.observe(line, of: response)
                    }
                }
            }
            if changed && !dryRun {
                changedCount += 1
                if dropped {
                    droppedLines.append(index)
                } else {
                    rewrite.withOutput { head.replaceValue(at: index, with: $0) }
                }
            }
        }
        observers?.end(response)
        if seenCount > 0 { hooks.observed.add(seenCount) }
        if changedCount > 0 { hooks.rewritten.add(changedCount) }
        for index in droppedLines.reversed() { head.remove(at: index) }
    }

    func didForward(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {
        observers?.forwarded(head, bytes: bytes, context: context)
    }
}

/// The observers' parts of one loop as a chain: each link calls its part, then the next link. Links and parts are
/// immutable, so handing a line down the chain counts no reference (a loop over an array of parts counted each part
/// at each call: more than the calls themselves cost).
final class Observers {
    let part: any LoopCookieObserver
    let next: Observers?

    init(_ part: any LoopCookieObserver, next: Observers?) { (self.part, self.next) = (part, next) }

    func begin(_ response: borrowing ResponseOutcome) {
        part.begin(response)
        next?.begin(response)
    }

    func observe(_ line: borrowing LineOutcome, of response: borrowing ResponseOutcome) {
        part.observe(line, of: response)
        next?.observe(line, of: response)
    }

    func end(_ response: borrowing ResponseOutcome) {
        part.end(response)
        next?.end(response)
    }

    func forwarded(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {
        part.forwarded(head, bytes: bytes, context: context)
        next?.forwarded(head, bytes: bytes, context: context)
    }
}
