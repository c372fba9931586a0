internal import CNGHTTP2
import HTTPGrammar
import HTTPHeads
import ProxyCore

/// The client side of one HTTP/2 connection to an upstream (RFC 9113), without I/O, shared by the exchanges that
/// go to that origin at once: each opens an ``UpstreamExchange`` (``open()``), hands its request over typed
/// (``request(_:parts:body:)``), and takes back its response typed
/// (``UpstreamExchange/takeResponse()``); the session speaks HTTP/2 on the wire (``receive(_:)``,
/// ``send(into:)``), one stream per exchange, at most as many at once as the upstream's
/// SETTINGS_MAX_CONCURRENT_STREAMS allows (``canOpen``).
///
/// A request (RFC 9113 §8.3.1): `:method`, `:scheme`, `:authority` from Host, `:path` from the origin-form target;
/// the fields with lowercase names, without those about one connection (§8.2.2), and `te: trailers` (gRPC servers
/// require it); its payload into DATA, its trailers after it. Nothing of it is parsed. A response: each head a
/// typed `ResponseHead` made field by field (``HeadBuilder``: nothing is parsed) with its framing
/// (``BodyFraming/forResponse(_:status:requestMethod:version:)``: a declared length, none, or until the stream
/// ends), the DATA payload, and the end with the trailers (gRPC's `grpc-status`), whether or not a length was
/// declared.
///
/// Flow control (§5.2): a response's window is given back only as its exchange takes the bytes (``consume(_:_:)``),
/// so one slow client holds its own stream, not the connection the others share.
public final class HTTP2ClientSession: HTTP2Connection {
    let scheme: String
    /// What a response's header block (a head, interim or final, or trailers) may hold, as an HTTP/1.1 upstream's
    /// head: past it the exchange fails (`502`) and its stream is cancelled.
    let limits: HTTPParserLimits
    /// The exchanges with a stream, by stream.
    var streams: [Int32: UpstreamExchange] = [:]
    /// Exchanges open on this connection (with a stream or about to have one).
    public private(set) var openCount = 0
    /// The exchanges whose response grew, ended or failed in the last ``receive(_:)`` (the shell hands the bytes
    /// to their machines); emptied by the shell.
    public var touched: [UpstreamExchange] = []
    /// The upstream said GOAWAY: no new stream.
    public private(set) var goingAway = false

