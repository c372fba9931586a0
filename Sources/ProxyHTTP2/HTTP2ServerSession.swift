internal import CNGHTTP2
import HTTPGrammar
import HTTPHeads
import ProxyCore

/// The server side of one HTTP/2 connection with a client (RFC 9113), without I/O: the connection's bytes in
/// (``receive(_:)``), ``events`` out, one per request, body part, end and closed stream; responses in as the
/// HTTP/1.1 bytes a connection machine writes (``respond(_:_:)``); frames out (``send(into:)``).
///
/// libnghttp2 does the protocol: HPACK, frames, SETTINGS, flow control, and RFC 9113 §8's checks of every
/// request (a field name with an uppercase letter or a byte outside tchar, a value with CR, LF or NUL, a
/// connection-specific field, `te` other than `trailers`, a pseudo-header repeated, unknown, out of place or
/// missing, a `content-length` that disagrees with the DATA): such a stream is reset with PROTOCOL_ERROR before
/// any of it becomes an event, so nothing of it reaches a machine or an upstream. What it leaves to the
/// application is checked here: `:authority` and `host` must agree (§8.3.1), and CONNECT is not served
/// (answered `501`; extended CONNECT, RFC 8441, is refused by nghttp2 itself because
/// SETTINGS_ENABLE_CONNECT_PROTOCOL is never sent).
///
/// Each request becomes a typed request for the connection machine (``Stream/request(absolute:ended:)``: a head
/// made field by field, nothing parsed; RFC 9113 §8.3.1), its body's payload and its end with any trailers; the
/// machine reads it as it reads an HTTP/1.1 client's request, so the rules, the log and the inspector see one kind
/// of exchange. Its response comes back typed (``respond(_:parts:body:)``): each head's fields become HEADERS
/// (connection-specific fields dropped, RFC 9113 §8.2.2; each `set-cookie` its own field, never folded, and never
/// indexed in HPACK so that no compression oracle can recover a cookie value, RFC 7541 §7.1.3), the payload DATA,
/// the end END_STREAM or trailers.
///
/// Flow control (RFC 9113 §5.2): the window of what the client sends is given back only as the machine takes
/// the bytes (``consume(_:_:)``), and a response body is pulled into DATA frames as the client's window allows,
/// so memory per stream is bounded by the windows and the shell's high-water mark.
public final class HTTP2ServerSession: HTTP2Connection {
    public enum Event: Sendable {
        /// A request's head and how its body is delimited (`.none`: it ended with its head).
        case request(stream: Int32, head: RequestHead, framing: BodyFraming)
        /// Payload of the request's body (each byte counts against the flow-control windows, ``consume(_:_:)``).
        case body(stream: Int32, bytes: [UInt8])
        /// The request is complete; its trailer field lines (`name: value` CRLF each), maybe empty.
        case requestEnded(stream: Int32, trailers: FieldSection)
        /// The stream is closed: its response went out whole (`errorCode` 0), or it was reset.
        case closed(stream: Int32, errorCode: UInt32)
        /// A request refused before any of it was passed on (the stream was reset): why.
        case refused(stream: Int32, reason: String)
    }

    /// Settings this side announces (RFC 9113 §6.5.2); SETTINGS_MAX_HEADER_LIST_SIZE is the head limit's
    /// (``HTTPParserLimits/maximumHeadBytes``), and it is held to.
    public struct Settings: Sendable {
        public var maximumConcurrentStreams: UInt32 = 100
        /// Each stream's receive window: what a client may send before the machine has taken any of it.
        public var initialWindowSize: UInt32 = 256 * 1024
        /// The connection's receive window, shared by its streams.
        public var connectionWindowSize: UInt32 = 1024 * 1024
        public init() {}
    }

    /// What the session has to tell the shell since it last looked (it empties it).
    public var events: [Event] = []
    /// Requests are written in absolute form (`scheme://authority/path`): the proxy routes them by their target
    /// (a forward listener). Otherwise in origin form (`--reverse`, or inside an intercepted tunnel).
    let absoluteTargets: Bool
    /// What a request's header block may hold, as an HTTP/1.1 request's head.
    let limits: HTTPParserLimits
    var streams: [Int32: Stream] = [:]

