import CookieKit
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

    /// What waits to be written: formatting and lint happen on the writer thread, off the event loops.
    enum Item: Sendable {
        case record(TransformationRecord, lintURL: RequestURL, now: Int64)
        case line(String)
    }

    private struct State {
        var queue: [Item] = []
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

    /// Queues a record; its findings are computed (lint of the result at `lintURL`) by the writer.
    func submit(_ record: TransformationRecord, lintURL: RequestURL, now: Int64) {
        enqueue(.record(record, lintURL: lintURL, now: now))
    }

    /// A line of its own, e.g. a reload event.
    func submit(line: String) { enqueue(.line(line)) }

    private func enqueue(_ item: Item) {
        // The writer drains everything it wakes for, so only the first item of a batch needs to wake it.
        let wake = state.withLock { s -> Bool in
            if s.closed || s.queue.count >= capacity {
                s.dropped += 1
                return false
            }
            s.queue.append(item)
            return s.queue.count == 1
        }
        if wake { signal.signal() }
    }

    private func format(_ item: Item) -> [UInt8] {
        switch item {
        case .line(let text): return Array(text.utf8)
        case .record(var record, let url, let now):
            record.findings = CookieLint.findings(
                for: record.outcome.result ?? record.outcome.original, from: url, now: now)
            switch destination {
            case .standardOutput(let compact, let color) where compact:
                return Array(record.line(showValues: showValues, color: color).utf8)
            default:
                var out: [UInt8] = []
                out.reserveCapacity(512)
                record.json(showValues: showValues).write(to: &out)
                return out
            }
        }
    }

    private func writerLoop() {
        while true {
            signal.wait()
            let (batch, closed) = state.withLock { s -> ([Item], Bool) in
                let b = s.queue
                s.queue.removeAll(keepingCapacity: true)
                return (b, s.closed)
            }
            if !batch.isEmpty {
                var bytes: [UInt8] = []
                for item in batch {
                    bytes += format(item)
                    bytes.append(0x0A)
                }
                Console.writeAll(fd, bytes)
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
