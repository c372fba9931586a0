import HTTPGrammar
import HTTPHeads

/// The client half of the connection machine: the bytes a client sent, read as requests (RFC 9112 §2.2: a head,
/// then a body in the framing the head gives it, then the next request). It decides nothing: where a request goes,
/// what is answered and when the connection closes are the machine's, which it tells with typed events
/// (``Event``, ``BodyEvent``). Its twin on the other side is ``ResponseReader``.
struct RequestReader {
    /// What the client half found at the front of what it holds.
    enum Event {
        /// A request head, taken out of the input, and its body's framing (RFC 9112 §6.3).
        case request(RequestHead, BodyFraming)
        /// The bytes are no request the proxy reads one way: the status to answer with and why (RFC 9112 §2.2,
        /// §3: `400`, `414` for a request line too long, `431` for a head too large, `501` for a coding).
        case refused(status: Int, reason: String, read: ArraySlice<UInt8>)
        /// HTTP/2's connection preface (RFC 9113 §3.4: `PRI * HTTP/2.0`, an empty line, then `SM` and another
        /// empty line, which the HTTP/2 session checks) as a connection's first head: the bytes from it on, for
        /// an HTTP/2 session.
        case http2Preface(leftover: [UInt8])
    }

    /// What reading the body of the request in flight gave (its bytes are appended where the caller says).
    enum BodyEvent {
        /// Nothing to read: the body is whole, or none of it has arrived.
        case nothing
        /// Bytes of the body moved out of the input.
        case read
        /// The body breaks its framing (a bad chunk line, a trailer field): why.
        case invalid(String)
    }

    /// What the client sent and the machine has not taken yet begins at ``start``.
    private(set) var input: [UInt8] = []
    private(set) var start = 0
    /// The client has closed its sending side.
    var eof = false
    private var parser: HTTPHeadParser
    /// The body of the request in flight, as far as it has been read (a reader of no body between requests).
    var body = BodyReader(.none)
    /// The client's codec hands requests over typed (``ProxyConnectionMachine/clientRequest(_:framing:_:)``): a
    /// request ends with its codec's end event (``streamEnded``), with trailers that may follow even a declared
    /// length (RFC 9113 §8.1), not with the last byte of that length.
    var endsTyped = false
    /// A typed client's request has ended: what is in the input is the last of its body, and ``trailers`` its
    /// trailers.
    var streamEnded = false

    /// Whether the request is whole, its trailers included: its body read, and a typed request's end come.
    var ended: Bool { body.isComplete && (streamEnded || !endsTyped) }
    var trailers = FieldSection()

    init(limits: HTTPParserLimits) { parser = HTTPHeadParser(limits: limits) }

    /// Bytes received and not yet taken.
    var buffered: Int { input.count - start }

