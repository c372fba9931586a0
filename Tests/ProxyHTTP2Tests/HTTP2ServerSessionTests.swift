import CNGHTTP2
import HTTPHeads
import ProxyCore
import Testing

@testable import ProxyHTTP2

/// Frames a client sends (RFC 9113 §4.1), written by hand: HPACK literals without indexing and without Huffman
/// (RFC 7541 §6.2.2), so a test reads as the bytes on the wire.
enum ClientFrames {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, flags: UInt8, stream: Int32, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags]
            + [UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
            + payload
    }

    static let settings = frame(type: 4, flags: 0, stream: 0, [])

    static func headers(_ stream: Int32, _ fields: [(String, String)], endStream: Bool) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            block += [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
        }
        return frame(type: 1, flags: 0x04 | (endStream ? 0x01 : 0), stream: stream, block)
    }

    /// A header block that adds one 4,000-byte field to the HPACK table (a literal with incremental indexing, RFC
    /// 7541 §6.2.1: it becomes index 62) and then names it by that one-byte index (§6.1) in every other byte, cut
    /// into a HEADERS frame and `frames - 1` CONTINUATION frames of 16,384 bytes (RFC 7541 §7.3's bomb: with 5
    /// frames, 80 KB on the wire and over 300 MB decoded). `fields` go first, as ``headers(_:_:endStream:)`` writes
    /// them.
    static func bomb(_ stream: Int32, _ fields: [(String, String)], frames: Int, endStream: Bool) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            block += [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
        }
        // 4,000 as a 7-bit-prefix integer (RFC 7541 §5.1): 127, then 3,873 in two 7-bit groups.
        let entry: [UInt8] = [0x40, 6] + Array("x-bomb".utf8) + [0x7F, 0xA1, 0x1E]
        block += entry
        block += [UInt8](repeating: 0x61, count: 4000)
        block += [UInt8](repeating: 0xBE, count: frames * 16384 - block.count)
        var out: [UInt8] = []
        for i in 0..<frames {
            var flags: UInt8 = 0
            if i == frames - 1 { flags |= 0x04 }  // END_HEADERS
            if i == 0 && endStream { flags |= 0x01 }  // END_STREAM
            let type: UInt8 = i == 0 ? 1 : 9  // HEADERS, then CONTINUATION
            let start = i * 16384
            out += frame(type: type, flags: flags, stream: stream, Array(block[start..<(start + 16384)]))
        }
        return out
    }

    static func data(_ stream: Int32, _ text: String, endStream: Bool) -> [UInt8] {
        frame(type: 0, flags: endStream ? 0x01 : 0, stream: stream, Array(text.utf8))
    }

    static func get(_ path: String, _ extra: [(String, String)] = [], method: String = "GET") -> [(String, String)] {
        [(":method", method), (":scheme", "https"), (":path", path), (":authority", "a.example")] + extra
    }
}

/// What the session sends, read back: each HEADERS block decoded by nghttp2's own HPACK decoder, with whether each
/// field was sent never-indexed; DATA concatenated; RST_STREAM codes.
struct ServerFrames {
    var headers: [[(name: String, value: String, neverIndexed: Bool)]] = []
    var data: [UInt8] = []
    var dataFrames = 0
    var resets: [UInt32] = []
    var endStream = false

    init(_ bytes: [UInt8]) {
        var inflater: OpaquePointer?
        nghttp2_hd_inflate_new(&inflater)
        defer { nghttp2_hd_inflate_del(inflater) }
        var i = 0
        while i + 9 <= bytes.count {
            let length = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            let (type, flags) = (bytes[i + 3], bytes[i + 4])
            let payload = Array(bytes[(i + 9)..<(i + 9 + length)])
            i += 9 + length
            if flags & 0x01 != 0 && (type == 0 || type == 1) { endStream = true }
            switch type {
            case 0:
                data += payload
                dataFrames += 1
            case 1:
                var fields: [(String, String, Bool)] = []
                var offset = 0
                while true {
                    var nv = nghttp2_nv()
                    var inflateFlags: Int32 = 0
                    let n = payload.withUnsafeBufferPointer {
                        nghttp2_hd_inflate_hd2(
                            inflater, &nv, &inflateFlags, $0.baseAddress! + offset, payload.count - offset, 1)
                    }
                    if n < 0 { break }
                    offset += n
                    if inflateFlags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                        fields.append(
                            (
                                String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self),
                                String(
                                    decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self),
                                nv.flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0
                            ))
                    }
                    if inflateFlags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                        nghttp2_hd_inflate_end_headers(inflater)
                        break
                    }
                    if n == 0 && offset >= payload.count { break }
                }
                headers.append(fields.map { (name: $0.0, value: $0.1, neverIndexed: $0.2) })
            case 3:
                resets.append(
                    UInt32(payload[0]) << 24 | UInt32(payload[1]) << 16 | UInt32(payload[2]) << 8 | UInt32(payload[3]))
            default: break
            }
        }
    }
}

