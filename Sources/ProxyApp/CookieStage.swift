import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import HTTPHeads
import ProxyCore

/// The cookie stage of one event loop (``RulesHooks/makeStage()``): each request's cookies through the request-side
/// rules (``RulesHooks/forwardRequest(_:context:time:lintsLines:facts:)``), each response's Set-Cookie lines through the rules, and
/// every step told to the observers' parts for this loop (``LoopObserver``). One parser, one rewrite and one shape
/// cache for every line of every response of the loop: their storage is reused (the head copies what it keeps).
/// Only the loop's thread uses it.
final class CookieStage: ExchangeStage {
    let hooks: RulesHooks
    var parser = SetCookieParser()
    var rewrite = SetCookieRewrite()
    var shapes = CookieShapeCache()
    /// This loop's part of each observer: a chain, each link handing on to the next (nil: no observer); and the
    /// chain of those that read lines (``LoopObserver/readsLines``).
    let observers: Observers?
    let lineObservers: Observers?
    /// The response in hand, as the parts are lent it (refilled for each response).
    let response: ResponseInHand
    /// Where the rewritten line is copied for the parts (its storage reused from one line to the next).
    private var scratch: [UInt8] = []

    init(hooks: RulesHooks) {
        self.hooks = hooks
        let parts = hooks.observers.compactMap { $0.makeLoopObserver() }
        observers = parts.reversed().reduce(nil) { next, part in Observers(part, next: next) }
        lineObservers = parts.filter(\.readsLines).reversed().reduce(nil) { next, part in Observers(part, next: next) }
        response = ResponseInHand(tracker: hooks.tracker, engine: hooks.current)
    }

