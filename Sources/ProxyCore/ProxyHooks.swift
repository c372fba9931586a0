import ExchangeFacts
import HTTPGrammar
import HTTPHeads

/// Where the rules layer meets the proxy: which tunnels are intercepted, and a stage per event loop that sees each
/// exchange's heads and end. The default changes nothing.
public protocol ProxyHooks: Sendable {
    /// Whether a CONNECT to this host is intercepted (TLS terminated with a minted leaf) instead of tunnelled.
    func shouldIntercept(host: String, port: Int) -> Bool
    /// The stage of one event loop, made once when the loop starts and used by that loop's thread alone
    /// (``HeadStorage/stage``): what it keeps from one exchange to the next (a parser, caches, what it noted of a
    /// request before its response) is its own, typed, never shared.
    func makeStage() -> any ExchangeStage
}

extension ProxyHooks {
    public func makeStage() -> any ExchangeStage { PassThroughStage() }
}

/// What one event loop does to the exchanges it carries (``ProxyHooks/makeStage()``), called in this order for each:
/// the request's head, the response's head before and after it is written, then the end (which every exchange
/// reaches once, however it ended; a request refused before it became an exchange reaches only the end).
public protocol ExchangeStage: AnyObject {
    /// The request head as it will go upstream (hop-by-hop fields already removed, a route's target and Host set).
    func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext)
    /// The response head as it will go to the client (hop-by-hop fields already removed).
    func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext)
    /// The response head as it was written for the client, just after ``willForwardResponse(_:context:)``: the head
    /// after every edit, and its bytes (empty for a client that reads typed messages, an HTTP/2 stream: its codec
    /// writes the head's fields).
    func didForwardResponse(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext)
    /// The exchange ended: `context` with the status the client got (none when it got nothing). A request refused
    /// before it became an exchange has a context of its own (its method and target when they were read, else `-`).
    func exchangeEnded(_ context: ExchangeContext, _ end: ExchangeEnd)
}

extension ExchangeStage {
    public func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) {}
    public func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext) {}
    public func didForwardResponse(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {}
    public func exchangeEnded(_ context: ExchangeContext, _ end: ExchangeEnd) {}
}

/// How an exchange ended, what it carried, and when each of its steps happened (``ExchangeStage/exchangeEnded(_:_:)``).
public struct ExchangeEnd: Sendable, Hashable {
    public var ending: ExchangeEnding
    /// The bytes written for the client after the response's head (its body, and its framing).
    public var bodyBytes: Int
    /// The bytes of the request's body written towards the upstream (and their framing).
    public var requestBodyBytes: Int
    public var times: ExchangeTimes
    /// Why an exchange that ended ``ExchangeEnding/cut`` was cut short (which side, and what happened); nil for
    /// every other ending, and for one a deadline closed (the deadline is noted as a closing of its own).
    public var cut: String?
    /// What of the request was read, for an exchange whose request went nowhere (the proxy answered it, or a
    /// CONNECT tunnel): its observers were told no request, and an access log line still names its User-Agent.
    /// Nil when the request was forwarded (``ExchangeStage/willForwardRequest(_:_:)`` gave it).
    public var request: RequestEcho?

    public init(
        ending: ExchangeEnding, bodyBytes: Int, requestBodyBytes: Int = 0, times: ExchangeTimes = ExchangeTimes(),
        cut: String? = nil, request: RequestEcho? = nil
    ) {
        (self.ending, self.bodyBytes, self.requestBodyBytes, self.times) = (ending, bodyBytes, requestBodyBytes, times)
        (self.cut, self.request) = (cut, request)
    }
}

/// When an exchange's steps happened, in microseconds on the monotonic clock as its event loop read it when it
/// noticed each (``HeadStorage/now``: read once per event, so a step is dated by the event that carried it); 0: the
/// step was not reached (a refused request has no upstream, a CONNECT no response head).
public struct ExchangeTimes: Sendable, Hashable {
    /// The client's connection was accepted (for an intercepted or HTTP/2 stream's exchange: its connection's).
    public var accepted: Int64 = 0
    /// The request's head was read whole.
    public var requestHead: Int64 = 0
    /// The connection to the upstream was there (made, or taken from the pool).
    public var upstreamConnected: Int64 = 0
    /// The response's final head arrived.
    public var responseHead: Int64 = 0
    /// The exchange ended.
    public var ended: Int64 = 0

    public init() {}

    /// Microseconds from the request's head to the exchange's end (0 when either is unknown).
    public var duration: Int64 { requestHead > 0 && ended >= requestHead ? ended - requestHead : 0 }
}

/// How an exchange ended (``ExchangeEnd/ending``).
public enum ExchangeEnding: String, Sendable, Hashable, CaseIterable {
    /// The upstream's response was relayed whole (its last byte is with the client's connection).
    case relayed
    /// The proxy answered itself: a refusal (`400`, `431`, …), an upstream it could not reach (`502`, `504`).
    case answered
    /// A tunnel (CONNECT, or a `101`), told when it closes: its body bytes are what went each way through it.
    case tunnel
    /// It ended before its response was whole: the upstream failed, the client went away mid-way, or a deadline
    /// closed it.
    case cut
}

/// Changes nothing.
public final class PassThroughStage: ExchangeStage {
    public init() {}
}

public struct NoHooks: ProxyHooks {
    public init() {}
    public func shouldIntercept(host: String, port: Int) -> Bool { false }
}