    public init(settings: Settings = Settings(), limits: HTTPParserLimits = HTTPParserLimits(), absoluteTargets: Bool) {
        self.absoluteTargets = absoluteTargets
        self.limits = limits
        // Window updates only as the machine takes the bytes (``consume(_:_:)``).
        super.init(server: true, manualWindow: true)
        var entries = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: settings.maximumConcurrentStreams),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: settings.initialWindowSize),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(limits.maximumHeadBytes)),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        // The connection's window (RFC 9113 §6.9.2), shared by its streams: room for several streams' uploads.
        _ = nghttp2_session_set_local_window_size(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(settings.connectionWindowSize))
    }

    // MARK: The connection

    /// The session has more to read or to write; when neither, the connection is done.
    public var isActive: Bool { nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0 }

    /// Graceful shutdown (RFC 9113 §6.8): GOAWAY naming the last stream taken; those finish, no new one starts.
    public func goAway() {
        _ = nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
            UInt32(NGHTTP2_NO_ERROR.rawValue), nil, 0)
    }

    // MARK: Streams

    /// The machine took `count` bytes of the stream's body: the client may send that much more. For a stream that
    /// is gone, the connection's window alone (nghttp2 finds no stream).
    public func consume(_ stream: Int32, _ count: Int) {
        guard count > 0 else { return }
        _ = nghttp2_session_consume(session, stream, count)
    }

    /// The stream's response as the machine gives it: `parts` (heads, an answer of its own, the end) in order, and
    /// `body`, payload that follows the final head and comes before the end. The final head is submitted once the
    /// rest of what came with it is in: a response whose end comes with its head (gRPC's Trailers-Only error, a
    /// 204, a HEAD's answer) is one HEADERS frame with END_STREAM (RFC 9113 §8.1), not HEADERS and an empty DATA
    /// a gRPC client takes for a removed stream.
    public func respond(_ id: Int32, parts: [ResponsePart], body: ArraySlice<UInt8>) {
        guard let stream = streams[id], !stream.reset else { return }
        for part in parts {
            switch part {
            case .head(let status, let head):
                var fields = FieldList(
                    status: status, capacity: (head.source.bytes.count + 64, head.source.fields.count + 4))
                fields.append(fieldsOf: head, neverIndexed: .setCookie)
                if (100..<200).contains(status) {
                    // An interim response (100 Continue, 103 Early Hints): HEADERS without END_STREAM. 101 cannot
                    // happen: an upgrade is not passed on from HTTP/2.
                    if status != 101 { fields.withNameValues { submitHeaders(id, $0) } }
                } else {
                    stream.finalHead = fields
                }
            case .own(let status, let answerFields, let answerBody):
                var fields = FieldList(status: status)
                for field in answerFields {
                    fields.append(name: field.name.utf8, value: field.value.utf8, neverIndexed: false)
                }
                stream.finalHead = fields
                stream.out += answerBody
                stream.ended = true
            case .end(let trailers):
                stream.ended = true
                stream.trailers = trailers
            }
        }
        stream.out.append(contentsOf: body)
        if let head = stream.finalHead, !stream.headSent {
            stream.headSent = true
            stream.finalHead = nil
            let endsInHead = stream.ended && stream.outStart == stream.out.count && stream.trailers.isEmpty
            head.withNameValues { nva in
                if endsInHead {
                    _ = nghttp2_submit_response(session, id, nva.baseAddress, nva.count, nil)
                } else {
                    var provider = bodyProvider
                    _ = nghttp2_submit_response(session, id, nva.baseAddress, nva.count, &provider)
                }
            }
        }
        resumeData(id)
    }

    /// The machine's side of the stream is finished (its exchange closed): a response it did not end resets the
    /// stream.
    public func finish(_ id: Int32) {
        guard let stream = streams[id], !stream.reset else { return }
        if stream.headSent && stream.ended {
            resumeData(id)
            return
        }
        reset(id, nil)
    }

    /// Response body bytes waiting for the client's window.
    public func buffered(_ id: Int32) -> Int {
        guard let stream = streams[id] else { return 0 }
        return stream.out.count - stream.outStart
    }

    /// Whether the stream's response has gone out whole (its END_STREAM is sent or queued).
    public func responseComplete(_ id: Int32) -> Bool {
        guard let stream = streams[id] else { return true }
        return stream.headSent && stream.ended && stream.outStart == stream.out.count
    }

    /// Resets a stream (RST_STREAM INTERNAL_ERROR): its exchange failed part way.
    public func reset(_ id: Int32, _ reason: String?) {
        streams[id]?.reset = true
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_INTERNAL_ERROR.rawValue)
    }

    private func resumeData(_ id: Int32) {
        guard let stream = streams[id], stream.dataDeferred else { return }
        stream.dataDeferred = false
        _ = nghttp2_session_resume_data(session, id)
    }

    /// HEADERS without END_STREAM: an interim response.
    private func submitHeaders(_ id: Int32, _ nva: UnsafeMutableBufferPointer<nghttp2_nv>) {
        _ = nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, nil, nva.baseAddress, nva.count, nil)
    }

    // MARK: From nghttp2's callbacks

    override func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) {
        if Self.isRequestHeaders(frame) { streams[frame.pointee.hd.stream_id] = Stream(limits: limits) }
    }

    override func header(
        _ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>
    ) {
        let id = frame.pointee.hd.stream_id
        if Self.isRequestHeaders(frame) { return streams[id]?.addField(name, value) ?? () }
        // The request's trailers (a HEADERS frame after its body, RFC 9113 §8.1).
        guard frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), let stream = streams[id], stream.passedOn,
            !stream.reset
        else { return }
        if !stream.addTrailer(name, value) {
            events.append(.refused(stream: id, reason: "the request's trailers are \(stream.trailerList.overrun)"))
            reset(id, nil)
        }
    }

    override func invalidHeader(_ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafeBufferPointer<UInt8>) {
        streams[frame.pointee.hd.stream_id]?.refusal =
            "an invalid field \(String(decoding: name, as: UTF8.self).debugDescription)"
    }

    override func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        let id = frame.pointee.hd.stream_id
        let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.pointee.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            if frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST { requestHeadReceived(id, endStream: endStream) }
            // END_STREAM on the request's HEADERS, or on trailers after its body.
            if endStream { requestEnded(id) }
        case NGHTTP2_DATA.rawValue:
            if endStream { requestEnded(id) }
        default: break
        }
    }

    static func isRequestHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Bool {
        frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
    }

    private func requestHeadReceived(_ id: Int32, endStream: Bool) {
        guard let stream = streams[id] else { return }
        let request: (head: RequestHead, framing: BodyFraming)
        switch stream.request(absolute: absoluteTargets, ended: endStream) {
        case .success(let made): request = made
        case .failure(let refusal):
            events.append(.refused(stream: id, reason: refusal.reason))
            // Said once: the stream's close (after the reset or the answer goes out) is not a second refusal.
            stream.refusalReported = true
            if let status = refusal.status {
                answerLocally(id, status: status, refusal.reason)
            } else {
                _ = nghttp2_submit_rst_stream(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_PROTOCOL_ERROR.rawValue)
            }
            return
        }
        stream.passedOn = true
        events.append(.request(stream: id, head: request.head, framing: request.framing))
    }

    /// A response of the proxy's own to a request it does not pass on (`501` for CONNECT), made as every answer of
    /// the proxy's own is, and read back like any response.
    private func answerLocally(_ id: Int32, status: Int, _ reason: String) {
        let answer = ProxyAnswer(status: status, reason: "cookie-proxy: \(reason)", close: false)
        respond(id, parts: [.own(status: status, fields: answer.typedFields, body: answer.body)], body: [])
    }

    override func dataReceived(_ id: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        guard let stream = streams[id], stream.passedOn, !stream.reset else {
            // Not passed on: given back to the window at once.
            consume(id, data.count)
            return
        }
        events.append(.body(stream: id, bytes: Array(data)))
    }

    private func requestEnded(_ id: Int32) {
        guard let stream = streams[id], stream.passedOn, !stream.reset else { return }
        events.append(.requestEnded(stream: id, trailers: stream.requestTrailers))
    }

    override func streamClosed(_ id: Int32, _ errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        if !stream.passedOn && !stream.refusalReported && (stream.refusal != nil || errorCode != 0) {
            // nghttp2 reset it (RFC 9113 §8.1.1: malformed) before its head was whole; only invalid regular
            // fields come with a name (an uppercase name, a pseudo-header wrong, a connection-specific field not).
            let reason = stream.refusal ?? "a malformed request (RFC 9113 §8.1.1; error code \(errorCode))"
            events.append(.refused(stream: id, reason: reason))
        }
        if stream.passedOn { events.append(.closed(stream: id, errorCode: errorCode)) }
    }

    override func readBody(
        _ id: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ length: Int, _ flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard let stream = streams[id] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let n = min(length, stream.out.count - stream.outStart)
        if n > 0 {
            stream.out.withUnsafeBufferPointer {
                buffer.update(from: $0.baseAddress! + stream.outStart, count: n)
            }
            stream.outStart += n
            if stream.outStart == stream.out.count {
                stream.out.removeAll(keepingCapacity: stream.out.capacity <= 64 * 1024)
                stream.outStart = 0
            }
        }
        if stream.ended && stream.outStart == stream.out.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            let trailers = stream.trailers
            if !trailers.isEmpty {
                // RFC 9113 §8.1: trailers are a HEADERS frame that ends the stream, after the last DATA.
                flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
                submitTrailers(id, trailers)
            }
        } else if n == 0 {
            stream.dataDeferred = true
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        drained.append(id)
        return n
    }

    /// Streams whose buffered response shrank in the last ``send(into:)``: their upstreams may be read again.
    public var drained: [Int32] = []
}
