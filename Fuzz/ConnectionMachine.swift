// libFuzzer target: the connection machine. The first byte picks the side the rest goes to (client bytes with
// every forwarded request answered, then for a third of the inputs the client's half-close; or the upstream's bytes
// for one GET) and how it is split into events. What
// the machine forwards, where it forwards a whole message, has one reading (the strict and the lenient reader
// agree); where it refuses part-way, it closes the connection. Whatever happened, the buffers the machine then
// gives up (for an event loop's next connection) carry nothing of it.
import HTTPHeads
import ProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConnectionMachine(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let mode = data[0]
    let step = Int(mode >> 1) % 32 + 1
    let stream = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var configuration = ProxyConfiguration()
    configuration.addVia = mode & 0x40 != 0
    if mode & 0x80 != 0 { configuration.reverseUpstream = Origin(host: "127.0.0.1", port: 3000) }
    var machine = ProxyConnectionMachine(configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 })
    defer { buffersCarryNothing(&machine, configuration) }
    var io = ConnectionIO()
    var toClient: [UInt8] = []
    var toUpstream: [UInt8] = []
    var commands: [ConnectionIO.Command] = []
    func collect() {
        toClient += io.toClient
        toUpstream += io.toUpstream
        commands += io.commands
        io = ConnectionIO()
    }
    if mode & 1 == 0 {
        var at = 0
        var answered = 0
        func answerConnects() {
            while case .connect = commands.last, answered < 64 {
                machine.upstreamConnected(reused: answered > 0, &io)
                collect()
                machine.upstreamData(Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)[...], &io)
                collect()
                answered += 1
            }
        }
        // A third of the inputs end with the client's half-close after its last bytes, before or after the upstream
        // connection of the exchange in flight is there (RFC 9112 §9.6: whole requests are still answered).
        let halfClose = size % 3 == 0
        while at < stream.count {
            let end = min(stream.count, at + step)
            machine.clientData(stream[at..<end], &io)
            collect()
            at = end
            if halfClose && at == stream.count && step % 2 == 0 {
                machine.clientClosed(&io)
                collect()
            }
            answerConnects()
        }
        if halfClose && step % 2 == 1 {
            machine.clientClosed(&io)
            collect()
            answerConnects()
        }
        guard !toUpstream.isEmpty,
            !commands.contains(where: { if case .connect(_, true, _) = $0 { true } else { false } })
        else { return 0 }
        if StrictReader.read(toUpstream) == nil {
            precondition(
                commands.contains(.resetUpstream) || commands.contains(.releaseUpstream(reusable: false))
                    || machine.phase != .idle,
                "forwarded bytes that do not read as whole messages")
            return 0
        }
        if let difference = readingsDiffer(toUpstream) { fatalError(difference) }
    } else {
        machine.clientData(Array("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8)[...], &io)
        collect()
        machine.upstreamConnected(reused: false, &io)
        collect()
        var at = 0
        while at < stream.count {
            let end = min(stream.count, at + step)
            machine.upstreamData(stream[at..<end], &io)
            collect()
            at = end
        }
        if machine.phase != .idle && machine.phase != .closed {
            machine.upstreamClosed(&io)
            collect()
        }
        if machine.phase == .tunnel { return 0 }
        if StrictReader.read(toClient, responsesTo: ["GET"]) == nil {
            precondition(commands.contains(.closeClient), "sent the client bytes that do not read as a response")
            return 0
        }
        if let difference = readingsDiffer(toClient, responsesTo: ["GET"]) { fatalError(difference) }
    }
    return 0
}

/// A closed connection's buffers pass on capacity only: a machine that adopts them does for one fixed exchange
/// exactly what a machine without them does.
func buffersCarryNothing(_ machine: inout ProxyConnectionMachine, _ configuration: ProxyConfiguration) {
    var buffers = machine.takeBuffers()
    func exchange(adopting: Bool) -> [UInt8] {
        var next = ProxyConnectionMachine(configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 })
        if adopting { next.adopt(&buffers) }
        var io = ConnectionIO()
        next.clientData(Array("GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8)[...], &io)
        next.upstreamConnected(reused: false, &io)
        next.upstreamData(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)[...], &io)
        return io.toUpstream + [0] + io.toClient
    }
    precondition(
        exchange(adopting: true) == exchange(adopting: false), "a connection's buffers carried bytes to the next")
}
