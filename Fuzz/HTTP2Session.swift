// libFuzzer target: the HTTP/2 session (nghttp2 and the translation to HTTP/1.1). The input is a list of frames,
// each a type, flags, a stream and a payload; a HEADERS payload is written as HPACK literals from fuzzed fields,
// the names picked from the pseudo-headers and the fields the translation treats apart, or taken as raw bytes, so
// that the fuzzer reaches requests nghttp2 accepts. Whatever the frames: no crash, and every request the session
// passes on (head, body parts and end, as the connection machine would read them) has one reading (the strict
// and the lenient reader of Tests/ProxyCoreTests/TwoReadings.swift agree) and parses with the proxy's parser.
import ProxyCore
import ProxyHTTP2

let names: [[UInt8]] = [
    ":method", ":scheme", ":path", ":authority", ":protocol", "host", "cookie", "content-length", "te",
    "transfer-encoding", "connection", "x-a", "X-Up", "x b", "set-cookie",
].map { Array($0.utf8) }
let values: [[UInt8]] = [
    "GET", "POST", "CONNECT", "http", "https", "/", "/p?q", "*", "a.example", "a.example:8080", "a=1", "trailers",
    "5", "0", "chunked", "x\r\ny", "a\u{0}b", " sp ", "",
].map { Array($0.utf8) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2Session(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    // The client's preface and an empty SETTINGS, then the fuzzed frames on streams 1, 3, … 15 and even ones.
    let wire =
        Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]
        + fuzzFrames(input, from: 0, names: names, values: values, maximumFields: 12) {
            UInt8($0 % 8) * 2 + ($0 & 0x80 != 0 ? 0 : 1)
        }
    let session = HTTP2ServerSession(absoluteTargets: input.first.map { $0 & 1 == 1 } ?? false)
    _ = session.receive(wire[...])
    var messages: [Int32: [UInt8]] = [:]
    for event in session.events {
        switch event {
        case .request(let stream, let head, _):
            guard (try? HTTPHeadParser().parseRequest(head)) != nil else {
                fatalError("a request head the proxy cannot parse: \(String(decoding: head, as: UTF8.self))")
            }
            messages[stream] = head
            session.respond(
                stream, Array("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nContent-Length: 2\r\n\r\nok".utf8)[...])
        case .body(let stream, let bytes, let flowed):
            messages[stream, default: []] += bytes
            session.consume(stream, flowed)
        case .requestEnded(let stream, let bytes):
            messages[stream, default: []] += bytes
            if let message = messages[stream], let difference = readingsDiffer(message) { fatalError(difference) }
        case .closed, .refused: break
        }
    }
    var out: [UInt8] = []
    session.send(into: &out)
    return 0
}
