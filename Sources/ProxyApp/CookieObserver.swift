import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import Locking
import ProxyCore

/// A response as the cookie stage handles it, lent to the observers for the length of each call: the exchange, the
/// rule set its lines were decided under, the plan they ran, the mode and the time. It is a view: the exchange's
/// context is the stage's own (borrowed, not copied: a copy per response cost more than an observer's work), which
/// is why it is noncopyable and only ever lent.
package struct ResponseOutcome: ~Copyable {
    private let exchange: UnsafePointer<ExchangeContext>
    /// The plan the rules ran; its message is the request as the rules and the lint read it.
    package let plan: RuleEngine.CookiePlan
    /// The rule set the lines were decided under (a reload during the response does not rename what matched).
    package let engine: RuleEngine
    /// Nothing is changed: the client gets each line as received.
    package let dryRun: Bool
    /// Milliseconds since the epoch (read once per response with Set-Cookie lines; 0 for one without).
    package let time: Int64

    init(
        exchange: UnsafePointer<ExchangeContext>, plan: consuming RuleEngine.CookiePlan, engine: RuleEngine,
        dryRun: Bool, time: Int64
    ) {
        (self.exchange, self.plan, self.engine, self.dryRun, self.time) = (exchange, plan, engine, dryRun, time)
    }

    package var context: ExchangeContext { unsafeAddress { exchange } }
    /// The request as the rules and the lint read it: its URL and, when the lifecycle or a `site` condition
    /// worked it out, its site context (RFC 6265bis §5.2). Made when a rule or an observer reads it
    /// (``LoopCookieObserver/readsRequest``); empty otherwise.
    package var message: MessageContext { _read { yield plan.context } }
    package var site: RequestSite.Kind? { plan.context.site }
}

