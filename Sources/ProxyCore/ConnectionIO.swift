import HTTPHeads

/// Bytes and commands the I/O shell carries out after each event. The shell owns these buffers: it sends
/// from the front of `toClient` / `toUpstream`, and stops reading from the other side while they are full
/// (backpressure), so memory stays bounded whatever the body size.
public struct ConnectionIO: Sendable {
    public var toClient: [UInt8] = []
    public var toUpstream: [UInt8] = []
    /// For a client whose codec takes typed parts (an HTTP/2 stream, ``ResponseWriter/Form/parts``): the response's
    /// heads and end; its body's payload is in `toClient`.
    public var toClientParts: [ResponsePart] = []
    /// For an upstream whose codec takes typed parts (an HTTP/2 stream, ``RequestWriter/Form/parts``): the request's
    /// head and end; its body's payload is in `toUpstream`.
    public var toUpstreamParts: [RequestPart] = []
    public var commands: [Command] = []
    public init() {}

    public enum Command: Sendable, Hashable {
        /// Open (or take from the pool) a connection to `origin`; answer with `upstreamConnected` or
        /// `upstreamFailed`. `fresh` forbids a pooled connection (a retry after a stale one); `via`, the upstream
        /// proxy to go through.
        case connect(Origin, fresh: Bool, via: UpstreamHop? = nil)
        /// The exchange is done with the upstream connection: pool it if `reusable`, else close it.
        case releaseUpstream(reusable: Bool)
        /// The exchange ends with part of its request body sent: close the upstream connection with a reset
        /// (SO_LINGER 0), never an orderly close. An origin that takes the end of the stream as the end of the
        /// body (gunicorn does) would otherwise run a request the client never finished.
        case resetUpstream
        /// Half-close towards the upstream (tunnels).
        case shutdownUpstreamWrite
        /// Half-close towards the client (tunnels).
        case shutdownClientWrite
        /// Close the client connection once `toClient` is flushed.
        case closeClient
        /// Everything from here on is TLS with the client (an intercepted CONNECT): send what is in `toClient`
        /// in the clear, then start a TLS server for `host`, feeding it `leftover` (bytes already received).
        case startTLS(host: String, leftover: [UInt8])
        /// The client spoke HTTP/2's connection preface (RFC 9113 §3.4) as its first bytes: from here on the shell
        /// speaks HTTP/2 with it, starting with `leftover` (the preface and what followed it), and this machine
        /// hears nothing more.
        case startHTTP2(leftover: [UInt8])
        /// The client spoke HTTP/2's preface where HTTP/2 is off (`--http2 off`): it was told so in HTTP/2 (a GOAWAY
        /// with HTTP_1_1_REQUIRED, RFC 9113 §7) and the connection closes; the shell notes it for the person running
        /// the proxy, who would otherwise see a client fail with nothing said.
        case refusedHTTP2Preface
    }
}