/// The HTTP/2 session without I/O: frames in, typed requests for a connection machine out (a head made field by
/// field, its framing, payload, the end and its trailers); a typed response in, HEADERS, DATA and trailers out.
struct HTTP2ServerSessionTests {
    static func session(
        _ frames: [UInt8]..., absolute: Bool = false, limits: HTTPParserLimits = HTTPParserLimits()
    ) -> HTTP2ServerSession {
        let session = HTTP2ServerSession(limits: limits, absoluteTargets: absolute)
        #expect(session.receive((ClientFrames.preface + ClientFrames.settings + frames.flatMap { $0 })[...]))
        return session
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// RFC 9113 §8.3.1 and §8.2.3: the target from the pseudo-headers, Host from `:authority`, the crumbs of
    /// `cookie` one field where the first was, `te: trailers` dropped; the body delimited by its declared length,
    /// by the head (nothing), or by the end of the stream. The head's lines are what an HTTP/1.1 upstream gets for
    /// the fields no one edits.
    @Test(arguments: [
        (
            ClientFrames.get("/p?q=1", [("cookie", "a=1"), ("x-mid", "m"), ("cookie", "b=2")]), true, false,
            "GET /p?q=1 HTTP/2\r\nHost: a.example\r\ncookie: a=1; b=2\r\nx-mid: m\r\n\r\n", BodyFraming.none
        ),
        (
            ClientFrames.get("/p", [("te", "trailers"), ("accept", "*/*")]), true, true,
            "GET https://a.example/p HTTP/2\r\nHost: a.example\r\naccept: */*\r\n\r\n", .none
        ),
        (
            ClientFrames.get("/up", method: "POST"), false, false, "POST /up HTTP/2\r\nHost: a.example\r\n\r\n",
            .untilClose
        ),
        (
            ClientFrames.get("/up", [("content-length", "5")], method: "PUT"), false, false,
            "PUT /up HTTP/2\r\nHost: a.example\r\ncontent-length: 5\r\n\r\n", .contentLength(5)
        ),
        (
            ClientFrames.get("/empty", method: "POST"), true, false,
            "POST /empty HTTP/2\r\nHost: a.example\r\ncontent-length: 0\r\n\r\n", .contentLength(0)
        ),
        (
            ClientFrames.get("/h", [("host", "A.Example")]), true, false,
            "GET /h HTTP/2\r\nHost: a.example\r\n\r\n", .none
        ),
    ])
    func aRequestBecomesATypedHead(
        _ fields: [(String, String)], _ ended: Bool, _ absolute: Bool, _ lines: String, _ framing: BodyFraming
    ) {
        let session = Self.session(ClientFrames.headers(1, fields, endStream: ended), absolute: absolute)
        guard case .request(1, let head, let made) = session.events.first else {
            Issue.record("no request: \(session.events)")
            return
        }
        #expect(Self.text(head.head.bytes) == lines)
        #expect(head.method == fields.first { $0.0 == ":method" }?.1)
        #expect(head.target == (absolute ? "https://a.example" : "") + (fields.first { $0.0 == ":path" }?.1 ?? ""))
        #expect(made == framing)
        // Classified as a parsed head's fields are (the machine and the rules read the classification).
        #expect(head.head.has(.host))
        #expect(head.head.has(.cookie) == fields.contains { $0.0 == "cookie" })
    }

    /// DATA is the body's payload, as it came (each byte counts against the windows); the end of the stream ends the
    /// request, with the trailers of a HEADERS frame after the body (RFC 9113 §8.1), without those a trailer section
    /// must not carry (RFC 9110 §6.5.1: `host` routes, `te` is about the connection).
    @Test(arguments: [
        ([(String, String)](), ""),
        (
            [("x-checksum", "abc"), ("te", "trailers"), ("host", "b.example"), ("grpc-x", "1")],
            "x-checksum: abc\r\ngrpc-x: 1\r\n"
        ),
    ])
    func aBodyIsPayloadAndItsEndCarriesTheTrailers(_ trailers: [(String, String)], _ lines: String) {
        let end =
            trailers.isEmpty
            ? ClientFrames.data(1, "!", endStream: true)
            : ClientFrames.data(1, "!", endStream: false) + ClientFrames.headers(1, trailers, endStream: true)
        let session = Self.session(
            ClientFrames.headers(1, ClientFrames.get("/up", method: "POST"), endStream: false),
            ClientFrames.data(1, "hello", endStream: false), end)
        let events = session.events.dropFirst().map { event -> String in
            switch event {
            case .body(_, let bytes): "body \(Self.text(bytes))"
            case .requestEnded(_, let trailers): "end \(trailers.text.debugDescription)"
            default: "\(event)"
            }
        }
        #expect(events == ["body hello", "body !", "end \(lines.debugDescription)"])
    }

    /// Requests that are refused before they become an event: reset (PROTOCOL_ERROR), or CONNECT answered 501.
    @Test(arguments: [
        ("host disagrees", ClientFrames.get("/", [("host", "b.example")]), UInt32(1)),
        ("uppercase name", ClientFrames.get("/", [("X-Up", "1")]), UInt32(1)),
        ("connection-specific", ClientFrames.get("/", [("connection", "close")]), UInt32(1)),
        ("te gzip", ClientFrames.get("/", [("te", "gzip")]), UInt32(1)),
        ("pseudo repeated", ClientFrames.get("/", [(":path", "/b")]), UInt32(1)),
        ("CR in a value", ClientFrames.get("/", [("x", "a\rb")]), UInt32(1)),
        ("no :path", [(":method", "GET"), (":scheme", "https"), (":authority", "a.example")], UInt32(1)),
    ])
    func malformedRequestsAreResetWithoutAnEvent(_ name: String, _ fields: [(String, String)], _ code: UInt32) {
        let session = Self.session(ClientFrames.headers(1, fields, endStream: true))
        #expect(!session.events.contains { if case .request = $0 { true } else { false } }, "\(name)")
        var out: [UInt8] = []
        session.send(into: &out)
        #expect(ServerFrames(out).resets == [code], "\(name)")
    }

    /// A refused request is one event, whether the refusal is a reset or an answer of the proxy's own: the stream's
    /// close after the RST_STREAM (or the answer) goes out is not reported again (the shell prints one line per event).
    @Test(arguments: [
        [(":method", "GET"), (":scheme", "https"), (":path", "/"), (":authority", "a.example"), ("host", "b.example")],
        [(":method", "CONNECT"), (":authority", "a.example:443")],
    ])
    func aRefusedStreamIsReportedOnce(_ fields: [(String, String)]) {
        let session = Self.session(ClientFrames.headers(1, fields, endStream: false))
        var out: [UInt8] = []
        session.send(into: &out)
        #expect(session.receive(ClientFrames.settings[...]))
        session.send(into: &out)
        let refusals = session.events.filter { if case .refused(1, _) = $0 { true } else { false } }
        #expect(refusals.count == 1, "\(session.events)")
    }

    @Test func connectIsAnswered501() {
        let session = Self.session(
            ClientFrames.headers(1, [(":method", "CONNECT"), (":authority", "a.example:443")], endStream: false))
        var out: [UInt8] = []
        session.send(into: &out)
        let frames = ServerFrames(out)
        #expect(frames.headers.first?.first { $0.name == ":status" }?.value == "501")
        #expect(Self.text(frames.data).contains("CONNECT over HTTP/2 is not supported"))
    }

    /// A response head as the machine hands it over: the upstream's, through no rewrite.
    static func head(_ text: String) -> (Int, OutgoingHead) {
        let response = try! HTTPHeadParser().parseResponse(Array(text.utf8))
        return (response.status, OutgoingHead(response.head))
    }

    static func frames(_ session: HTTP2ServerSession) -> ServerFrames {
        var out: [UInt8] = []
        session.send(into: &out)
        return ServerFrames(out)
    }

    /// RFC 9113 §8.2.2 and §8.2.3, RFC 7541 §7.1.3: a response's connection-specific fields (and those its
    /// Connection names) are dropped, names are lowercase, each Set-Cookie is its own field and never indexed; the
    /// payload is DATA, and the stream ends with it.
    @Test func aResponseBecomesHeadersAndData() {
        let session = Self.session(ClientFrames.headers(1, ClientFrames.get("/"), endStream: true))
        session.events.removeAll()
        let (status, head) = Self.head(
            "HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n"
                + "Set-Cookie: a=1; Path=/\r\nSet-Cookie: b=2\r\nContent-Type: text/plain\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n")
        // In pieces, as an upstream's bytes come.
        session.respond(1, parts: [.head(status: status, head)], body: Array("hello".utf8)[...])
        session.respond(1, parts: [], body: Array(", world".utf8)[...])
        session.respond(1, parts: [.end(trailers: FieldSection())], body: [])
        let frames = Self.frames(session)
        let fields = frames.headers.first ?? []
        #expect(
            fields.map { "\($0.name): \($0.value)" } == [
                ":status: 200", "set-cookie: a=1; Path=/", "set-cookie: b=2", "content-type: text/plain",
            ])
        #expect(fields.filter(\.neverIndexed).map(\.name) == ["set-cookie", "set-cookie"])
        #expect(Self.text(frames.data) == "hello, world")
        #expect(frames.endStream)
        #expect(session.responseComplete(1))
    }

