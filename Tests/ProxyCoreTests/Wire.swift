import HTTPHeads
import ProxyCore

/// A byte-level transcript of one client connection through the machine: bytes in, bytes and commands out.
/// `oneByteAtATime` feeds every input a byte per event, to show the machine reads the same either way.
struct Wire {
    var machine: ProxyConnectionMachine
    var io = ConnectionIO()
    var toClient: [UInt8] = []
    var toUpstream: [UInt8] = []
    var commands: [ConnectionIO.Command] = []
    let oneByteAtATime: Bool

    init(oneByteAtATime: Bool = false, _ configure: (inout ProxyConfiguration) -> Void = { _ in }) {
        var configuration = ProxyConfiguration()
        configuration.ownPorts = [8080]
        configuration.addVia = false
        configure(&configuration)
        self.oneByteAtATime = oneByteAtATime
        machine = ProxyConnectionMachine(configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 })
    }

    mutating func collect() {
        toClient += io.toClient
        toUpstream += io.toUpstream
        commands += io.commands
        io = ConnectionIO()
    }

    mutating func client(_ bytes: [UInt8]) {
        if oneByteAtATime {
            for b in bytes {
                machine.clientData([b][...], &io)
                collect()
            }
        } else {
            machine.clientData(bytes[...], &io)
            collect()
        }
    }

    mutating func upstream(_ bytes: [UInt8]) {
        if oneByteAtATime {
            for b in bytes {
                machine.upstreamData([b][...], &io)
                collect()
            }
        } else {
            machine.upstreamData(bytes[...], &io)
            collect()
        }
    }

    mutating func client(_ s: String) { client(Array(s.utf8)) }
    mutating func upstream(_ s: String) { upstream(Array(s.utf8)) }

    mutating func connected(reused: Bool = false) {
        machine.upstreamConnected(reused: reused, &io)
        collect()
    }

    mutating func upstreamClosed() {
        machine.upstreamClosed(&io)
        collect()
    }

    var clientText: String { String(decoding: toClient, as: UTF8.self) }
    var upstreamText: String { String(decoding: toUpstream, as: UTF8.self) }

    /// The connect commands so far.
    var connects: [Origin] {
        commands.compactMap { if case .connect(let o, _, _) = $0 { return o } else { return nil } }
    }

    /// Answers every request the machine forwards with `response` until the input is used up: the upstream
    /// side of a pipelined exchange. Returns how many requests were answered.
    @discardableResult
    mutating func serve(_ response: String, limit: Int = 16) -> Int {
        var answered = 0
        while answered < limit, case .connect = commands.last {
            connected(reused: answered > 0)
            upstream(response)
            answered += 1
        }
        return answered
    }
}

/// Bytes from text where `\u{..}` escapes stand for single bytes below 0x100 (obs-text included).
func bytes(_ s: String) -> [UInt8] {
    s.unicodeScalars.map { $0.value < 0x100 ? UInt8($0.value) : 0x3F }
}
