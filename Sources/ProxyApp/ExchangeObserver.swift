import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import HTTPHeads
import ProxyCore

/// What is told what the proxy carried, exchange by exchange (mitmproxy's hooks and hummingbird's middleware are the
/// pictures): the transformation log, the access log, the inspector, the lifecycle, the run report and the metrics
/// are observers, and so is any other given to ``ProxyApp/Configuration/observers``, with no other change.
///
/// An observer is two things, and the protocols say which is which:
/// - the observer itself (this protocol) is shared by every event loop, so it is `Sendable`: what it holds for all of
///   them (a total, a file, a store) is behind its own lock or atomic, or immutable;
/// - it makes a part for each event loop (``makeLoopObserver()``, a ``LoopObserver``); each part is told that loop's
///   exchanges, from that loop's thread alone, so what it keeps across them (a cache, a response's notes) is its own
///   and needs no lock. Nil: it reads nothing.
///
/// `Examples/CookiesPerRoute` is an observer written outside this package: a total per route behind a lock, and a
/// part per loop that counts a response's lines before adding them in once.
public protocol ExchangeObserver: Sendable {
    func makeLoopObserver() -> (any LoopObserver)?
}

/// One observer's part on one event loop. The events are the cookie stage's steps (``CookieStage``, the loop's
/// ``ExchangeStage``) in the same words, told after each step: for each exchange, in order,
/// ``didForwardRequest(_:)`` once its request's head is made for the upstream (the stage's `willForwardRequest`
/// done; before the upstream is reached: an upstream that is down still gets it), ``didDecideLine(_:)`` for each
/// Set-Cookie line of its response as the rules decided it (during the stage's `willForwardResponse`),
/// ``didForwardResponse(_:)`` once the response's head was written for the client (`didForwardResponse`), and
/// ``exchangeEnded(_:)`` once, however it ended (`exchangeEnded`). A request the proxy refused before routing it,
/// and a CONNECT tunnel, get only the last; one whose upstream could not be reached gets the first and the last.
/// Every event has a default that does nothing: a part implements what it reads.
///
/// The events are lent for the call and cannot be kept past it: each is noncopyable and passed `borrowing`, so the
/// compiler refuses to store one (the response's lines are read from the loop's own object, refilled for the next
/// response). Keep what you need from them: their properties are values.
public protocol LoopObserver: AnyObject {
    /// Whether it is told each line (``didDecideLine(_:)``); true unless it says otherwise. A part that reads no line
    /// says false, and a response's lines then cost it nothing (when no part reads lines and no rule applies, the
    /// stage does not read them at all).
    var readsLines: Bool { get }
    func didForwardRequest(_ request: borrowing ForwardedRequest)
    func didDecideLine(_ line: borrowing SetCookieLine)
    func didForwardResponse(_ response: borrowing ForwardedResponse)
    func exchangeEnded(_ exchange: borrowing EndedExchange)
}

extension LoopObserver {
    public var readsLines: Bool { true }
    public func didForwardRequest(_ request: borrowing ForwardedRequest) {}
    public func didDecideLine(_ line: borrowing SetCookieLine) {}
    public func didForwardResponse(_ response: borrowing ForwardedResponse) {}
    public func exchangeEnded(_ exchange: borrowing EndedExchange) {}
}

/// A request as it went upstream: what the client sent, what the upstream got (after a route's target and Host,
/// `X-Forwarded-*`, header actions and request-cookie rules), the cookie edits made on the way, and, with the
/// lifecycle on, its cookies judged against the client's jar.
public struct ForwardedRequest: ~Copyable {
    public let context: ExchangeContext
    /// The head as the client sent it.
    public var received: HTTPHead { sent.source }
    /// The head as it went upstream (for an upstream that takes parts, an HTTP/2 stream, its fields and target; the
    /// start line says HTTP/1.1).
    public let sent: OutgoingHead
    /// The target as sent upstream (a route's prefix mapped to its upstream's path), read from ``sent``.
    public var target: String { sent.requestTarget }
    /// What the request side found, moved in whole (copying its parts out counted each of them once more).
    let facts: RulesHooks.RequestFacts
    /// What `request-cookie` rules changed (in a dry run: would have); empty for nearly every request.
    public var cookieEdits: [RequestCookieChange] { facts.cookieEdits }
    /// The request's cookies judged against the client's jar (the lifecycle on; nil otherwise).
    public var judged: RequestJudgement? { facts.judged }
    /// The request's site context (RFC 6265bis §5.2), when the lifecycle or a `site` condition worked it out.
    public var site: RequestSite? { facts.site }
    /// The client's key (its address, or the `--client-by` header's value) when it was worked out; else the address.
    public var client: String { facts.client ?? context.clientAddress }
    /// The rule set the request was edited under.
    public let engine: RuleEngine
    public let dryRun: Bool
    /// Milliseconds since the epoch.
    public let time: Int64
}