    /// An exchange that closes before its response's end resets the stream (INTERNAL_ERROR); one that ended it
    /// leaves it whole.
    @Test(arguments: [(false, [UInt32(2)], false), (true, [], true)])
    func theMachineClosingFinishesOrResetsTheStream(_ ended: Bool, _ resets: [UInt32], _ endStream: Bool) {
        let session = Self.session(ClientFrames.headers(1, ClientFrames.get("/"), endStream: true))
        let (status, head) = Self.head("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
        session.respond(
            1, parts: [.head(status: status, head)] + (ended ? [.end(trailers: FieldSection())] : []),
            body: Array("abc".utf8)[...])
        session.finish(1)
        let frames = Self.frames(session)
        #expect(frames.resets == resets)
        #expect(frames.endStream == endStream)
    }

    /// 100 Continue is an interim HEADERS (RFC 9113 §8.1), the final response follows on the same stream.
    @Test func anInterimResponseComesBeforeTheFinalOne() {
        let session = Self.session(
            ClientFrames.headers(1, ClientFrames.get("/", [("content-length", "2")], method: "POST"), endStream: false))
        let interim = Self.head("HTTP/1.1 100 Continue\r\n\r\n")
        let final = Self.head("HTTP/1.1 204 No Content\r\n\r\n")
        session.respond(
            1,
            parts: [
                .head(status: interim.0, interim.1), .head(status: final.0, final.1), .end(trailers: FieldSection()),
            ],
            body: [])
        let statuses = Self.frames(session).headers.map { $0.first { $0.name == ":status" }?.value }
        #expect(statuses == ["100", "204"])
    }

    /// An answer of the proxy's own is a whole response: its status and fields, its body as DATA, the end.
    @Test func anAnswerOfTheProxysOwnIsWhole() {
        let session = Self.session(ClientFrames.headers(1, ClientFrames.get("/"), endStream: true))
        let answer = ProxyAnswer(status: 502, reason: "upstream x:80 refused", via: "cookie-proxy", close: true)
        session.respond(1, parts: [.own(status: 502, fields: answer.typedFields, body: answer.body)], body: [])
        let frames = Self.frames(session)
        #expect(
            (frames.headers.first ?? []).map { "\($0.name): \($0.value)" } == [
                ":status: 502", "content-type: text/plain; charset=utf-8", "content-length: 22",
                "via: 1.1 cookie-proxy",
            ])
        #expect(Self.text(frames.data) == "upstream x:80 refused\n")
        #expect(frames.endStream)
    }

