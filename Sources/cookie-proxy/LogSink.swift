import CookieKit
import CookieRules
import Foundation
import Synchronization

/// Writes transformation records on a thread of its own. Records wait in a bounded queue; when the writer falls
/// behind, the event loop that submits a record waits for room (backpressure: the proxy reads no more requests
/// until the log has caught up), so no record is lost and memory stays bounded. `--log-overflow drop` drops
/// and counts instead.
final class LogSink: Sendable {
    enum Destination: Sendable {
        case standardOutput(compact: Bool, color: Bool)
        case file(String)
    }

    enum Overflow: String, Sendable {
        /// The submitting loop waits for room.
        case block
        /// The record is dropped and counted.
        case drop
    }

    /// What waits to be written: formatting and lint happen on the writer thread, off the event loops.
    enum Item: Sendable {
        case record(TransformationRecord, lintURL: RequestURL, now: Int64)
        case line(String)
        /// Reopen the log file (SIGUSR1): what was queued before goes to the old file, what follows to the new.
        case reopen
    }

    private struct State {
        var queue: [Item] = []
        var dropped = 0
        var written = 0
        var closed = false
        var fd: Int32 = -1
        /// The last write or reopen error, once reported.
        var failure: String? = nil
        var failedRecords = 0
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)
    /// Free places in the queue: taken by a record, given back once it is written.
    private let slots: DispatchSemaphore
    private let done = DispatchSemaphore(value: 0)
    let capacity: Int
    let redaction: Redaction
    let overflow: Overflow
    let destination: Destination
    let terminal: TerminalView?

    init(
        destination: Destination, redaction: Redaction, overflow: Overflow = .block, capacity: Int = 10_000,
        terminal: TerminalView? = nil
    ) throws {
        self.destination = destination
        self.redaction = redaction
        self.overflow = overflow
        self.capacity = capacity
        self.terminal = terminal
        slots = DispatchSemaphore(value: capacity)
        switch destination {
        case .standardOutput: state.withLock { $0.fd = 1 }
        case .file(let path):
            let f = try Self.open(path)
            state.withLock { $0.fd = f }
        }
        let thread = Thread { [self] in self.writerLoop() }
        thread.name = "cookie-proxy-log"
        thread.start()
    }

    static func open(_ path: String) throws(RulesLoadError) -> Int32 {
        let f = Foundation.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard f >= 0 else {
            throw RulesLoadError(description: "cannot open log file \(path): \(String(cString: strerror(errno)))")
        }
        return f
    }

    var droppedCount: Int { state.withLock { $0.dropped } }
    var writtenCount: Int { state.withLock { $0.written } }
    /// Records that could not be written (the file failed), and why.
    var failure: (records: Int, reason: String)? {
        state.withLock { s in s.failure.map { (s.failedRecords, $0) } }
    }

    /// Queues a record; its findings are computed (lint of the result at `lintURL`) by the writer.
    func submit(_ record: TransformationRecord, lintURL: RequestURL, now: Int64) {
        switch overflow {
        case .block: slots.wait()
        case .drop:
            if slots.wait(timeout: .now()) == .timedOut {
                state.withLock { $0.dropped += 1 }
                return
            }
        }
        enqueue(.record(record, lintURL: lintURL, now: now))
    }

    /// A line of its own, e.g. a reload event (never dropped; these are rare).
    func submit(line: String) { enqueue(.line(line)) }

    /// SIGUSR1: reopen the file (logrotate moves it, then signals).
    func reopen() { enqueue(.reopen) }

    private func enqueue(_ item: Item) {
        // The writer drains everything it wakes for, so only the first item of a batch needs to wake it.
        let wake = state.withLock { s -> Bool in
            if s.closed {
                s.dropped += 1
                return false
            }
            s.queue.append(item)
            return s.queue.count == 1
        }
        if wake { signal.signal() }
    }

    /// The writer thread's working state: a reused output buffer, and for cookies seen before the middle of their
    /// record, `,"changes":[…],"findings":[…]`, as JSON bytes (a repeated cookie is neither diffed nor linted again).
    private struct Writer: ~Copyable {
        var json = JSONWriter(capacity: 64 * 1024)
        var fragment = JSONWriter(capacity: 4096)
        var fragments: [FragmentKey: [UInt8]] = [:]
        static let cacheLimit = 4096
    }

    /// What the changes and findings of a record depend on: the line before and after the rules, and what the lint
    /// reads besides the line (the URL and the second); so a hit is exact.
    struct FragmentKey: Hashable {
        var before: [UInt8]
        var after: [UInt8]?
        var url: RequestURL
        var now: Int64
        func hash(into hasher: inout Hasher) {
            before.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(after?.count ?? -1)
            after?.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(url.host)
            hasher.combine(now)
        }
    }