    /// `scheme`: what `:scheme` says (`https` through TLS, `http` for h2c).
    public init(scheme: String, limits: HTTPParserLimits = HTTPParserLimits()) {
        self.scheme = scheme
        self.limits = limits
        super.init(server: false, manualWindow: true)
        // The response's window, per stream and for the connection (no server push: the proxy has no one to give
        // pushed responses to), and the head limit the upstream is told of (and held to).
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 256 * 1024),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(limits.maximumHeadBytes)),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        _ = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 4 * 1024 * 1024)
    }

    /// Whether another exchange may start here: no failure, no GOAWAY, and fewer streams open than the upstream
    /// allows at once.
    public var canOpen: Bool {
        guard failure == nil, !goingAway else { return false }
        let limit = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        return UInt32(openCount) < limit
    }

    /// An exchange on this connection; its stream starts with its request's head.
    public func open() -> UpstreamExchange {
        openCount += 1
        return UpstreamExchange()
    }

    /// The exchange is done with the connection: a stream whose response is not whole is cancelled (RST_STREAM).
    public func close(_ exchange: UpstreamExchange) {
        guard !exchange.closed else { return }
        exchange.closed = true
        openCount -= 1
        if exchange.stream > 0 {
            if !exchange.responseDone {
                _ = nghttp2_submit_rst_stream(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), exchange.stream, NGHTTP2_CANCEL.rawValue)
            }
            // What the exchange never took frees the connection's window.
            if exchange.unconsumed > 0 {
                _ = nghttp2_session_consume_connection(session, exchange.unconsumed)
                exchange.unconsumed = 0
            }
            streams[exchange.stream] = nil
        }
    }

    /// The exchange's machine has taken its response bytes and can take more: the upstream may send that much.
    public func consume(_ exchange: UpstreamExchange) {
        guard exchange.unconsumed > 0 else { return }
        if exchange.stream > 0 && streams[exchange.stream] != nil {
            _ = nghttp2_session_consume(session, exchange.stream, exchange.unconsumed)
        } else {
            _ = nghttp2_session_consume_connection(session, exchange.unconsumed)
        }
        exchange.unconsumed = 0
    }

    /// The exchange's request as its machine hands it over: `parts` (its head, its end) in order, and `body`,
    /// payload that follows the head and comes before the end. The head is submitted once what came with it is in:
    /// a request that ends with its head (a GET) is one HEADERS frame with END_STREAM.
    public func request(_ exchange: UpstreamExchange, parts: [RequestPart], body: ArraySlice<UInt8>) {
        if let failure { return exchange.fail(failure) }
        var head: (method: String, target: [UInt8], fields: OutgoingHead)? = nil
        for part in parts {
            switch part {
            case .head(let method, let target, let fields):
                exchange.startResponse()
                head = (method, target, fields)
            case .end(let trailers):
                exchange.requestEnded = true
                exchange.requestTrailers = trailers
            }
        }
        exchange.body.append(contentsOf: body)
        if let head {
            exchange.requestMethod = head.method
            let endsInHead = exchange.requestEnded && exchange.body.isEmpty && exchange.requestTrailers.isEmpty
            submit(exchange, method: head.method, target: head.target, head.fields, hasBody: !endsInHead)
        } else if exchange.bodyDeferred && exchange.stream > 0 {
            exchange.bodyDeferred = false
            _ = nghttp2_session_resume_data(session, exchange.stream)
        }
    }

    /// HEADERS for a request head (RFC 9113 §8.3.1): the pseudo-headers from its method, target and Host, its
    /// fields with lowercase names and without those about one connection (§8.2.2), the cookie never indexed.
    private func submit(
        _ exchange: UpstreamExchange, method: String, target: [UInt8], _ head: OutgoingHead, hasBody: Bool
    ) {
        var host: [UInt8] = []
        head.forEachField { _, value, known in
            if known == .host && host.isEmpty { host = Array(value) }
        }
        var fields = FieldList(status: nil, capacity: (head.source.bytes.count + 64, head.source.fields.count + 6))
        fields.append(":method", Array(method.utf8)[...])
        fields.append(":scheme", Array(scheme.utf8)[...])
        fields.append(":authority", host[...])
        fields.append(":path", target[...])
        // Host is `:authority` already; `te` is the proxy's own, below.
        fields.append(fieldsOf: head, skipping: { $0 == .host || $0 == .te }, neverIndexed: .cookie)
        // The one TE an HTTP/2 request may carry (§8.2.2), and a true one: trailers are passed on.
        fields.append("te", Array("trailers".utf8)[...])
        var id: Int32 = -1
        fields.withNameValues { nva in
            if hasBody {
                var provider = bodyProvider
                id = nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, &provider, nil)
            } else {
                id = nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, nil, nil)
            }
        }
        guard id > 0 else {
            return exchange.fail(
                "the upstream's connection takes no new stream (\(String(cString: nghttp2_strerror(id))))")
        }
        if exchange.stream > 0 { streams[exchange.stream] = nil }
        exchange.stream = id
        streams[id] = exchange
    }

    /// The connection under the session failed (closed, reset, TLS): every exchange on it fails.
    public func connectionFailed(_ why: String) { fail(why) }

    override func fail(_ why: String) {
        super.fail(why)
        // A connection error fails every exchange on it.
        for exchange in streams.values where exchange.failure == nil && !exchange.responseDone {
            exchange.fail(why)
            touched.append(exchange)
        }
    }

    // MARK: From nghttp2's callbacks

    override func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) {
        streams[frame.pointee.hd.stream_id]?.headerList = HeaderListBudget(limits)
    }

    override func header(
        _ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>
    ) {
        guard let exchange = streams[frame.pointee.hd.stream_id], exchange.failure == nil else { return }
        guard exchange.headerList.admit(name: name.count, value: value.count, pseudo: name.first == 0x3A) else {
            exchange.responseFields = []
            exchange.fail("the upstream's response header list is \(exchange.headerList.overrun)")
            _ = nghttp2_submit_rst_stream(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), exchange.stream, NGHTTP2_CANCEL.rawValue)
            touched.append(exchange)
            return
        }
        if name.elementsEqual(":status".utf8) {
            // RFC 9110 §15: three digits, 100 to 599 (nghttp2 only checks that it is there); anything else makes
            // the response malformed (RFC 9113 §8.1.1), and it would be no status line in HTTP/1.1.
            let digits = value.count == 3 && value.allSatisfy { $0 &- 0x30 < 10 }
            let status = digits ? value.reduce(0) { $0 * 10 + Int($1 &- 0x30) } : -1
            exchange.responseStatus = (100..<600).contains(status) ? status : -1
            return
        }
        exchange.responseFields.append((Array(name), Array(value)))
    }

    override func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        if frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) {
            // RFC 9113 §6.8: streams above the last one the upstream took were not processed; they fail (their
            // exchanges get a 502 when nothing of the response came).
            goingAway = true
            let last = frame.pointee.goaway.last_stream_id
            for (id, exchange) in streams where id > last && !exchange.responseDone {
                exchange.fail("the upstream sent GOAWAY before taking the stream")
                touched.append(exchange)
            }
            return
        }
        guard let exchange = streams[frame.pointee.hd.stream_id] else { return }
        let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.pointee.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            // A block over the limit failed the exchange as it was decoded; nothing of it goes on.
            if exchange.failure != nil { break }
            if !exchange.inTrailers && exchange.responseStatus < 100 {
                exchange.fail("the upstream's response has no valid :status")
                _ = nghttp2_submit_rst_stream(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), exchange.stream, NGHTTP2_PROTOCOL_ERROR.rawValue)
            } else {
                exchange.headersReceived(endStream: endStream)
            }
            touched.append(exchange)
        case NGHTTP2_DATA.rawValue:
            if endStream {
                exchange.streamEnded()
                touched.append(exchange)
            }
        default: break
        }
    }

    override func dataReceived(_ id: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        guard let exchange = streams[id], exchange.failure == nil else {
            // A stream no exchange wants any more (or one that failed): its bytes free the connection's window.
            _ = nghttp2_session_consume_connection(session, data.count)
            return
        }
        exchange.dataReceived(data)
        touched.append(exchange)
    }

    override func streamClosed(_ id: Int32, _ code: UInt32) {
        guard let exchange = streams[id] else { return }
        streams[id] = nil
        if !exchange.responseDone {
            exchange.fail("the upstream reset its HTTP/2 stream (error code \(code))")
            touched.append(exchange)
        }
    }

    override func readBody(
        _ id: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ length: Int, _ flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard let exchange = streams[id] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let n = exchange.readBody(buffer, length, flags)
        if flags.pointee & NGHTTP2_DATA_FLAG_EOF.rawValue != 0 && !exchange.requestTrailers.isEmpty {
            // RFC 9113 §8.1: the request's trailers (a chunked body's trailer section) end the stream after its DATA.
            flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
            submitTrailers(id, exchange.requestTrailers)
            exchange.requestTrailers = FieldSection()
        }
        return n
    }
}

