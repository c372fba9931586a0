internal import CNGHTTP2
import HTTPGrammar
import HTTPHeads
import ProxyCore

/// One stream of an ``HTTP2ServerSession``: its request as received (pseudo-headers, fields, trailers), and its
/// response on the way back (the final head waiting to be submitted, the body waiting for the client's window, the
/// end and its trailers). A class: the session's table holds it and its callbacks change it in place.
final class Stream {
    var method = ""
    var scheme: [UInt8]? = nil
    var authority: [UInt8]? = nil
    var path: [UInt8]? = nil
    var connectProtocol = false
    var fields: [(name: [UInt8], value: [UInt8])] = []
    /// The request went to the machine (an event); the stream then ends with a ``HTTP2ServerSession/Event/closed``.
    var passedOn = false
    var refusal: String? = nil
    /// The refusal went out as an event already (when the head was read); the stream's close adds none.
    var refusalReported = false
    var reset = false
    /// The request's header block as it is decoded; once over, nothing more of it is kept.
    var headerList: HeaderListBudget
    var headerListTooLarge: Bool { headerList.isOver }
    /// The request's trailers, as the machine takes them; the block is held to the same limits as the head's.
    var requestTrailers = FieldSection()
    var trailerList: HeaderListBudget

    /// The final response head, made and waiting to be submitted until the parts handed over with it are in: a
    /// response whose end comes with its head goes as one HEADERS frame with END_STREAM.
    var finalHead: FieldList? = nil
    var headSent = false
    /// The machine's response is whole (``ResponsePart/end(trailers:)``, or an answer of its own).
    var ended = false
    /// The response's trailers.
    var trailers = FieldSection()
    /// The response body's payload, waiting for DATA frames.
    var out: [UInt8] = []
    var outStart = 0
    /// The DATA source said "nothing yet" (NGHTTP2_ERR_DEFERRED): resumed when bytes come.
    var dataDeferred = false

    init(limits: HTTPParserLimits) {
        headerList = HeaderListBudget(limits)
        trailerList = HeaderListBudget(limits)
    }

    func addField(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
        guard !headerListTooLarge else { return }
        guard headerList.admit(name: name.count, value: value.count, pseudo: name.first == 0x3A) else {
            fields = []
            return
        }
        // nghttp2 has checked the field (RFC 9113 §8.2.1, §8.3): pseudo-headers first, once each, known ones.
        if name.first == 0x3A {
            // Told apart by length and second byte: nghttp2 lets no other pseudo-header through.
            switch (name.count, name.count > 1 ? name[1] : 0) {
            case (7, 0x6D): method = String(decoding: value, as: UTF8.self)  // :method
            case (7, 0x73): scheme = Array(value)  // :scheme
            case (10, 0x61): authority = Array(value)  // :authority
            case (5, 0x70): path = Array(value)  // :path
            case (9, 0x70): connectProtocol = true  // :protocol
            default: break
            }
            return
        }
        fields.append((Array(name), Array(value)))
    }

    /// A trailer field of the request (RFC 9113 §8.1: nghttp2 has refused pseudo-headers and invalid fields in
    /// them); false once the trailers are over the limits (the stream is then reset).
    func addTrailer(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard trailerList.admit(name: name.count, value: value.count, pseudo: false) else { return false }
        if KnownField.classify(name, 0, name.count).isForbiddenInTrailers { return true }
        requestTrailers.append(name: name, value: value)
        return true
    }

    struct Refusal: Error {
        /// A response of the proxy's own (`501`), or nil for a stream reset with PROTOCOL_ERROR.
        var status: Int?
        var reason: String
    }

