import CookieKit

extension RuleEngine {
    /// ``apply(_:to:now:rewrite:)`` for a line as received, its outcome taken from `shapes` when the plan allows
    /// it (and kept there when it was worked out in full): the proxy's path. `parser` parses the line when it must
    /// be; the result is in `rewrite`'s output when ``Edit/rewritten``, as there.
    package func apply(
        _ plan: CookiePlan, line: UnsafeBufferPointer<UInt8>, now: Int64, parser: inout SetCookieParser,
        rewrite: inout SetCookieRewrite, shapes: inout CookieShapeCache
    ) -> Edit {
        guard let planKey = plan.shapeKey, let pairEnd = SetCookie.pairEnd(ifSound: line) else {
            return apply(plan, to: parser.parse(line), now: now, rewrite: &rewrite)
        }
        let pair = UnsafeBufferPointer(rebasing: line[..<pairEnd])
        let shape = UnsafeBufferPointer(rebasing: line[pairEnd...])
        let hash = CookieShapeCache.hash(shape, seed: planKey)
        if let edit = shapes.outcome(self, plan: planKey, shape: shape, hash: hash, pair: pair, rewrite: &rewrite) {
            return edit
        }
        let edit = apply(plan, to: parser.parse(line), now: now, rewrite: &rewrite)
        shapes.keep(edit, plan: planKey, shape: shape, hash: hash, pair: pair, rewrite: &rewrite)
        return edit
    }
}