/// A response as its head was written for the client: the exchange, the head as sent and its bytes, and what the
/// stage decided it under (the rule set, the mode, the time).
public struct ForwardedResponse: ~Copyable {
    /// The loop's response in hand (refilled for the next response: this event is not kept past its call).
    let inHand: ResponseInHand
    /// The head as the client got it.
    public let head: OutgoingHead
    /// The head's bytes as written (HTTP/1.1; for an HTTP/2 client, the same head in HTTP/1.1 form).
    public let bytes: ArraySlice<UInt8>

    // Not inlined: Swift 6.3.1's optimizer crashes inlining this noncopyable struct's construction from borrowed
    // values ("Cannot initialize a nonCopyable type with a guaranteed value"); one call per response.
    @inline(never)
    init(inHand: ResponseInHand, head: OutgoingHead, bytes: ArraySlice<UInt8>) {
        (self.inHand, self.head, self.bytes) = (inHand, head, bytes)
    }

    public var context: ExchangeContext { inHand.context }
    /// The rule set its lines were decided under.
    public var engine: RuleEngine { inHand.engine }
    /// Nothing was changed: the client got each line as received.
    public var dryRun: Bool { inHand.dryRun }
    /// Milliseconds since the epoch, read once for a response with Set-Cookie lines; 0 for one without.
    public var time: Int64 { inHand.time }
}

/// The response the cookie stage has in hand: the exchange, the rule set its lines were decided under, the mode and
/// the time, and what is worked out about its request when first asked (its URL and site context: the lint reads
/// them). One per event loop, refilled for each response; read through the events (``SetCookieLine``,
/// ``ForwardedResponse``), which cannot be kept past their call.
package final class ResponseInHand {
    package private(set) var context: ExchangeContext
    /// The rule set the lines were decided under (a reload during the response does not rename what matched).
    package private(set) var engine: RuleEngine
    /// Nothing is changed: the client gets each line as received.
    package private(set) var dryRun: Bool
    /// Milliseconds since the epoch (read once per response with Set-Cookie lines; 0 for one without).
    package private(set) var time: Int64
    /// The request as the rules read it, when they did (made with the plan); else made at the first ask. In a box
    /// of its own, whose constant is lent without a copy (lending an object's variable copied every string it
    /// holds, at every line).
    private var made: MessageBox? = nil
    /// Whether the request's site context was noted (the lifecycle on, or a `site` condition), to be read back.
    private var siteNoted = false
    /// The request's site context as the lint reads it, once read back (``isPlace(_:)``, ``messageBox``).
    private var site: RequestSite.Kind?? = nil
    private let tracker: LifecycleTracker
    /// The loop's memo table, where the line in hand's memo is looked up when a part first asks.
    let facts = LineFacts()

    init(tracker: LifecycleTracker, engine: RuleEngine) {
        self.tracker = tracker
        (context, self.engine, dryRun, time) = (.empty, engine, false, 0)
    }

    /// The next response's facts; `message`: the request as the rules read it, when they did.
    func refill(
        context: ExchangeContext, engine: RuleEngine, message: MessageContext?, siteNoted: Bool, dryRun: Bool,
        time: Int64
    ) {
        self.context = context
        if self.engine !== engine { self.engine = engine }
        made = message.map { MessageBox($0) }
        self.siteNoted = siteNoted
        site = nil
        place = nil
        facts.startResponse()
        (self.dryRun, self.time) = (dryRun, time)
    }

    /// The request as the rules and the lint read it: its URL and site context (RFC 6265bis §5.2, when the lifecycle
    /// or a `site` condition worked it out for the request). Made at the first ask when the rules did not make it.
    package var message: MessageContext { withMessage { $0 } }

    /// `body` with ``message``, lent rather than copied (a copy counts every string and array it holds).
    package func withMessage<R>(_ body: (borrowing MessageContext) -> R) -> R { body(messageBox.message) }

    /// ``message`` in its box (made at the first ask).
    var messageBox: MessageBox {
        if let made { return made }
        let box = MessageBox(MessageContext(context, site: requestSite))
        made = box
        return box
    }

    /// The request's site context as noted for it (nil when it was not worked out), read back once.
    private var requestSite: RequestSite.Kind? {
        if let site { return site }
        let read = siteNoted ? tracker.site(of: context.requestID)?.kind : nil
        site = .some(read)
        return read
    }

    /// The place a memo of this response's lines was found or made at (``isPlace(_:)``): the next line's memo
    /// usually holds the same one.
    private(set) var place: LintPlace? = nil

    /// Whether `place` is this response's request's (compared with the rules' message when they made one, else
    /// with the exchange's own fields: no message is made for a memo found again), once per response for the place
    /// its lines' memos share.
    func isPlace(_ place: LintPlace) -> Bool {
        if place === self.place { return true }
        let same = made.map { place.isFor($0) } ?? place.isFor(context, site: requestSite)
        if same { self.place = place }
        return same
    }

    /// The place to keep with a new memo of this response's line: the one found for it, or a new one.
    func newPlace() -> LintPlace {
        if let place { return place }
        let made = LintPlace(messageBox.message)
        place = made
        return made
    }
}

