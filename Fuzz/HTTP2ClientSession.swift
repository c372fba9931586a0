// libFuzzer target: the HTTP/2 session towards upstreams (nghttp2 and the translation to HTTP/1.1). The input is
// what an upstream sends: frames, each a type, flags, a stream and a payload, a HEADERS payload written as HPACK
// literals from fuzzed fields (names from the pseudo-headers and the fields framing depends on, or raw bytes).
// Whatever the upstream sends: no crash, and once the response is whole, the HTTP/1.1 bytes the connection
// machine reads parse and have one reading (the strict and the lenient reader of
// Tests/ProxyCoreTests/TwoReadings.swift agree).
import ProxyCore
import ProxyHTTP2

let names: [[UInt8]] = [
    ":status", ":path", "content-length", "transfer-encoding", "set-cookie", "grpc-status", "connection", "x-a",
    "X-Up", "te", "trailer",
].map { Array($0.utf8) }
let values: [[UInt8]] = [
    "200", "100", "101", "204", "304", "404", "5", "0", "18446744073709551616", "chunked", "a=1", "x\r\ny", "",
    " sp ", "close",
].map { Array($0.utf8) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2ClientSession(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let method = input.first.map { $0 & 1 == 0 ? "GET" : "HEAD" } ?? "GET"
    let session = HTTP2ClientSession(scheme: "http")
    let exchange = session.open()
    session.request(exchange, Array("\(method) / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
    var out: [UInt8] = []
    session.send(into: &out)
    // The upstream's empty SETTINGS, then the fuzzed frames on stream 1 (the request's) or 0.
    let wire =
        [0, 0, 0, 4, 0, 0, 0, 0, 0]
        + fuzzFrames(input, from: 1, names: names, values: values, maximumFields: 8) { $0 % 4 == 0 ? 0 : 1 }
    let ok = session.receive(wire[...])
    var response: [UInt8] = []
    exchange.takeResponse(into: &response)
    session.send(into: &out)
    if ok && exchange.responseDone && exchange.failure == nil && !response.isEmpty,
        let difference = readingsDiffer(response, responsesTo: [method])
    {
        fatalError(difference)
    }
    return 0
}
