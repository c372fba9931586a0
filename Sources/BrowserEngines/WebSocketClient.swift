import Foundation
import HTTPHeads
import ProxyPlatform

/// A blocking WebSocket client (RFC 6455) for one loopback automation endpoint, Firefox's WebDriver BiDi, as its
/// channel. Text messages only; a ping is answered, a close or a broken frame ends it with a failure.
final class WebSocketClient: BrowserChannel {
    private let fd: Int32
    private var received: [UInt8] = []
    /// The fragments of a message not yet whole (§5.4), kept across a wait that ran out.
    private var partial: [UInt8] = []
    private(set) var closed = false

    /// Connects to `ws://127.0.0.1:port/path` and completes the opening handshake (RFC 6455 §4.1).
    init(host: String, port: Int, path: String) throws(BrowserFailure) {
        switch Descriptors.connect(host: host, port: port, milliseconds: 5000) {
        case .success(let fd): self.fd = fd
        case .failure(let error): throw BrowserFailure("cannot connect to ws://\(host):\(port)\(path): \(error)")
        }
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let request =
            "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
        if let error = Descriptors.sendAll(fd, Array(request.utf8)) {
            close(fd)
            throw BrowserFailure("cannot write the WebSocket handshake: \(error)")
        }
        // The answer's head, read with the proxy's own parser; what follows it is the first frames' bytes.
        let deadline = Date().addingTimeInterval(10)
        var parser = HTTPHeadParser()
        while true {
            if let length = try? parser.headLength(received[...]) {
                let status = (try? parser.parseResponse(Array(received[..<length])))?.status
                received.removeSubrange(..<length)
                guard status == 101 else {
                    close(fd)
                    throw BrowserFailure("the WebSocket handshake was answered \(status.map(String.init) ?? "badly")")
                }
                return
            }
            let filled: Bool
            do { filled = try fill(until: deadline) } catch {
                close(fd)
                throw error
            }
            guard filled else {
                close(fd)
                throw BrowserFailure("the browser did not answer the WebSocket handshake in time")
            }
        }
    }

    deinit { close(fd) }

    /// Sends one text message (a single frame, masked as a client's must be, §5.3).
    func send(_ text: String) throws(BrowserFailure) {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        switch payload.count {
        case ..<126: frame.append(0x80 | UInt8(payload.count))
        case ..<65536: frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        for (i, byte) in payload.enumerated() { frame.append(byte ^ mask[i & 3]) }
        if let error = Descriptors.sendAll(fd, frame) { throw BrowserFailure("WebSocket write failed: \(error)") }
    }

    /// The next text message (fragments joined, §5.4), or nil when none is whole by `deadline`.
    func receive(until deadline: Date) throws(BrowserFailure) -> String? {
        while true {
            guard let (fin, opcode, payload) = try frame(until: deadline) else { return nil }
            switch opcode {
            case 0x9:  // ping: answered with its payload (§5.5.2)
                try control(0xA, payload)
            case 0xA: continue
            case 0x8:
                closed = true
                throw BrowserFailure("the browser closed its WebSocket")
            case 0x0, 0x1, 0x2:
                partial += payload
                if fin {
                    defer { partial = [] }
                    return String(decoding: partial, as: UTF8.self)
                }
            default: throw BrowserFailure("unknown WebSocket opcode \(opcode)")
            }
        }
    }

    private func control(_ opcode: UInt8, _ payload: [UInt8]) throws(BrowserFailure) {
        let mask: [UInt8] = [0, 0, 0, 0]
        let frame = [0x80 | opcode, 0x80 | UInt8(min(payload.count, 125))] + mask + payload.prefix(125)
        if let error = Descriptors.sendAll(fd, frame) { throw BrowserFailure("WebSocket write failed: \(error)") }
    }

    /// One frame: a server's frames are not masked (§5.1); lengths in 7, 16 or 64 bits (§5.2).
    private func frame(until deadline: Date) throws(BrowserFailure) -> (Bool, UInt8, [UInt8])? {
        while true {
            if received.count >= 2 {
                let fin = received[0] & 0x80 != 0
                let opcode = received[0] & 0x0F
                guard received[1] & 0x80 == 0 else { throw BrowserFailure("the browser sent a masked frame") }
                var length = Int(received[1] & 0x7F)
                var start = 2
                if length == 126, received.count >= 4 {
                    length = Int(received[2]) << 8 | Int(received[3])
                    start = 4
                } else if length == 127, received.count >= 10 {
                    length = received[2..<10].reduce(0) { $0 << 8 | Int($1) }
                    start = 10
                } else if length >= 126 {
                    length = -1
                }
                if length >= 0, received.count >= start + length {
                    let payload = Array(received[start..<(start + length)])
                    received.removeSubrange(..<(start + length))
                    return (fin, opcode, payload)
                }
            }
            guard try fill(until: deadline) else { return nil }
        }
    }

    /// Reads what came by `deadline`: false when nothing did.
    private func fill(until deadline: Date) throws(BrowserFailure) -> Bool {
        let left = Int(deadline.timeIntervalSinceNow * 1000)
        guard left > 0, Descriptors.waitReadable(fd, milliseconds: left) else { return false }
        switch Descriptors.receive(fd, maximum: 65536) {
        case .bytes(let bytes): received += bytes
        default:
            closed = true
            throw BrowserFailure("the browser closed its WebSocket")
        }
        return true
    }
}