/// A request's ``MessageContext`` in an object of its own, whose constant is read in place (reading it out of an
/// object's variable, or lending it as a whole, copied every string it holds, at every line).
final class MessageBox {
    let message: MessageContext
    init(_ message: consuming MessageContext) { self.message = message }
}

/// One Set-Cookie line of a response as the cookie stage decided it: the line as received, what the rules made of it,
/// which rules matched; and what is worked out from those at most once whichever parts ask (the parsed cookies, the
/// attribute changes, the lint's findings), kept for the next time the same line is decided the same way
/// (``LineMemo``).
public struct SetCookieLine: ~Copyable {
    /// The line's value as the upstream sent it.
    public let received: ArraySlice<UInt8>
    /// What the rules made of it when they changed it (in a dry run, what they would have sent); nil when they did
    /// not change it or dropped it.
    public let rewritten: ArraySlice<UInt8>?
    /// The whole of what the rules decided: which matched (by index into the engine's names), a drop, `log`, notes.
    public let edit: RuleEngine.Edit
    /// The received head's field the line is (nil: a line a header action added).
    public let field: Int?
    /// Nothing was changed: the client got ``received``.
    public let dryRun: Bool
    /// The loop's response in hand, whose facts the line's accessors read (refilled for the next response: this
    /// event is not kept past its call). A strong reference, counted once when the line is made: every accessor
    /// then reads it from the borrowed line without counting it again (an `unowned(unsafe)` one was counted at
    /// each read, five times a line).
    let response: ResponseInHand

    init(
        received: ArraySlice<UInt8>, rewritten: ArraySlice<UInt8>?, edit: RuleEngine.Edit, field: Int?, dryRun: Bool,
        response: ResponseInHand
    ) {
        (self.received, self.rewritten, self.edit, self.field, self.dryRun) = (received, rewritten, edit, field, dryRun)
        self.response = response
    }

    /// The exchange the line's response belongs to.
    public var context: ExchangeContext { response.context }
    /// Milliseconds since the epoch, read once for the response.
    public var time: Int64 { response.time }
    /// The rule set the line was decided under.
    public var engine: RuleEngine { response.engine }
    /// A rule dropped the line (in a dry run: would have).
    public var dropped: Bool { edit.dropped }
    /// A rule asked for the line to be logged.
    public var logRequested: Bool { edit.logRequested }
    /// The rules among the first 64 that matched, as bits (rule `k`: bit `k`).
    public var matchedRulesLow: UInt64 { edit.matchedRulesLow }
    /// A rule past the 64th matched (``rulesBeyond64`` is not empty).
    public var beyond64: Bool { edit.matchedRulesBeyond64 }
    /// ``edit`` says more than its bits: a rule past the 64th matched, or a rule left notes.
    public var hasMore: Bool { beyond64 || edit.hasNotes }
    /// The rules past the 64th that matched, by index.
    public var rulesBeyond64: [Int] { beyond64 ? edit.matchedRules.high : [] }
    /// A rule changed or dropped the line (in a dry run: would have).
    public var changed: Bool { dropped || rewritten != nil }
    /// The line as the rules left it: nil when a rule dropped it (in a dry run, what they would have sent).
    public var edited: ArraySlice<UInt8>? { dropped ? nil : rewritten ?? received }
    /// The line as the client got it: nil when a rule dropped it.
    public var forwarded: ArraySlice<UInt8>? { dryRun ? received : edited }

    /// Whether ``edited`` (the line not dropped) is `bytes`, compared where the line lies.
    func editedIs(_ bytes: [UInt8]) -> Bool {
        switch rewritten {
        case .some(let r): LifecycleTracker.sameBytes(bytes, r)
        case .none: LifecycleTracker.sameBytes(bytes, received)
        }
    }

    /// The names of the rules that matched, in file order.
    public var rules: [String] { matchedRulesLow != 0 || hasMore ? response.engine.ruleNames(edit) : [] }

