internal import CNGHTTP2
import HTTPHeads
import ProxyCore

/// A header block's size as it is decoded (RFC 9113 §6.5.2: each field's name and value lengths plus 32), held to
/// the proxy's head limits (``HTTPParserLimits``: `--max-head-bytes`, `--max-headers`), the same two numbers an
/// HTTP/1.1 head is held to. Counted in the header callback, field by field, so a block that references one large
/// HPACK table entry thousands of times (RFC 7541 §7.3, RFC 9113 §10.5.1) is refused after 64 KiB of it, not
/// stored whole: past the limit, the rest of the block is still decoded (the HPACK state is the connection's, and
/// the peer's next block depends on it) but nothing of it is kept.
struct HeaderListBudget {
    let limits: HTTPParserLimits
    private(set) var size = 0
    private(set) var fields = 0

    init(_ limits: HTTPParserLimits) { self.limits = limits }

    /// Counts one field (pseudo-headers count towards the size, not towards the number of fields, as an HTTP/1.1
    /// start line does); false once the block is over either limit.
    mutating func admit(name: Int, value: Int, pseudo: Bool) -> Bool {
        size += name + value + 32
        if !pseudo { fields += 1 }
        return !isOver
    }

    /// The block went over either limit.
    var isOver: Bool { size > limits.maximumHeadBytes || fields > limits.maximumFieldCount }

    /// What was over, for a refusal's reason.
    var overrun: String {
        fields > limits.maximumFieldCount
            ? "more than \(limits.maximumFieldCount) fields (--max-headers)"
            : "over \(limits.maximumHeadBytes) bytes (--max-head-bytes; RFC 9113 §6.5.2)"
    }
}

/// What both sides of the proxy's HTTP/2 share: the nghttp2 session each owns (freed in `deinit`), the pumps of
/// its bytes (``receive(_:)``, ``send(into:)``), and nghttp2's callbacks, one set for both, each calling the side's
/// override. ``HTTP2ServerSession`` is the side towards a client, ``HTTP2ClientSession`` the side towards an upstream.
public class HTTP2Connection {
    var session: OpaquePointer?
    /// Why the connection (or, towards an upstream, its stream in flight) failed, once it has.
    public internal(set) var failure: String?

    /// `server`: the side that answers (a client's connection). `manualWindow`: a stream's window is given back
    /// only when the side says (`nghttp2_session_consume`), not as nghttp2 reads the DATA.
    init(server: Bool, manualWindow: Bool) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, h2BeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, h2Header)
        nghttp2_session_callbacks_set_on_invalid_header_callback(callbacks, h2InvalidHeader)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, h2FrameReceived)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, h2DataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, h2StreamClosed)
        var options: OpaquePointer?
        nghttp2_option_new(&options)
        if manualWindow { nghttp2_option_set_no_auto_window_update(options, 1) }
        nghttp2_option_set_max_send_header_block_length(options, 64 * 1024)
        let me = Unmanaged.passUnretained(self).toOpaque()
        if server {
            nghttp2_session_server_new2(&session, callbacks, me, options)
        } else {
            nghttp2_session_client_new2(&session, callbacks, me, options)
        }
        nghttp2_option_del(options)
        nghttp2_session_callbacks_del(callbacks)
    }

    deinit { nghttp2_session_del(session) }

    /// Bytes from the peer. False once the connection (or the stream in flight) failed: ``failure`` says why.
    public func receive(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard failure == nil else { return false }
        let n = bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
        if n < 0 { fail(String(cString: nghttp2_strerror(Int32(n)))) }
        return failure == nil
    }

    /// Appends the frames ready to go (as the peer's windows allow) to `out`.
    public func send(into out: inout [UInt8]) {
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n <= 0 {
                if n < 0 { fail(String(cString: nghttp2_strerror(Int32(n)))) }
                return
            }
            out.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
    }

    func fail(_ why: String) {
        if failure == nil { failure = why }
    }

    // MARK: The side's part, called from nghttp2's callbacks

    func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) {}
    func header(
        _ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>
    ) {}
    /// A field nghttp2 refuses (RFC 9113 §8.2.1); the stream is reset whatever the side does.
    func invalidHeader(_ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafeBufferPointer<UInt8>) {}
    func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {}
    func dataReceived(_ id: Int32, _ data: UnsafeBufferPointer<UInt8>) {}
    func streamClosed(_ id: Int32, _ errorCode: UInt32) {}
    /// The DATA source of a body this side sends (``bodyProvider``): up to `length` bytes into `buffer`.
    func readBody(
        _ id: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ length: Int, _ flags: UnsafeMutablePointer<UInt32>
    ) -> Int { Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }

    /// Trailers (RFC 9113 §8.1: a HEADERS frame that ends the stream), without the fields HTTP/2 never carries
    /// (§8.2.2: those about one connection, `te` other than in a request head).
    func submitTrailers(_ id: Int32, _ trailers: FieldSection) {
        var fields = FieldList(status: nil)
        trailers.forEach { name, value in
            let known = name.withUnsafeBufferPointer { KnownField.classify($0, 0, $0.count) }
            if known.isConnectionSpecific || known == .te { return }
            fields.append(name: name, value: value, neverIndexed: false)
        }
        fields.withNameValues { nva in _ = nghttp2_submit_trailer(session, id, nva.baseAddress, nva.count) }
    }

    /// The DATA source for a body this side sends: its ``readBody(_:_:_:_:)``.
    var bodyProvider: nghttp2_data_provider {
        nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: h2ReadBody)
    }
}

