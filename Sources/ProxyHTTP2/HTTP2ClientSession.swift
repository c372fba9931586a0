internal import CNGHTTP2
import HTTPGrammar
import ProxyCore

/// The client side of one HTTP/2 connection to an upstream (RFC 9113), without I/O, in the path of an upstream
/// connection's bytes: the connection machine writes HTTP/1.1 requests (``request(_:)``) and reads HTTP/1.1
/// responses (``takeResponse(into:)``), as with any upstream; the session speaks HTTP/2 on the wire
/// (``receive(_:)``, ``send(into:)``). One request at a time, as the machine sends them: each a new stream on the
/// same connection, which stays open for the next.
///
/// A request (RFC 9113 §8.3.1): `:method`, `:scheme`, `:authority` from Host, `:path` from the origin-form target;
/// the fields with lowercase names, without those about one connection (§8.2.2), and `te: trailers` (gRPC servers
/// require it); its body unframed into DATA. A response: the status line and fields as an HTTP/1.1 head, its body chunked
/// unless it declared its length, and the trailers of an HTTP/2 response (gRPC's `grpc-status`) as the chunked
/// body's trailer section, which the proxy relays as received.
public final class HTTP2ClientSession: HTTP2Connection {
    /// HTTP/1.1 response bytes not yet taken.
    var response: [UInt8] = []
    /// The stream in flight, and what is known of it.
    var stream: Int32 = -1
    var requestParser = HTTPHeadParser()
    var requestIn: [UInt8] = []
    var requestBody: BodyReader? = nil
    var requestMethod = ""
    /// Request body bytes waiting for the upstream's window.
    var body: [UInt8] = []
    var bodyStart = 0
    var bodyDeferred = false
    var responseFields: [(name: [UInt8], value: [UInt8])] = []
    var responseStatus = 0
    var responseChunked = false
    var inTrailers = false
    var responseDone = true
    let scheme: String

