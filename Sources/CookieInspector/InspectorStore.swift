import CookieKit
import CookieRules
import Locking
import ProxyCore

/// The exchanges the inspector holds: the last `capacity` that carried cookies (a Set-Cookie received or a Cookie
/// sent), in a ring. Recording only keeps references to what the proxy already built (the client's request head,
/// the response head as forwarded, the rules in force); parsing, the diff and the lint happen when someone looks
/// (``Exchange/analysis``), so a proxy with nobody watching pays a lock and a few retains per exchange.
public final class InspectorStore: Sendable {
    public let capacity: Int
    private struct State {
        var ring: [Exchange?]
        var next = 0
        var count = 0
        var sequence: UInt64 = 0
        /// Requests forwarded and not yet answered, in a table indexed by request id modulo its size: no hashing,
        /// and bounded by construction (a request still unanswered when its slot is taken is not recorded).
        var pending: [Pending?]
        var wake: Wake?
    }
    private struct Pending {
        var id: UInt64
        var head: HTTPHead
        var time: Int64
    }
    private let state: Locked<State>
    /// The closure is kept in a box: a function type as the lock's value itself would be re-abstracted on every
    /// access through the lock's `inout`, a thunk around a thunk each time, until the stack overflows.
    private final class Wake: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    /// Requests that may wait for their responses at once.
    static let pendingSlots = 4096

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Locked(
            State(
                ring: [Exchange?](repeating: nil, count: max(1, capacity)),
                pending: [Pending?](repeating: nil, count: Self.pendingSlots)))
    }

    /// Called (on the recording thread) after each exchange is recorded: the live feed's wake-up.
    public func onRecord(_ body: (@Sendable () -> Void)?) { state.withLock { $0.wake = body.map(Wake.init) } }

    /// The request head as the client sent it, before the rules and the proxy's own edits.
    public func requestForwarded(id: UInt64, head: HTTPHead, time: Int64) {
        state.withLock { s in s.pending[Int(id % UInt64(Self.pendingSlots))] = Pending(id: id, head: head, time: time) }
    }

    /// The response head as it goes to the client (`head.source`: as the upstream sent it). Recorded when the
    /// exchange carried cookies.
    public func responseForwarded(
        context: ExchangeContext, head: OutgoingHead, engine: RuleEngine, dryRun: Bool, time: Int64
    ) {
        let slot = Int(context.requestID % UInt64(Self.pendingSlots))
        let wake = state.withLock { s -> Wake? in
            guard let request = s.pending[slot], request.id == context.requestID else { return nil }
            s.pending[slot] = nil
            let setsCookies = head.source.fields.contains { $0.known == .setCookie }
            let sendsCookies = request.head.fields.contains { $0.known == .cookie }
            guard setsCookies || sendsCookies else { return nil }
            s.sequence += 1
            let exchange = Exchange(
                sequence: s.sequence, context: context, request: request.head, requestTime: request.time,
                response: head, responseTime: time, engine: engine, dryRun: dryRun)
            s.ring[s.next] = exchange
            s.next = (s.next + 1) % capacity
            s.count = min(s.count + 1, capacity)
            return s.wake
        }
        wake?.body()
    }


    /// Held exchanges in the order they were recorded, those after `sequence` only when given. The ring is in
    /// sequence order, so the newer ones are its last entries: only those are visited.
    public func exchanges(after sequence: UInt64 = 0) -> [Exchange] {
        state.withLock { s in
            let newer = s.sequence > sequence ? Int(min(UInt64(s.count), s.sequence - sequence)) : 0
            var out: [Exchange] = []
            out.reserveCapacity(newer)
            let start = (s.next - newer + capacity) % capacity
            for k in 0..<newer {
                if let e = s.ring[(start + k) % capacity] { out.append(e) }
            }
            return out
        }
    }

    public func exchange(sequence: UInt64) -> Exchange? {
        exchanges(after: sequence &- 1).first { $0.sequence == sequence }
    }

    public var count: Int { state.withLock { $0.count } }
    public var newestSequence: UInt64 { state.withLock { $0.sequence } }
}

