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
    /// Working storage of the hooks' own for one event loop, made once when the loop starts and used by that loop's
    /// thread alone: it comes back with every response head of the loop (``HeadStorage/hookStorage``). Nil: none.
    func makeLoopStorage() -> AnyObject?
    /// The response head as it will go to the client (hop-by-hop fields already removed); `storage`, the loop's
    /// (``makeLoopStorage()``; nil for a machine without a loop).
    func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext, storage: AnyObject?)
    /// The response head as it was written for the client: the head after every edit, and its bytes (empty for a
    /// client that reads typed messages, an HTTP/2 stream: its codec writes the head's fields).
    /// `storage` is the loop's, as handed to ``willForwardResponse(_:context:storage:)`` just before (what the hooks
    /// noted there for this response is still in it).
    func didForwardResponse(
        _ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext, storage: AnyObject?)
    /// The exchange's response was relayed whole (its last byte is with the client's connection).
    func exchangeFinished(_ requestID: UInt64)
}

extension ProxyHooks {
    public func makeLoopStorage() -> AnyObject? { nil }
    public func didForwardResponse(
        _ head: OutgoingHead, bytes: ArraySlice<UInt8>, context: ExchangeContext, storage: AnyObject?
    ) {}
    public func exchangeFinished(_ requestID: UInt64) {}
}

public struct NoHooks: ProxyHooks {
    public init() {}
    public func shouldIntercept(host: String, port: Int) -> Bool { false }
    public func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) {}
    public func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext, storage: AnyObject?) {}
}