    /// RFC 9113 §6.5.2 and §10.5.1: a request's header list is held to the head limits as it is decoded (each
    /// field's name and value plus 32 bytes; the number of regular fields), not after: one over either limit is
    /// answered `431` with the limit named, passes nothing on, and keeps none of its fields; the HPACK state
    /// stays whole, so the next request on the connection is read.
    @Test(arguments: [
        // 4 pseudo-headers (47 + 32 × 4 = 175 bytes) and fields of 1 + 1 + 32 = 34 bytes each.
        (10, 1024, true), (11, 1024, false), (10, 175 + 10 * 34, true), (10, 175 + 10 * 34 - 1, false),
    ])
    func aHeaderListOverTheLimitsIsAnswered431(_ fields: Int, _ bytes: Int, _ passes: Bool) {
        let extra = (0..<fields).map { ("x", String($0 % 10)) }
        let session = Self.session(
            ClientFrames.headers(1, ClientFrames.get("/", extra), endStream: true),
            ClientFrames.headers(3, ClientFrames.get("/next"), endStream: true),
            limits: HTTPParserLimits(maximumHeadBytes: bytes, maximumFieldCount: 10))
        let requests = session.events.compactMap { event -> Int32? in
            if case .request(let stream, _, _) = event { stream } else { nil }
        }
        #expect(requests == (passes ? [1, 3] : [3]))
        if !passes {
            var out: [UInt8] = []
            session.send(into: &out)
            let frames = ServerFrames(out)
            #expect(frames.headers.first?.first { $0.name == ":status" }?.value == "431")
            #expect(Self.text(frames.data).contains(fields > 10 ? "--max-headers" : "--max-head-bytes"))
        }
    }

