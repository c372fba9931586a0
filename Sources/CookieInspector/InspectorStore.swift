import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import HTTPHeads
import Locking

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
        var wake: Wake?
    }
    private let state: Locked<State>
    /// The closure is kept in a box: a function type as the lock's value itself would be re-abstracted on every
    /// access through the lock's `inout`, a thunk around a thunk each time, until the stack overflows.
    private final class Wake: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Locked(State(ring: [Exchange?](repeating: nil, count: max(1, capacity))))
    }

    /// Called (on the recording thread) after each exchange is recorded: the live feed's wake-up.
    public func onRecord(_ body: (@Sendable () -> Void)?) { state.withLock { $0.wake = body.map(Wake.init) } }

    /// An exchange, recorded (``Recorder`` decided it carried cookies): its heads copied into one buffer, so that
    /// the proxy's own buffers go back to its allocator at once and a held exchange is two blocks, not a dozen (their
    /// cold frees, when the ring overwrites them, cost more than the copy).
    func record(
        context: ExchangeContext, request: ArraySlice<UInt8>, sent: ArraySlice<UInt8>, requestTime: Int64,
        head: OutgoingHead, bytes: ArraySlice<UInt8>, engine: RuleEngine, dryRun: Bool, time: Int64,
        edits: borrowing LineEdits, judged: (RequestJudgement?, RequestSite.Kind?, client: String?)
    ) {
        let (judgement, site, client) = judged
        // A client that reads typed messages (an HTTP/2 stream) got the head's fields, not bytes: its lines are kept.
        var written: [UInt8] = []
        if bytes.isEmpty { head.serialize(into: &written) }
        let record = Exchange.Record(
            request: request, sent: sent, response: head, forwarded: bytes.isEmpty ? written[...] : bytes, edits: edits)
        // The outcomes the compact form cannot hold (none, usually).
        let rest = edits.rest
        let wake = state.withLock { s -> Wake? in
            s.sequence += 1
            s.ring[s.next] = Exchange(
                sequence: s.sequence, context: context, record: record, requestTime: requestTime,
                responseTime: time, engine: engine, dryRun: dryRun, rest: rest, judgement: judgement, site: site,
                client: client)
            s.next = (s.next + 1) % capacity
            s.count = min(s.count + 1, capacity)
            return s.wake
        }
        wake?.body()
    }

    /// One event loop's recording into the store: each request's head as the client sent it and as it went upstream,
    /// copied at once into storage kept from one request to the next (so that the proxy's head storage is free to be
    /// reused), until its response comes; then the exchange recorded when it carried cookies (a Set-Cookie received,
    /// a Cookie sent, a lifecycle verdict). Used by its loop's thread alone: nothing is locked until an exchange is
    /// recorded.
    public final class Recorder {
        public let store: InspectorStore
        /// Waiting requests' heads, by slot.
        private var slots = ByteSlots()
        private struct Pending {
            var slot: Int
            var received: Int
            var sendsCookies: Bool
            var time: Int64
        }

        /// The requests waiting for their responses, by id.
        private var pending = RequestTable<Pending>()
        /// The last request whose response took its entry (its exchange's end then looks nothing up).
        private var lastAnswered: UInt64 = 0
        /// Requests that may wait for their responses at once (past it, the oldest are let go unrecorded).
        static let pendingLimit = 4096

        public init(store: InspectorStore) { self.store = store }

        /// Requests waiting for their responses.
        public var pendingCount: Int { pending.count }

        /// The request head as the client sent it, before the rules and the proxy's own edits, and `sent`, as it
        /// went upstream after them.
        public func requestForwarded(id: UInt64, head: HTTPHead, sent: OutgoingHead? = nil, time: Int64) {
            let slot = slots.take()
            slots.write(slot) { buffer in
                buffer.append(contentsOf: head.bytes)
                sent?.serialize(into: &buffer)
            }
            let kept = Pending(slot: slot, received: head.bytes.count, sendsCookies: head.has(.cookie), time: time)
            if let old = pending.insert(kept, for: id) { slots.release(old.slot) }
            for entry in pending.letGo(past: Self.pendingLimit, newest: id) { slots.release(entry.slot) }
        }

        /// The exchange ended: what its request left, if its response did not take it, is let go.
        public func exchangeEnded(id: UInt64) {
            guard id != lastAnswered, pending.count > 0, let entry = pending.remove(id) else { return }
            slots.release(entry.slot)
        }

        /// The response head as it goes to the client (`head.source`: as the upstream sent it), and `bytes`, as
        /// written (empty for a client that reads typed messages). Recorded when the exchange carried cookies.
        public func responseForwarded(
            context: ExchangeContext, head: OutgoingHead, bytes: ArraySlice<UInt8>, engine: RuleEngine, dryRun: Bool,
            time: Int64, edits: borrowing LineEdits = LineEdits(),
            judged: (RequestJudgement?, RequestSite.Kind?, client: String?) = (nil, nil, nil)
        ) {
            guard let request = pending.remove(context.requestID) else { return }
            lastAnswered = context.requestID
            defer { slots.release(request.slot) }
            let setsCookies = head.source.fields.contains { $0.known == .setCookie }
            guard setsCookies || request.sendsCookies || !(judged.0?.verdicts.isEmpty ?? true) else { return }
            let heads = slots[request.slot]
            store.record(
                context: context, request: heads[..<request.received], sent: heads[request.received...],
                requestTime: request.time, head: head, bytes: bytes, engine: engine, dryRun: dryRun, time: time,
                edits: edits, judged: judged)
        }
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