/// One recorded exchange: what the proxy saw, as it saw it, and (computed on first look) what that means.
public final class Exchange: Sendable {
    public let sequence: UInt64
    public let context: ExchangeContext
    /// The request head as the client sent it.
    public let request: HTTPHead
    public let requestTime: Int64
    /// The response head as the client received it; `response.source` as the upstream sent it.
    public let response: OutgoingHead
    public let responseTime: Int64
    let engine: RuleEngine
    public let dryRun: Bool
    /// Computed on first look; guarded by one lock for all exchanges (a lock each would cost every recording an
    /// allocation and a mutex initialisation, for something only a viewer contends for).
    nonisolated(unsafe) private var analysed: Analysis?
    private static let analysisLock = Locked(())

    init(
        sequence: UInt64, context: ExchangeContext, request: HTTPHead, requestTime: Int64, response: OutgoingHead,
        responseTime: Int64, engine: RuleEngine, dryRun: Bool
    ) {
        self.sequence = sequence
        self.context = context
        self.request = request
        self.requestTime = requestTime
        self.response = response
        self.responseTime = responseTime
        self.engine = engine
        self.dryRun = dryRun
    }

    /// The response head bytes the client received.
    public var forwardedHead: [UInt8] {
        var out: [UInt8] = []
        response.serialize(into: &out)
        return out
    }

    /// The request URL as a browser's jar sees it.
    public var requestURL: RequestURL {
        RequestURL(scheme: context.scheme, host: context.host, port: context.port, path: context.path)
    }

    public var analysis: Analysis {
        if let done = Self.analysisLock.withLock({ _ in analysed }) { return done }
        let result = Analysis(self)
        Self.analysisLock.withLock { _ in analysed = result }
        return result
    }

    /// Each Set-Cookie line: as received, as forwarded, and what the rules and the lint say about it.
    public struct Analysis: Sendable {
        public var cookies: [CookieLine]
        /// Set-Cookie lines the proxy added (a rule's `add header`), not received.
        public var added: [SetCookie]
        /// The values of the request's Cookie fields, as the client sent them.
        public var requestCookies: [String]
        /// The most severe finding among the forwarded lines, if any.
        public var worst: LintFinding.Severity?
        public var ruleNames: [String] { Array(Set(cookies.flatMap(\.rules))).sorted() }

        init(_ e: Exchange) {
            let source = e.response.source
            // Which received field each forwarded line came from.
            var forwarded: [Int: SetCookie] = [:]
            var added: [SetCookie] = []
            for index in 0..<e.response.count where e.response.name(at: index, is: .setCookie) {
                let value = SetCookie(bytes: e.response.value(at: index))
                switch e.response.lines[index] {
                case .original(let i), .edited(let i, _): forwarded[i] = value
                case .written: added.append(value)
                }
            }
            let message = MessageContext(
                scheme: e.context.scheme, host: e.context.host, port: e.context.port, path: e.context.path,
                method: e.context.method, status: e.context.status)
            let plan = e.engine.cookiePlan(message)
            let url = e.requestURL
            let now = e.responseTime / 1000
            var lines: [CookieLine] = []
            for (i, field) in source.fields.enumerated() where field.known == .setCookie {
                let received = SetCookie(bytes: Array(source.valueBytes(field)))
                // The rules again, on the received line, with the rules in force then: which matched, and why.
                let outcome = e.engine.apply(plan, to: received, now: now)
                let sent = e.dryRun ? received : forwarded[i]
                let judged = sent ?? outcome.result ?? received
                lines.append(
                    CookieLine(
                        received: received, forwarded: sent, wouldBe: e.dryRun ? outcome.result : nil,
                        rules: outcome.rules, changes: e.dryRun ? outcome.changes : RuleEngine.diff(received, sent),
                        notes: outcome.notes, findings: CookieLint.findings(for: judged, from: url, now: now)))
            }
            cookies = lines
            self.added = added
            requestCookies = e.request.fields.filter { $0.known == .cookie }.map {
                String(decoding: e.request.valueBytes($0), as: UTF8.self)
            }
            worst = (lines.flatMap(\.findings) + added.flatMap { CookieLint.findings(for: $0, from: url, now: now) })
                .map(\.severity).min()
        }
    }

    public struct CookieLine: Sendable {
        public var received: SetCookie
        /// Nil when a rule dropped it.
        public var forwarded: SetCookie?
        /// In a dry run, what the rules would have sent (nil: dropped); nil otherwise.
        public var wouldBe: SetCookie?
        public var rules: [String]
        public var changes: [AttributeChange]
        public var notes: [String]
        /// The lint of what the client got (of the received line when dropped).
        public var findings: [LintFinding]
        public var name: String { received.name }
    }
}