    /// The request as the machine takes it (RFC 9113 §8.3.1): the target from `:path` (in absolute form from
    /// `:scheme` and `:authority` when `absolute`), `Host` from `:authority`, the `cookie` crumbs joined into one
    /// field (§8.2.3), every other field as received; and how its body is delimited (``BodyFraming/forTypedRequest(_:ended:)``).
    func request(absolute: Bool, ended: Bool) -> Result<(RequestHead, BodyFraming), Refusal> {
        if headerListTooLarge {
            // RFC 6585 §5, as an HTTP/1.1 head over the limit is answered.
            return .failure(Refusal(status: 431, reason: "the request's header list is \(headerList.overrun)"))
        }
        if method == "CONNECT" || connectProtocol {
            return .failure(Refusal(status: 501, reason: "CONNECT over HTTP/2 is not supported; use HTTP/1.1"))
        }
        let host = fields.first { Self.equals($0.name, "host") }?.value
        guard let authority = authority ?? host, !authority.isEmpty else {
            return .failure(Refusal(reason: "a request without :authority or host"))
        }
        // RFC 9113 §8.3.1: a `host` that names another authority than `:authority` makes the request malformed;
        // passing either on would let the upstream route by the one the proxy did not check.
        if let host, self.authority != nil, host.map(ByteClass.lower) != authority.map(ByteClass.lower) {
            return .failure(Refusal(reason: ":authority and host disagree"))
        }
        // Defence in depth behind nghttp2's checks: every byte that would end a line or a field in HTTP/1.1.
        for field in fields where field.value.contains(where: { $0 == 0 || $0 == 0x0D || $0 == 0x0A }) {
            return .failure(Refusal(reason: "a field value with CR, LF or NUL"))
        }
        // A request-target and Host are visible ASCII (RFC 9112 §3.2, RFC 3986), as the routing and an HTTP/1.1
        // upstream read them.
        for part in [authority, path ?? []] where part.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            return .failure(Refusal(reason: "a space, control or non-ASCII byte in :authority or :path"))
        }
        // The proxy forwards http and https (RFC 9113 §8.3.1: other schemes are for other servers).
        if let scheme, scheme != Array("http".utf8) && scheme != Array("https".utf8) {
            return .failure(Refusal(reason: "a :scheme other than http or https"))
        }
        guard let path, !path.isEmpty else { return .failure(Refusal(reason: "a request without :path")) }
        var target: [UInt8] = []
        if absolute && !(path.count == 1 && path[0] == 0x2A) {
            target = scheme ?? Array("http".utf8)
            target += Array("://".utf8) + authority
        }
        target += path
        // RFC 9113 §8.2.3: crumbs are joined with "; " into one field before any HTTP/1.1 hop, and before the rules
        // and the log read them. It goes where the first crumb was.
        var cookie: [UInt8]? = nil
        var declaredLength = false
        var size = authority.count + 8
        for field in fields {
            size += field.name.count + field.value.count + 4
            if Self.equals(field.name, "content-length") { declaredLength = true }
            guard Self.equals(field.name, "cookie") else { continue }
            if cookie == nil {
                cookie = field.value
            } else {
                cookie! += [0x3B, 0x20] + field.value
            }
        }
        var builder = HeadBuilder.request(method: method, target: target, version: .http2, capacity: size + 24)
        builder.append(name: Self.hostName, value: authority)
        var cookieWritten = false
        for field in fields {
            // `te` (only ever `trailers`: nghttp2 refuses any other) is hop-by-hop in HTTP/1.1.
            if Self.equals(field.name, "host") || Self.equals(field.name, "te") { continue }
            if Self.equals(field.name, "cookie") {
                if !cookieWritten, let cookie { builder.append(name: field.name, value: cookie) }
                cookieWritten = true
                continue
            }
            builder.append(name: field.name, value: field.value)
        }
        if ended && !declaredLength && (method == "POST" || method == "PUT" || method == "PATCH") {
            // RFC 9110 §8.6: a request of these methods without a body says so, as an HTTP/1.1 client would.
            builder.append(name: Self.contentLengthName, value: [0x30])
        }
        let head = builder.requestHead(method: method, version: .http2)
        do {
            return .success((head, try BodyFraming.forTypedRequest(head.head, ended: ended)))
        } catch {
            return .failure(Refusal(reason: "its content-length: \(error.description)"))
        }
    }

    static func equals(_ name: [UInt8], _ lowercase: String) -> Bool { name.elementsEqual(lowercase.utf8) }
    static let hostName = Array("Host".utf8)
    static let contentLengthName = Array("content-length".utf8)
}

/// Fields as nghttp2 takes them (`nghttp2_nv`): names lowercase (RFC 9113 §8.2.2), values as received, in one
/// buffer; a response head's, trailers, or a request's towards an upstream.
struct FieldList {
    var storage: [UInt8] = []
    var entries: [(name: Range<Int>, value: Range<Int>, neverIndexed: Bool)] = []

    /// `status`: `:status` first (a response head), or nil (trailers, a request's fields). `capacity`: the bytes and
    /// the fields it will hold, about.
    init(status: Int?, capacity: (bytes: Int, fields: Int) = (0, 0)) {
        storage.reserveCapacity(capacity.bytes)
        entries.reserveCapacity(capacity.fields)
        if let status { append(":status", Array(String(status).utf8)[...]) }
    }

    /// A field of the proxy's own naming (a pseudo-header, `te`).
    mutating func append(_ name: StaticString, _ value: ArraySlice<UInt8>) {
        append(
            name: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)[...], value: value,
            neverIndexed: false)
    }

    mutating func append(name: some Collection<UInt8>, value: some Collection<UInt8>, neverIndexed: Bool) {
        let n = storage.count
        storage.append(contentsOf: name)
        // Lowercased in place (HTTP/2's names are, RFC 9113 §8.2.1): no array of its own per name.
        storage.withUnsafeMutableBufferPointer { b in
            for i in n..<b.count where b[i] &- 0x41 < 26 { b[i] |= 0x20 }
        }
        let v = storage.count
        storage += value
        entries.append((n..<v, v..<storage.count, neverIndexed))
    }

    /// `head`'s fields as HTTP/2 sends them (RFC 9113 §8.2.2): without the connection-specific ones, those its
    /// `Connection` names and those `skipping` says; `neverIndexed` is kept out of HPACK's table (RFC 7541 §7.1.3:
    /// a cookie's value is not to be recoverable by a compression oracle).
    mutating func append(
        fieldsOf head: OutgoingHead, skipping: (KnownField) -> Bool = { _ in false }, neverIndexed: KnownField
    ) {
        let options = head.source.connectionOptions()
        head.forEachField { name, value, known in
            if known.isConnectionSpecific || skipping(known) || options.names(name) { return }
            append(name: name, value: value, neverIndexed: known == neverIndexed)
        }
    }

    func withNameValues(_ body: (UnsafeMutableBufferPointer<nghttp2_nv>) -> Void) {
        storage.withUnsafeBufferPointer { base in
            let start = UnsafeMutablePointer(mutating: base.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            var nva = entries.map { entry in
                nghttp2_nv(
                    name: start + entry.name.lowerBound, value: start + entry.value.lowerBound,
                    namelen: entry.name.count, valuelen: entry.value.count,
                    flags: UInt8(
                        entry.neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            nva.withUnsafeMutableBufferPointer { body($0) }
        }
    }
}

extension ConnectionOptions {
    /// Whether the field `name` is one `Connection` names (and so goes no further), compared on the bytes: no string
    /// is made, and a head whose Connection names none (nearly all) compares nothing.
    func names(_ name: some Collection<UInt8>) -> Bool {
        !fieldNames.isEmpty && fieldNames.contains { ByteClass.equalsLowercase(name, $0.utf8) }
    }
}
