import Foundation
import ProxyPlatform

/// The DevTools protocol's pipe (`--remote-debugging-pipe`): messages to the browser on one descriptor, messages
/// from it on another, each a JSON text ended by NUL.
final class PipeChannel: BrowserChannel {
    private let commands: Int32
    private let replies: Int32
    private var received: [UInt8] = []
    private(set) var closed = false

    init(commands: Int32, replies: Int32) {
        (self.commands, self.replies) = (commands, replies)
    }

    deinit {
        close(commands)
        close(replies)
    }

    func send(_ message: String) throws(BrowserFailure) {
        guard !closed else { throw BrowserFailure("Chromium closed its DevTools pipe (it ended or crashed)") }
        let bytes = Array(message.utf8) + [0]
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(commands, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                closed = true
                throw BrowserFailure("Chromium closed its DevTools pipe (it ended or crashed)")
            }
            offset += n
        }
    }

    func receive(until deadline: Date) throws(BrowserFailure) -> String? {
        while true {
            if let end = received.firstIndex(of: 0) {
                let message = String(decoding: received[..<end], as: UTF8.self)
                received.removeSubrange(...end)
                return message
            }
            guard !closed else { throw BrowserFailure("Chromium closed its DevTools pipe (it ended or crashed)") }
            let left = Int(deadline.timeIntervalSinceNow * 1000)
            guard left > 0, Descriptors.waitReadable(replies, milliseconds: left) else { return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(replies, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                closed = true
                throw BrowserFailure("Chromium closed its DevTools pipe (it ended or crashed)")
            }
            received += chunk[0..<n]
        }
    }
}

/// Classic WebDriver's HTTP requests as messages: a message sent is `METHOD PATH BODY` (the body a JSON text, or
/// none), the message received its answer, `STATUS BODY`. Each request is its own connection to the driver.
final class WebDriverChannel: BrowserChannel {
    private let port: Int
    private var pending: (method: String, path: String, body: String)? = nil
    private(set) var closed = false

    init(port: Int) { self.port = port }

    func send(_ message: String) throws(BrowserFailure) {
        let parts = message.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2 else { throw BrowserFailure("not a WebDriver request: \(message)") }
        pending = (String(parts[0]), String(parts[1]), parts.count > 2 ? String(parts[2]) : "")
    }

    func receive(until deadline: Date) throws(BrowserFailure) -> String? {
        guard let (method, path, body) = pending else { return nil }
        pending = nil
        let data = Array(body.utf8)
        let request =
            Array(
                ("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(data.count)\r\nConnection: close\r\n\r\n").utf8) + data
        // The driver keeps the connection open after its answer: read to the end of its Content-Length.
        let milliseconds = max(1, Int(deadline.timeIntervalSinceNow * 1000))
        switch LoopbackClient.exchange(host: "127.0.0.1", port: port, request: request, milliseconds: milliseconds) {
        case .success(let answer):
            return "\(answer.status) " + String(decoding: answer.body, as: UTF8.self)
        case .failure(let error) where error.errno == ECONNREFUSED:
            closed = true
            throw BrowserFailure("WebKitWebDriver is gone: \(method) \(path): \(error)")
        case .failure(let error) where error.errno == EAGAIN:
            return nil
        case .failure(let error):
            throw BrowserFailure("WebKitWebDriver: \(method) \(path): \(error)")
        }
    }
}