    /// The start of a request head still arriving, for a person (a header timeout names it): its first line, or the
    /// bytes so far, at most 120, with anything but printable ASCII shown as `\xNN`; nil when nothing waits.
    var partialHead: String? {
        guard buffered > 0 else { return nil }
        let rest = input[start...]
        let line = rest.prefix { $0 != 0x0D && $0 != 0x0A }
        var text = ""
        for byte in line.prefix(120) {
            if byte >= 0x20 && byte < 0x7F {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return text + (line.count > 120 || line.count == rest.count ? "…" : "")
    }

    /// Bytes received from the client.
    mutating func append(_ bytes: ArraySlice<UInt8>) {
        if start > 0 && start == input.count {
            input.removeAll(keepingCapacity: true)
            start = 0
        }
        input.append(contentsOf: bytes)
    }

    /// The next request head at the front of the input, taken out, with its framing; nil until a whole head has
    /// arrived. The HTTP/2 preface is looked for only where a head fails to parse on a connection's `firstHead`:
    /// "PRI * HTTP/2.0" is no HTTP/1.1 request line, and every other request is parsed without the check.
    @inline(__always)
    mutating func nextRequest(_ storage: HeadStorage, firstHead: Bool) -> Event? {
        start += HTTPHeadParser.leadingEmptyLines(input[start...])
        guard start < input.count else { return nil }
        let length: Int
        do {
            guard let l = try parser.headLength(input[start...]) else { return nil }
            length = l
        } catch {
            let status =
                switch error.kind {
                case .startLineTooLong: 414  // the request-target (RFC 9112 §3)
                case .headTooLarge: 431
                default: 400
                }
            return .refused(
                status: status, reason: error.description,
                read: input[start..<min(input.count, start + RequestEcho.scanLimit)])
        }
        let headBytes = input.withUnsafeBufferPointer {
            storage.bytes(copying: UnsafeBufferPointer(rebasing: $0[start..<(start + length)]))
        }
        start += length
        do {
            let request = try parser.parseRequest(headBytes, fieldStorage: storage.takeFields())
            return .request(request, try BodyFraming.forRequest(request.head, version: request.version))
        } catch {
            if firstHead && headBytes.elementsEqual("PRI * HTTP/2.0\r\n\r\n".utf8) {
                return .http2Preface(leftover: takeAll(from: start - length))
            }
            return .refused(
                status: error.kind == .tooManyFields ? 431 : error.kind == .notImplemented ? 501 : 400,
                reason: error.description, read: headBytes[...])
        }
    }

    /// Moves what has arrived of the request body in flight to the end of `out`: as it came, or as `payload`, its
    /// chunked framing taken off (RFC 9112 §7.1.3) and its trailer section read into ``trailers`` (for an upstream
    /// that sends them in its own form: HTTP/2's trailers). A typed client's body of undeclared length ends here once
    /// its stream has ended (``streamEnded``) and all of it is taken.
    @inline(__always)
    mutating func readBody(into out: inout [UInt8], payload: Bool = false) -> BodyEvent {
        guard !body.isComplete else { return .nothing }
        var event = BodyEvent.nothing
        if start < input.count {
            let n: Int
            do throws(HTTPParseError) {
                if payload {
                    n = try withUnsafeMutablePointer(to: &out) { out throws(HTTPParseError) in
                        try withUnsafeMutablePointer(to: &trailers) { trailers throws(HTTPParseError) in
                            try body.consume(input[start...], payload: out, trailers: trailers)
                        }
                    }
                } else {
                    n = try body.consume(input[start...])
                    out.append(contentsOf: input[start..<(start + n)])
                }
            } catch {
                return .invalid("bad request body: \(error.description)")
            }
            start += n
            event = .read
        }
        if streamEnded && start == input.count { _ = body.endOfStream() }
        return event
    }

    /// Whether the whole request body has arrived: read already, or waiting in the input while the upstream
    /// connection is made (worked out on a copy of the body's reader: nothing is taken).
    var bodyArrived: Bool {
        var reader = body
        if reader.isComplete || streamEnded { return true }
        guard (try? reader.consume(input[start...])) != nil else { return false }
        return reader.isComplete
    }

    /// What the client sent after the last head, taken out: from here on it is TLS's or HTTP/2's.
    mutating func takeRest() -> [UInt8] { takeAll(from: start) }

    /// The same, appended to `out` (a tunnel's first bytes to the upstream).
    mutating func moveRest(into out: inout [UInt8]) {
        guard buffered > 0 else { return }
        out.append(contentsOf: input[start...])
        input.removeAll()
        start = 0
    }

    private mutating func takeAll(from index: Int) -> [UInt8] {
        let rest = Array(input[index...])
        input.removeAll()
        start = 0
        return rest
    }

    /// Gives back the input's memory when nothing waits in it and it has grown (an idle keep-alive connection
    /// stays small).
    mutating func shrink() {
        if buffered == 0 && input.capacity > 4096 {
            input = []
            start = 0
        }
    }

    /// A new connection's reader takes over `spare`'s storage (a closed connection's, emptied).
    mutating func adopt(_ spare: inout [UInt8]) {
        swap(&input, &spare)
        start = 0
    }

    /// A closed connection's reader gives its input's storage, emptied, to `spare` (``ProxyConnectionMachine/keep(_:as:)``).
    mutating func giveStorage(to spare: inout [UInt8]) {
        ProxyConnectionMachine.keep(&input, as: &spare)
        start = 0
    }
}
