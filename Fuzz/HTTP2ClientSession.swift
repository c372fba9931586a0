// libFuzzer target: the HTTP/2 session towards upstreams (nghttp2 and the typed responses it makes). The input is
// what an upstream sends: frames, each a type, flags, a stream and a payload, a HEADERS payload written as HPACK
// literals from fuzzed fields (names from the pseudo-headers and the fields framing depends on, or raw bytes). What
// the session delivers goes through a connection machine to an HTTP/1.1 client, as the proxy relays it. Whatever
// the upstream sends: no crash, and once the exchange has finished, the bytes the client got parse and have one
// reading (the strict and the lenient reader of Tests/ProxyCoreTests/TwoReadings.swift agree).
import HTTPHeads
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
    // The request as the machine hands it to an h2c route's upstream (typed), and the response back through it to
    // an HTTP/1.1 client.
    var configuration = ProxyConfiguration()
    configuration.routes = RouteTable([ReverseRoute(upstream: Origin(host: "127.0.0.1", port: 3000), scheme: .h2c)])
    var machine = ProxyConnectionMachine(configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 })
    var io = ConnectionIO()
    machine.clientData(Array("\(method) / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)[...], &io)
    machine.upstreamConnected(reused: false, speaking: .http2, &io)
    session.request(exchange, parts: io.toUpstreamParts, body: io.toUpstream[...])
    io = ConnectionIO()
    var out: [UInt8] = []
    session.send(into: &out)
    // The upstream's empty SETTINGS, then the fuzzed frames on stream 1 (the request's) or 0.
    let wire =
        [0, 0, 0, 4, 0, 0, 0, 0, 0]
        + fuzzFrames(input, from: 1, names: names, values: values, maximumFields: 8) { $0 % 4 == 0 ? 0 : 1 }
    let ok = session.receive(wire[...])
    let delivery = exchange.takeResponse()
    for (head, framing) in delivery.heads { machine.upstreamResponse(head, framing: framing, &io) }
    if !delivery.payload.isEmpty { machine.upstreamBody(delivery.payload[...], &io) }
    if let trailers = delivery.end { machine.upstreamEnded(trailers: trailers, &io) }
    session.send(into: &out)
    // Finished whole: the client's connection waits for its next request.
    if ok && exchange.responseDone && exchange.failure == nil && machine.phase == .idle,
        let difference = readingsDiffer(io.toClient, responsesTo: [method])
    {
        fatalError(difference)
    }
    return 0
}
