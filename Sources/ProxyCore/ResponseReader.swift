import HTTPGrammar
import HTTPHeads

/// The upstream half of the connection machine: the bytes an upstream sent for the exchange in flight, read as
/// its response (RFC 9112 §2.2: interim heads, a final head, then a body in the framing the head and the request
/// give it). Like its twin ``RequestReader`` it decides nothing: whether a response is refused, where its head goes
/// and whether the connections stay open are the machine's, which it tells with typed events (``Event``,
/// ``BodyEvent``).
struct ResponseReader {
    /// What the upstream half found at the front of what it holds.
    enum Event {
        /// A response head, taken out of the input, and its body's framing (RFC 9112 §6.3, which reads the
        /// request's method: a response to HEAD has no body).
        case response(ResponseHead, BodyFraming)
        /// The head is larger than the parser's limits allow.
        case headTooLarge
        /// The bytes are no response the proxy reads one way: why.
        case invalid(String)
    }

    /// What reading the response body gave (its bytes are appended where the caller says).
    enum BodyEvent {
        /// More of the body is to come.
        case partial
        /// The body is whole; `trailing`: bytes came after it (the upstream is confused: not to be reused).
        case complete(trailing: Bool)
        /// The body breaks its framing.
        case invalid
    }

    /// Bytes of the response not yet read as a head (once the head is read, the body's bytes are handed over as
    /// they arrive, without a stop here).
    var input: [UInt8] = []
    private var parser: HTTPHeadParser
    /// The final head's body, once that head is read; nil while heads are read.
    private(set) var body: BodyReader? = nil
    /// Whether any byte of a response has arrived (so, too, while its body is read: the body follows a head).
    private(set) var bytesSeen = false

    init(limits: HTTPParserLimits) { parser = HTTPHeadParser(limits: limits) }

    /// The upstream's codec hands the response over typed (``ProxyConnectionMachine/upstreamResponse(_:framing:_:)``):
    /// its end comes as an event (``ProxyConnectionMachine/upstreamEnded(trailers:_:)``), with trailers that may
    /// follow even a declared length (RFC 9113 §8.1), not with the last byte of that length.
    private(set) var endsTyped = false

    /// A typed upstream's head arrived (its codec read it): the response has begun.
    mutating func noteTypedHead() {
        bytesSeen = true
        endsTyped = true
    }

    /// Whether the final head has been read (the body is being relayed).
    var readingBody: Bool { body != nil }

    /// Bytes of a head received from the upstream.
    mutating func appendHeadBytes(_ bytes: ArraySlice<UInt8>) {
        bytesSeen = true
        input.append(contentsOf: bytes)
    }

    /// The next response head at the front of the input, taken out, with its framing; nil until a whole head has
    /// arrived. `requestMethod` decides the framing of a response to HEAD and CONNECT (RFC 9112 §6.3 rules 1, 2).
    @inline(__always)
    mutating func nextResponse(_ storage: HeadStorage, requestMethod: String) -> Event? {
        let length: Int
        do {
            guard let l = try parser.headLength(input[...]) else { return nil }
            length = l
        } catch {
            return .headTooLarge
        }
        let headBytes = input.withUnsafeBufferPointer {
            storage.bytes(copying: UnsafeBufferPointer(rebasing: $0[0..<length]))
        }
        input.removeFirst(length)
        do {
            let response = try parser.parseResponse(headBytes, fieldStorage: storage.takeFields())
            let framing = try BodyFraming.forResponse(
                response.head, status: response.status, requestMethod: requestMethod, version: response.version)
            return .response(response, framing)
        } catch {
            return .invalid(error.description)
        }
    }

    /// The final head was read: its body is read in `framing` from here on. The bytes that came after the head
    /// are taken out of the input (by swapping it with `spare`, emptied: the caller relays them with
    /// ``readBody(_:dechunk:into:)`` and keeps their storage).
    mutating func startBody(_ framing: BodyFraming, rest spare: inout [UInt8]) {
        body = BodyReader(framing)
        swap(&input, &spare)
    }

    /// Relays body bytes to the end of `out`: as they are, or without the chunked framing when `dechunk`
    /// (RFC 9112 §7.1.3, for an HTTP/1.0 client, or a typed one), a chunked body's trailer section then read into
    /// `trailers` when given (a typed client sends them in its own form: HTTP/2's trailers).
    @inline(__always)
    mutating func readBody(
        _ bytes: ArraySlice<UInt8>, dechunk: Bool, trailers: UnsafeMutablePointer<FieldSection>? = nil,
        into out: inout [UInt8]
    ) -> BodyEvent {
        guard var reader = body else { return .invalid }
        let n: Int
        do {
            if dechunk {
                n = try withUnsafeMutablePointer(to: &out) {
                    try reader.consume(bytes, payload: $0, trailers: trailers)
                }
            } else {
                n = try reader.consume(bytes)
                out.append(contentsOf: bytes.prefix(n))
            }
        } catch {
            return .invalid
        }
        body = reader
        return reader.isComplete ? .complete(trailing: n < bytes.count) : .partial
    }

    /// The upstream closed its side while the body was relayed: whether that ends it (a body read until the close,
    /// RFC 9112 §6.3 rule 8) or cuts it short.
    mutating func endOfStream() -> Bool {
        guard var reader = body, reader.endOfStream() else { return false }
        body = reader
        return true
    }

    /// Whether the body has been read whole.
    var bodyComplete: Bool { body?.isComplete ?? false }

    /// The body's framing (nil while heads are read).
    var framing: BodyFraming? { body?.framing }
}
