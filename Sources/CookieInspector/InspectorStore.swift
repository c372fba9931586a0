import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import Locking
import ProxyCore

/// The exchanges the inspector holds: the last `capacity` that carried cookies (a Set-Cookie received or a Cookie
/// sent), in a ring. Recording copies the three heads and each received line's outcome (``LineEdits``) into one
/// buffer; parsing, the transformations and the lint happen when someone looks (``Exchange/analysis``), so a proxy
/// with nobody watching pays the copy and a few locks per exchange.
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
        /// As it went upstream (serialized only if the exchange is recorded).
        var sent: OutgoingHead?
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

    /// The request head as the client sent it, before the rules and the proxy's own edits, and `sent`, as it went
    /// upstream after them.
    public func requestForwarded(id: UInt64, head: HTTPHead, sent: OutgoingHead? = nil, time: Int64) {
        let pending = Pending(id: id, head: head, sent: sent, time: time)
        state.withLock { s in s.pending[Int(id % UInt64(Self.pendingSlots))] = pending }
    }

    /// The response head as it goes to the client (`head.source`: as the upstream sent it). Recorded when the
    /// exchange carried cookies: the three heads are copied into one buffer, so that the proxy's own buffers go
    /// back to its allocator at once and a held exchange is two blocks, not a dozen (their cold frees, when the ring
    /// overwrites them, cost more than the copy).
    public func responseForwarded(
        context: ExchangeContext, head: OutgoingHead, bytes: ArraySlice<UInt8>, engine: RuleEngine, dryRun: Bool,
        time: Int64, edits: borrowing LineEdits = LineEdits(),
        judged: (RequestJudgement?, RequestSite.Kind?, client: String?) = (nil, nil, nil)
    ) {
        let (judgement, site, client) = judged
        let slot = Int(context.requestID % UInt64(Self.pendingSlots))
        let pending = state.withLock { s -> Pending? in
            guard let request = s.pending[slot], request.id == context.requestID else { return nil }
            s.pending[slot] = nil
            return request
        }
        guard let request = pending else { return }
        let setsCookies = head.source.fields.contains { $0.known == .setCookie }
        let sendsCookies = request.head.fields.contains { $0.known == .cookie }
        guard setsCookies || sendsCookies || !(judgement?.verdicts.isEmpty ?? true) else { return }
        // A client that reads typed messages (an HTTP/2 stream) got the head's fields, not bytes: its lines are kept.
        var written: [UInt8] = []
        if bytes.isEmpty { head.serialize(into: &written) }
        var sent: [UInt8] = []
        request.sent?.serialize(into: &sent)
        let record = Exchange.Record(
            request: request.head, sent: sent, response: head, forwarded: bytes.isEmpty ? written[...] : bytes,
            edits: edits)
        // The outcomes the compact form cannot hold (none, usually).
        let rest = edits.rest
        let wake = state.withLock { s -> Wake? in
            s.sequence += 1
            s.ring[s.next] = Exchange(
                sequence: s.sequence, context: context, record: record, requestTime: request.time,
                responseTime: time, engine: engine, dryRun: dryRun, rest: rest, judgement: judgement, site: site,
                client: client)
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