/// One Set-Cookie line of a response as the cookie stage decided it, lent for the length of the call: the line as
/// received, what the rules made of it, which rules matched, and what is worked out from those at most once
/// whichever observers ask (the parsed cookies, the attribute changes, the lint's findings: ``LineMemo``). A view
/// like ``ResponseOutcome``: the bytes lie in the head and the rewrite, the outcome is the stage's.
package struct LineOutcome: ~Copyable {
    /// The line as the upstream sent it.
    package let received: UnsafeBufferPointer<UInt8>
    /// What the rules made of it when they changed it (in a dry run, what they would have sent); nil when they did
    /// not change it or dropped it.
    package let rewritten: UnsafeBufferPointer<UInt8>?
    /// The received head's field the line is (nil: a line a header action added).
    package let field: Int?
    /// Nothing was changed: the client got ``received``.
    package let dryRun: Bool
    /// A rule dropped the line (in a dry run: would have).
    package let dropped: Bool
    /// A rule asked for the line to be logged.
    package let logRequested: Bool
    /// The rules among the first 64 that matched, as bits (rule `k`: bit `k`).
    package let matchedRulesLow: UInt64
    /// ``edit`` says more than the fields above: a rule past the 64th matched, or a rule left notes.
    package let hasMore: Bool
    /// A rule past the 64th matched (``rulesBeyond64`` is not empty).
    package let beyond64: Bool
    private let decided: UnsafePointer<RuleEngine.Edit>
    unowned(unsafe) let facts: LineFacts

    init(
        received: UnsafeBufferPointer<UInt8>, rewritten: UnsafeBufferPointer<UInt8>?,
        edit: UnsafePointer<RuleEngine.Edit>, field: Int?, dryRun: Bool, facts: LineFacts
    ) {
        (self.received, self.rewritten, self.decided, self.field, self.dryRun) =
            (received, rewritten, edit, field, dryRun)
        // The plain parts read once here: each read through the outcome would copy it (its arrays counted).
        (dropped, logRequested, matchedRulesLow) =
            (edit.pointee.dropped, edit.pointee.logRequested, edit.pointee.matchedRulesLow)
        beyond64 = edit.pointee.matchedRulesBeyond64
        hasMore = beyond64 || !edit.pointee.notes.isEmpty
        self.facts = facts
    }

    /// The whole of what the rules decided: which matched (by index into the engine's names), a drop, `log`, notes.
    package var edit: RuleEngine.Edit { unsafeAddress { decided } }
    /// The rules past the 64th that matched, by index (empty for nearly every line: read without copying the edit).
    package var rulesBeyond64: [Int] { beyond64 ? edit.matchedRules.high : [] }
    /// A rule changed or dropped the line (in a dry run: would have).
    package var changed: Bool { dropped || rewritten != nil }
    /// The line as the rules left it: nil when a rule dropped it (in a dry run, what they would have sent).
    package var edited: UnsafeBufferPointer<UInt8>? { dropped ? nil : rewritten ?? received }
    /// The line as the client got it: nil when a rule dropped it.
    package var forwarded: UnsafeBufferPointer<UInt8>? { dryRun ? received : edited }

    /// The names of the rules that matched, in file order.
    package func rules(_ response: borrowing ResponseOutcome) -> [String] {
        matchedRulesLow != 0 || hasMore ? response.engine.ruleNames(edit) : []
    }

    /// What is worked out from the line for the observers (its parsed cookies, the attribute changes, the lint),
    /// made when one first asks and kept for the next time the same line is decided the same way (``LineMemo``).
    func memo(_ response: borrowing ResponseOutcome) -> LineMemo { facts.memo(self, response) }

    /// What the rules did, attribute by attribute (``Transformation/changes``), with the rules' names and places.
    package func transformation(_ response: borrowing ResponseOutcome) -> Transformation {
        let memo = facts.memo(self, response)
        if let made = memo.transformation { return made }
        let received = receivedCookie(response)
        let edited = rewritten.map { SetCookie(bytes: Array($0)) } ?? received
        let made = response.engine.transformation(received: received, edited: edited, edit)
        memo.transformation = made
        return made
    }

    /// The lint of the line as the rules left it (of the received line when dropped), at the request's URL and
    /// site: what the log shows with the line's record.
    package func findings(_ response: borrowing ResponseOutcome) -> [LintFinding] { lint(response).findings }

    /// The same, with the findings' keys for counting (``Linted``).
    package func lint(_ response: borrowing ResponseOutcome) -> Linted {
        if let made = facts.current?.editedLint { return made }
        let memo = facts.memo(self, response)
        if let made = memo.editedLint { return made }
        let made = Linted(Self.lint(transformation(response).result ?? receivedCookie(response), response))
        memo.editedLint = made
        return made
    }

    /// The lint of the line as the client got it (nil when dropped): what a report of the run holds, and the
    /// metrics count.
    package func forwardedLint(_ response: borrowing ResponseOutcome) -> Linted? {
        if !dryRun || rewritten == nil { return dropped && !dryRun ? nil : lint(response) }
        if let made = facts.current?.receivedLint { return made }
        let memo = facts.memo(self, response)
        if let made = memo.receivedLint { return made }
        let made = Linted(Self.lint(receivedCookie(response), response))
        memo.receivedLint = made
        return made
    }

    /// The keys of ``forwardedLint(_:)``'s counted findings (``CountedKeys/none`` when dropped): read from the
    /// line's memo without counting references once the lint is made.
    @inline(__always)
    package func forwardedKeys(_ response: borrowing ResponseOutcome) -> CountedKeys {
        let forwardedIsEdited = !dryRun || rewritten == nil
        if forwardedIsEdited && dropped && !dryRun { return .none }
        if let keys = facts.keys(edited: forwardedIsEdited, self, response) { return keys }
        return forwardedLint(response)?.keys ?? .none
    }

    /// The cookie as received, parsed.
    package func receivedCookie(_ response: borrowing ResponseOutcome) -> SetCookie {
        let memo = facts.memo(self, response)
        if let made = memo.received { return made }
        let made = SetCookie(bytes: Array(received))
        memo.received = made
        return made
    }

    /// A digest of what the line's memo depends on besides the request: the received line hashed eight bytes at a
    /// time (``WordHash``: the standard library's byte-by-byte hashing of arrays costs more than the rest of a
    /// record), the edited line's length, the rules and the second. The edited line is a function of the rest but
    /// for the request's context, so the memo leaves its bytes to an exact comparison: a cookie rewritten two ways
    /// (for two hosts) shares a slot at worst.
    func digest(second: Int64) -> UInt64 {
        var h = WordHash.hash(UnsafeRawBufferPointer(received), seed: 0x9E37_79B9_7F4A_7C15)
        h = (h ^ UInt64(edited.map { $0.count + 1 } ?? 0)) &* 0xD6E8_FEB8_6659_FD93
        h = (h ^ matchedRulesLow) &* 0xFF51_AFD7_ED55_8CCD
        h = (h ^ UInt64(bitPattern: second)) &* 0xC4CE_B9FE_1A85_EC53
        return h ^ (h >> 29)
    }

    /// The cookie as the client got it, parsed (nil when dropped).
    package func forwardedCookie(_ response: borrowing ResponseOutcome) -> SetCookie? {
        if dryRun || rewritten == nil { return dryRun || !dropped ? receivedCookie(response) : nil }
        return transformation(response).result
    }

    static func lint(_ cookie: SetCookie, _ response: borrowing ResponseOutcome) -> [LintFinding] {
        CookieLint.findings(for: cookie, from: response.message.requestURL, now: response.time / 1000)
            + CookieLint.siteFindings(for: cookie, site: response.site)
    }
}

/// What is told what became of cookies, line by line and request by request (mitmproxy's addons, hummingbird's
/// middleware are the pictures): the log, the inspector, the lifecycle, the run report, the metrics' counts, and
/// any other reader, added to the cookie stage's list without touching its loop.
package protocol CookieObserver: Sendable {
    /// This observer's part for one event loop, which is handed that loop's responses (what it keeps across them,
    /// a cache or a response's notes, is its own and only that loop's thread reads it). Nil: it reads no line.
    func makeLoopObserver() -> (any LoopCookieObserver)?
}