    private func format(_ item: Item, _ w: inout Writer) {
        guard case .record(var record, let url, let now) = item else { return }
        let judged = record.outcome.result ?? record.outcome.original
        if case .standardOutput(let compact, let color) = destination, compact {
            record.findings = CookieLint.findings(for: judged, from: url, now: now)
            var line = Array(record.line(showValues: redaction.showValues, color: color).utf8)
            line.withUnsafeMutableBufferPointer { w.json.raw(UnsafeBufferPointer($0)) }
            return
        }
        record.writeHead(to: &w.json, redaction: redaction)
        let key = FragmentKey(
            before: record.outcome.original.bytes, after: record.outcome.result?.bytes, url: url, now: now)
        if let cached = w.fragments[key] {
            cached.withUnsafeBufferPointer { w.json.raw($0) }
        } else {
            w.fragment.removeAll()
            w.fragment.raw(",\"changes\":")
            TransformationRecord.writeChanges(record.outcome.changes, redaction: redaction, to: &w.fragment)
            w.fragment.raw(",\"findings\":")
            TransformationRecord.writeFindings(CookieLint.findings(for: judged, from: url, now: now), to: &w.fragment)
            let bytes = w.fragment.withBytes { Array($0) }
            bytes.withUnsafeBufferPointer { w.json.raw($0) }
            if w.fragments.count >= Writer.cacheLimit { w.fragments.removeAll(keepingCapacity: true) }
            w.fragments[key] = bytes
        }
        record.writeTail(to: &w.json)
    }

    private func writerLoop() {
        var w = Writer()
        while true {
            signal.wait()
            let (batch, closed) = state.withLock { s -> ([Item], Bool) in
                let b = s.queue
                s.queue.removeAll(keepingCapacity: true)
                return (b, s.closed)
            }
            var records = 0
            for item in batch {
                switch item {
                case .reopen:
                    flush(&w, records: records)
                    records = 0
                    reopenFile()
                case .line(let text):
                    var bytes = Array(text.utf8)
                    bytes.withUnsafeMutableBufferPointer { w.json.raw(UnsafeBufferPointer($0)) }
                    w.json.raw(0x0A)
                case .record:
                    format(item, &w)
                    w.json.raw(0x0A)
                    records += 1
                }
            }
            flush(&w, records: records)
            if closed && state.withLock({ $0.queue.isEmpty }) {
                done.signal()
                return
            }
        }
    }

    /// Writes what the buffer holds and gives the records' places back.
    private func flush(_ w: inout Writer, records: Int) {
        if w.json.count > 0 {
            let fd = state.withLock { $0.fd }
            let error = w.json.withBytes { bytes -> Int32 in
                if let terminal, case .standardOutput = destination { return terminal.printAbove(fd: fd, bytes) }
                return TerminalView.writeAll(fd, bytes)
            }
            w.json.removeAll()
            state.withLock { s in
                if error == 0 {
                    s.written += records
                } else {
                    s.failedRecords += records
                    s.failure = "cannot write the log: \(String(cString: strerror(error)))"
                }
            }
        }
        for _ in 0..<records { slots.signal() }
    }

    private func reopenFile() {
        guard case .file(let path) = destination else { return }
        do {
            let new = try Self.open(path)
            let old = state.withLock { s -> Int32 in
                let o = s.fd
                s.fd = new
                return o
            }
            _ = Foundation.close(old)
        } catch {
            // The old file stays in use: nothing is lost, and the reason is reported.
            state.withLock { $0.failure = error.description }
            Console.err("cookie-proxy: \(error.description); still writing to the old file")
        }
    }

    /// Writes everything queued, then stops the writer (no record queued before is lost).
    func close() {
        state.withLock { $0.closed = true }
        signal.signal()
        done.wait()
        if case .file = destination { _ = Foundation.close(state.withLock { $0.fd }) }
    }
}

/// The terminal when log lines and the live status line share it: the status line stays the last line. Each
/// print clears it, writes the lines above it and draws it again, under one lock.
final class TerminalView: Sendable {
    private let status = Mutex<String>("")

    /// Draws the status line (stderr) in place.
    func setStatus(_ text: String) {
        status.withLock { s in
            s = text
            _ = Self.writeAll(2, Array("\r\u{1B}[2K\(text)".utf8))
        }
    }

    /// Ends the status line (before the last messages).
    func finish() {
        status.withLock { s in
            if !s.isEmpty { _ = Self.writeAll(2, Array("\n".utf8)) }
            s = ""
        }
    }

    /// Writes `bytes` (whole lines) to `fd` above the status line; returns 0 or the errno of a failed write.
    func printAbove(fd: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        status.withLock { s in
            if s.isEmpty { return Self.writeAll(fd, bytes) }
            _ = Self.writeAll(2, Array("\r\u{1B}[2K".utf8))
            let error = Self.writeAll(fd, bytes)
            _ = Self.writeAll(2, Array(s.utf8))
            return error
        }
    }

    func printAbove(fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        if bytes.last != 0x0A { bytes.append(0x0A) }
        _ = bytes.withUnsafeMutableBufferPointer { printAbove(fd: fd, UnsafeBufferPointer($0)) }
    }

    @discardableResult
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32 {
        bytes.withUnsafeBufferPointer { writeAll(fd, $0) }
    }

    /// Writes all of `bytes`; 0, or the errno of the write that failed.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if n == 0 { return EIO }
            offset += n
        }
        return 0
    }
}