    /// What is worked out from the line (its parsed cookies, the attribute changes, the lint), made when a part
    /// first asks and kept for the next time the same line is decided the same way (``LineMemo``).
    var memo: LineMemo { response.facts.memo(self, response) }

    /// What the rules did, attribute by attribute (``Transformation/changes``), with the rules' names and places.
    public var transformation: Transformation {
        let memo = memo
        if let made = memo.transformation { return made }
        let received = receivedCookie
        let edited = rewritten.map { SetCookie(bytes: Array($0)) } ?? received
        let made = response.engine.transformation(received: received, edited: edited, edit)
        memo.transformation = made
        return made
    }

    /// The lint of the line as the rules left it (of the received line when dropped), at the request's URL and
    /// site: what the log shows with the line's record.
    public var findings: [LintFinding] { lint.findings }

    /// The same, with the findings' keys for counting (``Linted``).
    package var lint: Linted {
        let memo = memo
        if let made = memo.editedLint { return made }
        let made = Linted(Self.lint(transformation.result ?? receivedCookie, response))
        memo.editedLint = made
        return made
    }

    /// The lint of the line as the client got it (nil when dropped): what a report of the run holds, and the
    /// metrics count.
    package var forwardedLint: Linted? {
        if !dryRun || rewritten == nil { return dropped && !dryRun ? nil : lint }
        let memo = memo
        if let made = memo.receivedLint { return made }
        let made = Linted(Self.lint(receivedCookie, response))
        memo.receivedLint = made
        return made
    }

    /// The findings of the line as the client got it (nil when dropped).
    public var forwardedFindings: [LintFinding]? { forwardedLint?.findings }

    /// The keys of ``forwardedLint``'s counted findings (``CountedKeys/none`` when dropped), read from the line's
    /// memo once its lint is made.
    package var forwardedKeys: CountedKeys {
        let forwardedIsEdited = !dryRun || rewritten == nil
        if forwardedIsEdited && dropped && !dryRun { return .none }
        let memo = memo
        if let keys = forwardedIsEdited ? memo.editedKeys : memo.receivedKeys { return keys }
        return forwardedLint?.keys ?? .none
    }

    /// The cookie as received, parsed.
    public var receivedCookie: SetCookie {
        let memo = memo
        if let made = memo.received { return made }
        let made = SetCookie(bytes: Array(received))
        memo.received = made
        return made
    }

    /// The cookie as the client got it, parsed (nil when dropped).
    public var forwardedCookie: SetCookie? {
        if dryRun || rewritten == nil { return dryRun || !dropped ? receivedCookie : nil }
        return transformation.result
    }

    /// A digest of what the line's memo depends on besides the request: the received line hashed eight bytes at a
    /// time (``WordHash``: the standard library's byte-by-byte hashing of arrays costs more than the rest of a
    /// record), the edited line's length, the rules and the second. The edited line is a function of the rest but
    /// for the request's context, so the memo leaves its bytes to an exact comparison: a cookie rewritten two ways
    /// (for two hosts) shares a slot at worst.
    func digest(second: Int64) -> UInt64 {
        var h = received.withUnsafeBytes { WordHash.hash($0, seed: 0x9E37_79B9_7F4A_7C15) }
        h = (h ^ UInt64(edited.map { $0.count + 1 } ?? 0)) &* 0xD6E8_FEB8_6659_FD93
        h = (h ^ matchedRulesLow) &* 0xFF51_AFD7_ED55_8CCD
        h = (h ^ UInt64(bitPattern: second)) &* 0xC4CE_B9FE_1A85_EC53
        return h ^ (h >> 29)
    }

    static func lint(_ cookie: SetCookie, _ response: ResponseInHand) -> [LintFinding] {
        response.withMessage { message in
            CookieLint.findings(for: cookie, from: message.requestURL, now: response.time / 1000)
                + CookieLint.siteFindings(for: cookie, site: message.site)
        }
    }
}

/// An exchange that ended, however it ended: its context (with the status the client got, none when it got
/// nothing; the protocol each side spoke), how it ended, the bytes each way and when each step happened.
public struct EndedExchange: ~Copyable {
    public let context: ExchangeContext
    public let end: ExchangeEnd
    /// Milliseconds since the epoch, at the end.
    public let time: Int64

    public var ending: ExchangeEnding { end.ending }
    /// The bytes written for the client after the response's head.
    public var bodyBytes: Int { end.bodyBytes }
    /// The bytes of the request's body sent towards the upstream.
    public var requestBodyBytes: Int { end.requestBodyBytes }
    public var times: ExchangeTimes { end.times }
}