    func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) {
        // The clock is read for whoever reads the time: a part, the lifecycle's jar.
        let time = observers != nil || hooks.lifecycle ? RulesHooks.wallMilliseconds() : 0
        var facts = RulesHooks.RequestFacts()
        let engine = hooks.forwardRequest(
            &head, context: context, time: time, lintsLines: lineObservers != nil, facts: &facts)
        guard let observers else { return }
        let request = ForwardedRequest(
            context: context, sent: head, facts: consume facts, engine: engine, dryRun: hooks.dryRun, time: time)
        observers.didForwardRequest(request)
    }

    func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext) {
        let engine = hooks.current
        // The message's context lives in the plan: it is built here only when the rules read it (with the request's
        // site context, noted by the tracker, for `site` conditions); a part that reads it has it made at its ask.
        let message: MessageContext =
            engine.readsSite
            ? MessageContext(context, site: hooks.tracker.site(of: context.requestID)?.kind)
            : engine.readsMessageContext ? MessageContext(context) : .unread
        let plan = engine.cookiePlan(consume message)
        let dryRun = hooks.dryRun
        let actions = dryRun ? [] : engine.responseHeaderActions(plan.context)
        if !actions.isEmpty { RulesHooks.applyHeaderActions(actions, to: &head) }
        let observers = lineObservers
        let readsLines = dryRun || observers != nil || !plan.isEmpty || context.route?.pathMap != nil
        // The clock is read once, for a response whose Set-Cookie lines are read (received, or added by a header
        // action).
        let time =
            readsLines && (head.source.has(.setCookie) || !actions.isEmpty) ? RulesHooks.wallMilliseconds() : 0
        let response = self.response
        if self.observers != nil {
            response.refill(
                context: context, engine: engine,
                message: engine.readsSite || engine.readsMessageContext ? plan.context : nil,
                siteNoted: hooks.lifecycle || engine.readsSite || lineObservers != nil, dryRun: dryRun, time: time)
        }
        guard readsLines else { return }
        var (seen, changedCount) = (0, 0)
        var droppedLines: [Int] = []
        for index in 0..<head.count where head.name(at: index, is: .setCookie) {
            seen += 1
            var edit = RuleEngine.Edit.untouched
            // The line is parsed where it lies in the head; the rules' result is written by the rewrite, and put
            // into the head after this borrow of it ends.
            head.withValueBytes(at: index) { original in
                edit = engine.apply(
                    plan, line: original, now: time / 1000, parser: &parser, rewrite: &rewrite, shapes: &shapes)
            }
            // A reverse route mounted under another path (`/api/` → `/v1/`): the cookie's Path under the upstream's
            // path is mapped under the route's prefix, as its redirects are (nginx's `proxy_cookie_path`), so that
            // the browser sends it back to the URLs it uses.
            var mapped: [UInt8]? = nil
            if !edit.dropped, let route = context.route, route.pathMap != nil {
                if edit.rewritten {
                    rewrite.withOutput { mapped = Self.mapPath(ArraySlice($0), route) }
                } else {
                    mapped = Self.mapPath(head.valueBytes(at: index), route)
                }
                if mapped != nil {
                    edit.rewrittenBeside(note: "Path mapped under the route \(route.name), as its redirects are")
                }
            }
            let (changed, dropped) = (edit.dropped || edit.rewritten, edit.dropped)
            if let observers {
                // The received field the line is, and its bytes as a slice of the head (nothing copied); what the
                // rules made of it copied once into storage kept from line to line.
                var field: Int? = nil
                if case .original(let f) = head.lines[index] { field = f }
                let received = head.valueBytes(at: index)
                var rewritten: ArraySlice<UInt8>? = nil
                if let mapped {
                    rewritten = mapped[...]
                } else if edit.rewritten && !dropped {
                    // Copied over the last line's bytes (emptying the array first cost as much as the copy).
                    let n = rewrite.withOutput { out in
                        if scratch.count < out.count { scratch += repeatElement(0, count: out.count - scratch.count) }
                        scratch.withUnsafeMutableBufferPointer { _ = $0.update(fromContentsOf: out) }
                        return out.count
                    }
                    rewritten = scratch[..<n]
                }
                response.facts.reset()
                // The line's parts are moved in, not copied: nothing below reads them (each copy counted a
                // reference).
                observers.didDecideLine(
                    SetCookieLine(
                        received: consume received, rewritten: consume rewritten, edit: consume edit, field: field,
                        dryRun: dryRun, response: response))
            }
            guard changed && !dryRun else { continue }
            changedCount += 1
            if dropped {
                droppedLines.append(index)
            } else if let mapped {
                head.replaceValue(at: index, with: mapped)
            } else {
                rewrite.withOutput { head.replaceValue(at: index, with: $0) }
            }
        }
        if seen > 0 { hooks.seen.add(seen) }
        if changedCount > 0 { hooks.changed.add(changedCount) }
        for index in droppedLines.reversed() { head.remove(at: index) }
    }

    /// `line` with its Path mapped from `route`'s upstream path to its prefix (``RouteFacts/clientPath(_:)``); nil
    /// when it has no Path under the upstream's path.
    static func mapPath(_ line: ArraySlice<UInt8>, _ route: RouteFacts) -> [UInt8]? {
        var cookie = SetCookie(line)
        guard let path = cookie.attributes.path, let mapped = route.clientPath(path), mapped != path else { return nil }
        do {
            try cookie.set(.path, to: mapped)
        } catch {
            return nil
        }
        return cookie.bytes
    }

    func didForwardResponse(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {
        // With parts to tell, ``willForwardResponse(_:context:)`` refilled the response for this head.
        guard let observers else { return }
        observers.didForwardResponse(ForwardedResponse(inHand: response, head: head, bytes: bytes))
    }

    func exchangeEnded(_ context: ExchangeContext, _ end: ExchangeEnd) {
        if end.ending == .cut { hooks.noteCut(context, end) }
        guard let observers else { return }
        observers.exchangeEnded(EndedExchange(context: context, end: end, time: RulesHooks.wallMilliseconds()))
    }
}

/// The parts of one loop as a chain: each link calls its part, then the next link. Links and parts are immutable, so
/// handing an event down the chain counts no reference (a loop over an array of parts counted each part at each
/// call: more than the calls themselves cost).
final class Observers {
    let part: any LoopObserver
    let next: Observers?

    init(_ part: any LoopObserver, next: Observers?) { (self.part, self.next) = (part, next) }

    func didForwardRequest(_ request: borrowing ForwardedRequest) {
        part.didForwardRequest(request)
        next?.didForwardRequest(request)
    }

    func didDecideLine(_ line: borrowing SetCookieLine) {
        part.didDecideLine(line)
        next?.didDecideLine(line)
    }

    func didForwardResponse(_ response: borrowing ForwardedResponse) {
        part.didForwardResponse(response)
        next?.didForwardResponse(response)
    }

    func exchangeEnded(_ exchange: borrowing EndedExchange) {
        part.exchangeEnded(exchange)
        next?.exchangeEnded(exchange)
    }
}