/// What a stream's response has given since its exchange last took it (``UpstreamExchange/takeResponse()``): heads
/// (interim ones, then the final one with its framing), payload that follows the final head, and the end.
public struct ResponseDelivery {
    public var heads: [(head: ResponseHead, framing: BodyFraming)] = []
    public var payload: [UInt8] = []
    /// The response ended: its trailers, maybe none.
    public var end: FieldSection? = nil
    public var isEmpty: Bool { heads.isEmpty && payload.isEmpty && end == nil }
}

/// One exchange's stream on an ``HTTP2ClientSession``: its request on the way in (the body waiting for the
/// upstream's window, its trailers) and its response on the way out, typed.
public final class UpstreamExchange {
    /// Its stream, once its head is submitted.
    public internal(set) var stream: Int32 = -1
    /// Why this exchange failed (its stream reset, a GOAWAY before it was taken, the connection failed).
    public internal(set) var failure: String?
    var closed = false
    var requestMethod = ""
    /// The request's end has been handed over (its body is whole once ``body`` is sent).
    var requestEnded = false
    /// Request body bytes waiting for the upstream's window.
    var body: [UInt8] = []
    /// The request's trailers (a chunked body's trailer section), sent after its DATA.
    var requestTrailers = FieldSection()
    var bodyStart = 0
    var bodyDeferred = false
    /// The response as made so far and not yet taken.
    var delivery = ResponseDelivery()
    var responseFields: [(name: [UInt8], value: [UInt8])] = []
    var responseStatus = 0
    var inTrailers = false
    /// The header block being decoded (each HEADERS block is counted on its own).
    var headerList = HeaderListBudget(HTTPParserLimits())
    /// The response is whole (or none is expected: no request yet).
    public internal(set) var responseDone = true
    /// Response body bytes handed over that the stream's window has not been given back for.
    public internal(set) var unconsumed = 0