    /// `scheme`: what `:scheme` says (`https` through TLS, `http` for h2c).
    public init(scheme: String) {
        self.scheme = scheme
        // Windows given back as nghttp2 reads the DATA: the shell reads the socket only while the client keeps
        // up (backpressure), so TCP holds the rest.
        super.init(server: false, manualWindow: false)
        // The response's window (no server push: the proxy has no one to give pushed responses to).
        var entries = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1024 * 1024),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        _ = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 4 * 1024 * 1024)
    }

    /// Request body bytes waiting for the upstream's window.
    public var bufferedRequestBody: Int { body.count - bodyStart }

    /// No stream in flight and none refused: the connection can take the next request.
    public var isIdle: Bool { responseDone && failure == nil && nghttp2_session_want_read(session) != 0 }

    /// Bytes of HTTP/1.1 requests, as the machine writes them to its upstream.
    public func request(_ bytes: ArraySlice<UInt8>) {
        requestIn.append(contentsOf: bytes)
        while failure == nil && !requestIn.isEmpty {
            if requestBody == nil {
                guard let length = try? requestParser.headLength(requestIn[...]) else { return }
                guard let head = try? requestParser.parseRequest(Array(requestIn[..<length])),
                    let framing = try? BodyFraming.forRequest(head.head, version: head.version)
                else { return fail("the request head did not parse") }
                requestIn.removeFirst(length)
                requestBody = BodyReader(framing)
                requestMethod = head.method
                submit(head, hasBody: !requestBody!.isComplete)
                if requestBody!.isComplete {
                    requestBody = nil
                }
                continue
            }
            var reader = requestBody!
            guard let n = try? reader.consume(requestIn[...], payload: &body) else {
                return fail("the request body's framing")
            }
            requestIn.removeFirst(n)
            requestBody = reader.isComplete ? nil : reader
            if bodyDeferred {
                bodyDeferred = false
                _ = nghttp2_session_resume_data(session, stream)
            }
            if n == 0 { return }
        }
    }

    /// HEADERS for an HTTP/1.1 request head (RFC 9113 §8.3.1).
    private func submit(_ request: RequestHead, hasBody: Bool) {
        let head = request.head
        var host: ArraySlice<UInt8> = []
        for field in head.fields where field.known == .host { host = head.bytes[field.value] }
        var fields = HeaderList()
        fields.append(":method", Array(request.method.utf8)[...])
        fields.append(":scheme", Array(scheme.utf8)[...])
        fields.append(":authority", host)
        fields.append(":path", head.bytes[request.targetRange])
        let options = head.connectionOptions()
        for field in head.fields {
            let name = head.bytes[field.name]
            if field.known == .host || field.known == .te || field.known.isConnectionSpecific { continue }
            if options.names(ByteClass.lowercasedString(name)) { continue }
            fields.append(name: name, value: head.bytes[field.value], neverIndexed: field.known == .cookie)
        }
        // The one TE an HTTP/2 request may carry (§8.2.2), and a true one: trailers are passed on (as the chunked
        // body's trailer section). gRPC servers require it.
        fields.append("te", Array("trailers".utf8)[...])
        responseDone = false
        responseFields = []
        responseStatus = 0
        inTrailers = false
        body.removeAll(keepingCapacity: true)
        bodyStart = 0
        fields.withNameValues { nva in
            if hasBody {
                var provider = bodyProvider
                stream = nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, &provider, nil)
            } else {
                stream = nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, nil, nil)
            }
        }
        if stream < 0 {
            fail("the upstream's connection takes no new stream (\(String(cString: nghttp2_strerror(stream))))")
        }
    }

    /// Moves the HTTP/1.1 response bytes made so far to `out`.
    public func takeResponse(into out: inout [UInt8]) {
        guard !response.isEmpty else { return }
        out.append(contentsOf: response)
        response.removeAll(keepingCapacity: true)
    }

    // MARK: From nghttp2's callbacks

    override func header(
        _ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>
    ) {
        guard frame.pointee.hd.stream_id == stream else { return }
        if name.elementsEqual(":status".utf8) {
            responseStatus = value.reduce(0) { $0 * 10 + Int($1 &- 0x30) }
            return
        }
        responseFields.append((Array(name), Array(value)))
    }

    override func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        guard frame.pointee.hd.stream_id == stream else {
            if frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) && !responseDone {
                fail("the upstream sent GOAWAY")
            }
            return
        }
        let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.pointee.hd.type) {
        case NGHTTP2_HEADERS.rawValue: headersReceived(endStream: endStream)
        case NGHTTP2_DATA.rawValue: if endStream { streamEnded() }
        default: break
        }
    }

    /// A response head (interim, final) or trailers, whole.
    private func headersReceived(endStream: Bool) {
        if inTrailers {
            // RFC 9112 §7.1.2: the trailer section after the last chunk (a body of declared length has none to
            // carry them: they are dropped).
            if responseChunked {
                response.append(contentsOf: "0\r\n".utf8)
                appendFields()
                response.append(contentsOf: "\r\n".utf8)
            }
            responseFields = []
            responseDone = true
            return
        }
        let status = responseStatus
        response.append(contentsOf: "HTTP/1.1 \(status) \(ProxyAnswer.reasonPhrase(status))\r\n".utf8)
        let interim = (100..<200).contains(status)
        let declared = responseFields.contains { $0.name.elementsEqual("content-length".utf8) }
        let bodiless = interim || status == 204 || status == 304 || requestMethod == "HEAD"
        responseChunked = !bodiless && !declared
        appendFields()
        if responseChunked { response.append(contentsOf: "transfer-encoding: chunked\r\n".utf8) }
        response.append(contentsOf: "\r\n".utf8)
        responseFields = []
        if interim { return }
        inTrailers = true
        if endStream { streamEnded() }
    }

    private func appendFields() {
        for field in responseFields {
            response.append(contentsOf: field.name)
            response.append(contentsOf: ": ".utf8)
            response.append(contentsOf: field.value)
            response.append(contentsOf: "\r\n".utf8)
        }
        responseFields = []
    }

    override func dataReceived(_ id: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        guard id == stream else { return }
        if responseChunked {
            response.append(contentsOf: String(data.count, radix: 16).utf8)
            response.append(contentsOf: "\r\n".utf8)
            response.append(contentsOf: data)
            response.append(contentsOf: "\r\n".utf8)
        } else {
            response.append(contentsOf: data)
        }
    }

    private func streamEnded() {
        guard !responseDone else { return }
        if responseChunked { response.append(contentsOf: "0\r\n\r\n".utf8) }
        responseDone = true
    }

    override func streamClosed(_ id: Int32, _ code: UInt32) {
        guard id == stream, !responseDone else { return }
        fail("the upstream reset its HTTP/2 stream (error code \(code))")
    }

    override func readBody(
        _ id: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ length: Int, _ flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        let n = min(length, body.count - bodyStart)
        if n > 0 {
            body.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + bodyStart, count: n) }
            bodyStart += n
            if bodyStart == body.count {
                body.removeAll(keepingCapacity: true)
                bodyStart = 0
            }
        }
        if requestBody == nil && bodyStart == body.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        } else if n == 0 {
            bodyDeferred = true
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        return n
    }
}

/// Request fields as nghttp2 takes them.
struct HeaderList {
    var fields = ResponseFields(status: nil)

    mutating func append(_ name: String, _ value: ArraySlice<UInt8>) {
        fields.append(name: Array(name.utf8)[...], value: value, neverIndexed: false)
    }

    mutating func append(name: ArraySlice<UInt8>, value: ArraySlice<UInt8>, neverIndexed: Bool) {
        fields.append(name: name, value: value, neverIndexed: neverIndexed)
    }

    func withNameValues(_ body: (UnsafeMutableBufferPointer<nghttp2_nv>) -> Void) { fields.withNameValues(body) }
}
