// libFuzzer target: the HTTP/2 session (nghttp2 and the typed requests it makes). The input is a list of frames,
// each a type, flags, a stream and a payload; a HEADERS payload is written as HPACK literals from fuzzed fields,
// the names picked from the pseudo-headers and the fields the session treats apart, or taken as raw bytes, so
// that the fuzzer reaches requests nghttp2 accepts. Each request the session passes on goes, with its body parts,
// end and trailers, through a connection machine towards an HTTP/1.1 upstream, as the proxy sends it. Whatever the
// frames: no crash, and every request forwarded whole has one reading (the strict and the lenient reader of
// Tests/ProxyCoreTests/TwoReadings.swift agree).
import HTTPHeads
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
    let absolute = input.first.map { $0 & 1 == 1 } ?? false
    let session = HTTP2ServerSession(absoluteTargets: absolute)
    _ = session.receive(wire[...])
    var configuration = ProxyConfiguration()
    if !absolute { configuration.reverseUpstream = Origin(host: "127.0.0.1", port: 3000) }
    // Each stream's exchange: its machine, what it sent upstream, whether it forwarded the request.
    var machines: [Int32: (machine: ProxyConnectionMachine, sent: [UInt8], connected: Bool)] = [:]
    func step(_ id: Int32, _ event: (inout ProxyConnectionMachine, inout ConnectionIO) -> Void) {
        guard var exchange = machines[id] else { return }
        var io = ConnectionIO()
        event(&exchange.machine, &io)
        if !exchange.connected, io.commands.contains(where: { if case .connect = $0 { true } else { false } }) {
            exchange.connected = true
            exchange.machine.upstreamConnected(reused: false, &io)
        }
        exchange.sent += io.toUpstream
        machines[id] = exchange
    }
    for event in session.events {
        switch event {
        case .request(let stream, let head, let framing):
            var machine = ProxyConnectionMachine(
                configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 }, client: .http2)
            machines[stream] = (machine, [], false)
            step(stream) { $0.clientRequest(head, framing: framing, &$1) }
        case .body(let stream, let bytes):
            step(stream) { $0.clientBody(bytes[...], &$1) }
            session.consume(stream, bytes.count)
        case .requestEnded(let stream, let trailers):
            step(stream) { $0.clientEnded(trailers: trailers, &$1) }
            if let exchange = machines[stream], exchange.connected, let difference = readingsDiffer(exchange.sent) {
                fatalError(difference)
            }
        case .closed, .refused: break
        }
    }
    var out: [UInt8] = []
    session.send(into: &out)
    return 0
}