    /// Request body bytes waiting for the upstream's window.
    public var bufferedRequestBody: Int { body.count - bodyStart }

    /// What the response has given since the last call, taken.
    public func takeResponse() -> ResponseDelivery {
        var taken = ResponseDelivery()
        swap(&taken, &delivery)
        return taken
    }

    func fail(_ why: String) {
        if failure == nil { failure = why }
    }

    func startResponse() {
        responseDone = false
        responseFields = []
        responseStatus = 0
        inTrailers = false
        body.removeAll(keepingCapacity: true)
        bodyStart = 0
        requestTrailers = FieldSection()
        requestEnded = false
    }

    /// A response head (interim, final) or trailers, whole.
    func headersReceived(endStream: Bool) {
        if inTrailers {
            var trailers = FieldSection()
            for field in responseFields
            where !field.name.withUnsafeBufferPointer({ KnownField.classify($0, 0, $0.count) }).isForbiddenInTrailers {
                trailers.append(name: field.name, value: field.value)
            }
            responseFields = []
            delivery.end = trailers
            responseDone = true
            return
        }
        let status = responseStatus
        var builder = HeadBuilder.response(
            status: status, version: .http2,
            capacity: responseFields.reduce(0) { $0 + $1.name.count + $1.value.count + 4 })
        for field in responseFields { builder.append(name: field.name, value: field.value) }
        responseFields = []
        let head = ResponseHead(status: status, head: builder.head(), version: .http2)
        if (100..<200).contains(status) {
            delivery.heads.append((head, .none))
            return
        }
        do {
            let framing = try BodyFraming.forResponse(
                head.head, status: status, requestMethod: requestMethod, version: .http2)
            delivery.heads.append((head, framing))
        } catch {
            return fail("the upstream's response: \(error.description)")
        }
        inTrailers = true
        if endStream { streamEnded() }
    }

    func dataReceived(_ data: UnsafeBufferPointer<UInt8>) {
        unconsumed += data.count
        delivery.payload.append(contentsOf: data)
    }

    func streamEnded() {
        guard !responseDone else { return }
        delivery.end = FieldSection()
        responseDone = true
    }

    func readBody(_ buffer: UnsafeMutablePointer<UInt8>, _ length: Int, _ flags: UnsafeMutablePointer<UInt32>) -> Int {
        let n = min(length, body.count - bodyStart)
        if n > 0 {
            body.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + bodyStart, count: n) }
            bodyStart += n
            if bodyStart == body.count {
                body.removeAll(keepingCapacity: true)
                bodyStart = 0
            }
        }
        if requestEnded && bodyStart == body.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        } else if n == 0 {
            bodyDeferred = true
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        return n
    }
}
