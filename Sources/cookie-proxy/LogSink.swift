import CookieRules
import Foundation
import Synchronization

/// Writes transformation records on a thread of its own so that logging never stalls traffic: records
/// wait in a bounded queue; when the writer cannot keep up, new records are dropped and counted.
final class LogSink: Sendable {
    enum Destination: Sendable {
        case standardOutput(compact: Bool, color: Bool)
        case file(String)
    }

    private struct State {
        var queue: [String] = []
        var dropped = 0
        var written = 0
        var closed = false
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    let capacity: Int
    let showValues: Bool
    let destination: Destination
    private let fd: Int32

    init(destination: Destination, showValues: Bool, capacity: Int = 10_000) throws {
        self.destination = destination
        self.showValues = showValues
        self.capacity = capacity
        switch destination {
        case .standardOutput: fd = 1
        case .file(let path):
            let f = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard f >= 0 else {
                throw RulesLoadError(description: "cannot open log file \(path): \(String(cString: strerror(errno)))")
            }
            fd = f
        }
        let thread = Thread { [self] in self.writerLoop() }
        thread.name = "cookie-proxy-log"
        thread.start()
    }

    var droppedCount: Int { state.withLock { $0.dropped } }
    var writtenCount: Int { state.withLock { $0.written } }

    func submit(_ record: TransformationRecord) {
        let text: String
        switch destination {
        case .standardOutput(let compact, let color) where compact: text = record.line(showValues: showValues, color: color)
        default: text = record.json(showValues: showValues).serialized
        }
        submit(line: text)
    }

    /// A line of its own, e.g. a reload event.
    func submit(line: String) {
        let accepted = state.withLock { s -> Bool in
            if s.closed || s.queue.count >= capacity {
                s.dropped += 1
                return false
            }
            s.queue.append(line)
            return true
        }
        if accepted { signal.signal() }
    }

    private func writerLoop() {
        while true {
            signal.wait()
            let (batch, closed) = state.withLock { s -> ([String], Bool) in
                let b = s.queue
                s.queue.removeAll(keepingCapacity: true)
                return (b, s.closed)
            }
            if !batch.isEmpty {
                var text = batch.joined(separator: "\n")
                text += "\n"
                Console.writeAll(fd, text)
                state.withLock { $0.written += batch.count }
            }
            if closed && state.withLock({ $0.queue.isEmpty }) {
                done.signal()
                return
            }
        }
    }

    /// Flushes what is queued and stops the writer.
    func close() {
        state.withLock { $0.closed = true }
        signal.signal()
        _ = done.wait(timeout: .now() + 5)
        if case .file = destination { _ = Foundation.close(fd) }
    }
}