// C callbacks: free functions, so they carry no actor isolation; `user_data` is the connection object.

private func connection(_ data: UnsafeMutableRawPointer?) -> HTTP2Connection {
    Unmanaged<HTTP2Connection>.fromOpaque(data!).takeUnretainedValue()
}

private func h2BeginHeaders(
    _ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ data: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame { connection(data).beginHeaders(frame) }
    return 0
}

private func h2Header(
    _ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ name: UnsafePointer<UInt8>?, _ nameLength: Int,
    _ value: UnsafePointer<UInt8>?, _ valueLength: Int, _ flags: UInt8, _ data: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame {
        connection(data).header(frame, .init(start: name, count: nameLength), .init(start: value, count: valueLength))
    }
    return 0
}

private func h2InvalidHeader(
    _ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ name: UnsafePointer<UInt8>?, _ nameLength: Int,
    _ value: UnsafePointer<UInt8>?, _ valueLength: Int, _ flags: UInt8, _ data: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame { connection(data).invalidHeader(frame, .init(start: name, count: nameLength)) }
    // A stream error (PROTOCOL_ERROR), as without this callback: it is here to say which field.
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
}

private func h2FrameReceived(
    _ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ data: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame { connection(data).frameReceived(frame) }
    return 0
}

private func h2DataChunk(
    _ session: OpaquePointer?, _ flags: UInt8, _ id: Int32, _ bytes: UnsafePointer<UInt8>?, _ length: Int,
    _ data: UnsafeMutableRawPointer?
) -> Int32 {
    connection(data).dataReceived(id, UnsafeBufferPointer(start: bytes, count: length))
    return 0
}

private func h2StreamClosed(
    _ session: OpaquePointer?, _ id: Int32, _ errorCode: UInt32, _ data: UnsafeMutableRawPointer?
) -> Int32 {
    connection(data).streamClosed(id, errorCode)
    return 0
}

private func h2ReadBody(
    _ session: OpaquePointer?, _ id: Int32, _ buffer: UnsafeMutablePointer<UInt8>?, _ length: Int,
    _ flags: UnsafeMutablePointer<UInt32>?, _ source: UnsafeMutablePointer<nghttp2_data_source>?,
    _ data: UnsafeMutableRawPointer?
) -> Int {
    connection(data).readBody(id, buffer!, length, flags!)
}