    /// The HPACK bomb (RFC 7541 §7.3): 80 KB of frames naming one 4,000-byte table entry 81,000 times is answered
    /// `431` after its first 64 KiB, with nothing of it kept in the stream.
    @Test func anHPACKBombIsRefusedWithoutBeingStored() {
        let session = Self.session(ClientFrames.bomb(1, ClientFrames.get("/"), frames: 5, endStream: true))
        #expect(session.events.allSatisfy { if case .request = $0 { false } else { true } })
        #expect(session.streams[1].map { $0.fields.isEmpty && $0.headerListTooLarge } ?? true)
        var out: [UInt8] = []
        session.send(into: &out)
        #expect(ServerFrames(out).headers.first?.first { $0.name == ":status" }?.value == "431")
        #expect(session.failure == nil)
    }

    /// RFC 9113 §8.1: a response that ends in its head (its end handed over with it: gRPC's Trailers-Only answer,
    /// a 204, an empty body) is one HEADERS frame with END_STREAM and no DATA; one with a body has its DATA, and one
    /// with trailers ends in a second HEADERS.
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\ngrpc-status: 5\r\n\r\n", "", [], 1, 0),
        ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "", [], 1, 0),
        ("HTTP/1.1 204 No Content\r\n\r\n", "", [], 1, 0),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", "hi", [], 1, 1),
        ("HTTP/1.1 200 OK\r\n\r\n", "", [("grpc-status", "0")], 2, 0),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", "hi", [("grpc-status", "0")], 2, 1),
    ])
    func aResponseThatEndsInItsHeadIsOneHeadersFrame(
        _ response: String, _ body: String, _ trailers: [(String, String)], _ headersFrames: Int, _ dataFrames: Int
    ) {
        let session = Self.session(ClientFrames.headers(1, ClientFrames.get("/"), endStream: true))
        let (status, head) = Self.head(response)
        session.respond(
            1, parts: [.head(status: status, head), .end(trailers: FieldSection(trailers))], body: Array(body.utf8)[...]
        )
        let frames = Self.frames(session)
        #expect(frames.headers.count == headersFrames)
        #expect(frames.dataFrames == dataFrames)
        #expect(frames.endStream)
        if !trailers.isEmpty { #expect(frames.headers.last?.map(\.name) == ["grpc-status"]) }
        #expect(session.responseComplete(1))
    }

    /// A connection that does not open with the preface is a connection error: GOAWAY, then the end.
    @Test func aBadPrefaceFailsTheConnection() {
        let session = HTTP2ServerSession(absoluteTargets: false)
        #expect(!session.receive(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...]))
        #expect(session.failure != nil)
    }
}

extension FieldSection {
    /// The fields as HTTP/1.1's field lines, for comparing.
    var text: String {
        var out: [UInt8] = []
        writeLines(into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