/// An observer that is also told each request's cookies judged against the client's jar (with the lifecycle on):
/// each request with one verdict or more (a request without cookies, from a client expected to send none, has
/// nothing to tell).
package protocol JudgementObserver: CookieObserver {
    func observe(judged: RequestJudgement, context: ExchangeContext, time: Int64)
}

/// An observer's part on one event loop: each response's Set-Cookie lines, in order, between ``begin(_:)`` and
/// ``end(_:)`` (called for every response the stage reads, with lines or none), then the head as the client got it.
package protocol LoopCookieObserver: AnyObject {
    /// Whether it reads ``ResponseOutcome/message`` (the request's URL and site context: the lint does).
    var readsRequest: Bool { get }
    func begin(_ response: borrowing ResponseOutcome)
    func observe(_ line: borrowing LineOutcome, of response: borrowing ResponseOutcome)
    func end(_ response: borrowing ResponseOutcome)
    /// The head as it was written for the client (its bytes; empty for an HTTP/2 client).
    func forwarded(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext)
}

extension LoopCookieObserver {
    package var readsRequest: Bool { false }
    package func begin(_ response: borrowing ResponseOutcome) {}
    package func end(_ response: borrowing ResponseOutcome) {}
    package func forwarded(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {}
}

extension RunReport: JudgementObserver, LoopCookieObserver {
    package func makeLoopObserver() -> (any LoopCookieObserver)? { self }
    /// It lints each line at the request's URL.
    package var readsRequest: Bool { true }

    package func observe(_ line: borrowing LineOutcome, of response: borrowing ResponseOutcome) {
        guard let findings = line.forwardedLint(response)?.findings,
            findings.contains(where: { $0.severity != .info })
        else { return }
        self.findings(
            findings, cookie: line.forwardedCookie(response)?.name ?? "", rules: line.rules(response),
            context: response.context, time: response.time)
    }

    package func observe(judged: RequestJudgement, context: ExchangeContext, time: Int64) {
        self.judged(judged.verdicts, context: context, time: time)
    }
}

extension CookieCounts: JudgementObserver {
    package func makeLoopObserver() -> (any LoopCookieObserver)? { Part(self) }

    package func observe(judged: RequestJudgement, context: ExchangeContext, time: Int64) {
        self.judged(judged.verdicts)
    }

    /// One loop's counting: the lines the rules changed, by rule, and the findings of each line as the client got
    /// it, by code and severity (``FindingKeys``), added as each line is seen to the loop's ``LoopCounts``.
    final class Part: LoopCookieObserver {
        let counts: CookieCounts
        /// The loop's counts under the rule set of the response in hand (made at the loop's first response).
        var current: LoopCounts? = nil
        /// ``current``'s rows, added to without counting references (``current`` keeps them; before it, an empty
        /// row).
        var rewritten = Part.none.unretained
        var dropped = Part.none.unretained
        var findings = Part.none.unretained
        /// ``current``'s rule set's rules that drop a line and those that edit one (``RuleEngine/cookieRuleDrops``),
        /// taken once per rule set, not per line.
        var drops: [Bool] = []
        var edits: [Bool] = []
        private static let none = AtomicCounters(count: 0)

        init(_ counts: CookieCounts) { self.counts = counts }

        /// The lint reads the request's URL.
        var readsRequest: Bool { true }

        /// The loop's counts are replaced: for another rule set, or with room for `findingKeys` keys.
        private func replace(engine: RuleEngine, findingKeys: Int) {
            let made = counts.replace(current, engine: engine, findingKeys: findingKeys)
            (current, rewritten, dropped, findings) =
                (made, made.rewritten.unretained, made.dropped.unretained, made.findings.unretained)
            (drops, edits) = (engine.cookieRuleDrops, engine.cookieRuleEdits)
        }

        func begin(_ response: borrowing ResponseOutcome) {
            if current?.engine !== response.engine {
                replace(engine: response.engine, findingKeys: max(findings.count, 64))
            }
        }

        func observe(_ line: borrowing LineOutcome, of response: borrowing ResponseOutcome) {
            if !line.dryRun, line.changed {
                // Each rule that did it: a drop counts for the rules that drop, a rewrite for those that edit.
                let (counters, did) = line.dropped ? (dropped, drops) : (rewritten, edits)
                var bits = line.matchedRulesLow
                while bits != 0 {
                    let k = bits.trailingZeroBitCount
                    if k < counters.count && did[k] { counters.add(k, 1) }
                    bits &= bits - 1
                }
                if line.beyond64 {
                    for k in line.rulesBeyond64 where k < counters.count && did[k] { counters.add(k, 1) }
                }
            }
            let keys = line.forwardedKeys(response)
            if keys == .overflow {
                for key in line.forwardedLint(response)?.counted ?? [] { count(key, response) }
            } else {
                keys.forEach { count($0, response) }
            }
        }

        @inline(__always)
        private func count(_ key: Int, _ response: borrowing ResponseOutcome) {
            if key >= findings.count { replace(engine: response.engine, findingKeys: max(key + 1, 2 * findings.count)) }
            findings.add(key, 1)
        }
    }
}
