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
    var i = 0
    func next() -> UInt8? {
        guard i < input.count else { return nil }
        defer { i += 1 }
        return input[i]
    }
    let method = (next() ?? 0) & 1 == 0 ? "GET" : "HEAD"
    let session = HTTP2ClientSession(scheme: "http")
    session.request(Array("\(method) / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...])
    var out: [UInt8] = []
    session.send(into: &out)
    var wire: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]
    while let kind = next(), let flags = next(), let streamByte = next() {
        let type = kind % 10
        let stream = UInt8(streamByte % 4 == 0 ? 0 : 1)
        var payload: [UInt8] = []
        if type == 1 && kind & 0x80 == 0 {
            let count = Int(next() ?? 0) % 8
            for _ in 0..<count {
                guard let n = next(), let v = next() else { break }
                let name = n < 200 ? names[Int(n) % names.count] : Array(input[i..<min(input.count, i + Int(n % 8))])
                if n >= 200 { i = min(input.count, i + Int(n % 8)) }
                let value =
                    v < 200 ? values[Int(v) % values.count] : Array(input[i..<min(input.count, i + Int(v % 16))])
                if v >= 200 { i = min(input.count, i + Int(v % 16)) }
                payload += [0x00, UInt8(name.count)] + name + [UInt8(value.count)] + value
            }
        } else {
            let length = Int(next() ?? 0) % 64
            payload = Array(input[i..<min(input.count, i + length)])
            i = min(input.count, i + length)
        }
        let n = payload.count
        wire += [UInt8(n >> 16), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags | (type == 1 ? 0x04 : 0)]
        wire += [0, 0, 0, stream] + payload
    }
    let ok = session.receive(wire[...])
    var response: [UInt8] = []
    session.takeResponse(into: &response)
    session.send(into: &out)
    if ok && session.isIdle && !response.isEmpty, let difference = readingsDiffer(response, responsesTo: [method]) {
        fatalError(difference)
    }
    return 0
}
