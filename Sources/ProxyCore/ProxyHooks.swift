import ExchangeFacts
import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Points where the rules layer changes messages. The default changes nothing.
public protocol ProxyHooks: Sendable {
    /// Whether a CONNECT to this host is intercepted (TLS terminated with a minted leaf) instead of tunnelled.
    func shouldIntercept(host: String, port: Int) -> Bool
    /// The request head as it will go upstream (hop-by-hop fields already removed).
    func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext)
    /// The response half of the hooks for one event loop, made once when the loop starts and used by that loop's
    /// thread alone (``HeadStorage/responseStage``): what it keeps from one response to the next (a parser, caches,
    /// what it noted of a response before the response is written) is its own, typed, never shared.
    func makeResponseStage() -> any ResponseStage
    /// An exchange ended, once, however it ended (``ExchangeEnding``): `context` with the status the client got
    /// (none when it got nothing), `bodyBytes` the bytes written for the client after the response's head (its
    /// body, and its framing). A request refused before it became an exchange has a context of its own (its method
    /// and target when they were read, else `-`).
    func exchangeEnded(_ context: ExchangeContext, bodyBytes: Int, _ ending: ExchangeEnding)
}

extension ProxyHooks {
    public func makeResponseStage() -> any ResponseStage { PassThroughStage() }
    public func exchangeEnded(_ context: ExchangeContext, bodyBytes: Int, _ ending: ExchangeEnding) {}
}

/// How an exchange ended (``ProxyHooks/exchangeEnded(_:bodyBytes:_:)``).
public enum ExchangeEnding: Sendable, Hashable {
    /// The upstream's response was relayed whole (its last byte is with the client's connection).
    case relayed
    /// The proxy answered itself: a refusal (`400`, `431`, …), an upstream it could not reach (`502`, `504`).
    case answered
    /// A tunnel began (CONNECT, or a `101`): what follows is bytes both ways.
    case tunnel
    /// It ended before its response was whole: the upstream failed or the client went away mid-way.
    case cut
}

/// What one event loop does to the response heads it forwards (``ProxyHooks/makeResponseStage()``).
public protocol ResponseStage: AnyObject {
    /// The response head as it will go to the client (hop-by-hop fields already removed).
    func willForward(_ head: inout OutgoingHead, context: ExchangeContext)
    /// The response head as it was written for the client, just after ``willForward(_:context:)``: the head after
    /// every edit, and its bytes (empty for a client that reads typed messages, an HTTP/2 stream: its codec writes
    /// the head's fields).
    func didForward(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext)
}

extension ResponseStage {
    public func didForward(_ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext) {}
}

/// Changes nothing.
public final class PassThroughStage: ResponseStage {
    public init() {}
    public func willForward(_ head: inout OutgoingHead, context: ExchangeContext) {}
}

public struct NoHooks: ProxyHooks {
    public init() {}
    public func shouldIntercept(host: String, port: Int) -> Bool { false }
    public func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) {}
}
