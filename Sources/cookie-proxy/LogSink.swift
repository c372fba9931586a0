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

    /// One response's part of its records: the same for each of its cookies (one object per response).
    final class Exchange: Sendable {
        let time: Int64
        let requestID: UInt64
        let client: String
        let method: String
        let url: String
        let status: Int
        let lintURL: RequestURL
        let dryRun: Bool
        init(
            time: Int64, requestID: UInt64, client: String, method: String, url: String, status: Int,
            lintURL: RequestURL, dryRun: Bool
        ) {
            (self.time, self.requestID, self.client, self.method, self.url, self.status) =
                (time, requestID, client, method, url, status)
            (self.lintURL, self.dryRun) = (lintURL, dryRun)
        }
    }

    /// A record as the event loop hands it over: the received and the forwarded line as bytes, what the rules did.
    /// Everything else (parsing them again, the diff, the lint, JSON) happens on the writer thread, and only for a
    /// cookie it has not seen before.
    struct Pending: Sendable {
        let exchange: Exchange
        let original: [UInt8]
        /// Nil when a rule dropped the line.
        let result: [UInt8]?
        let edit: RuleEngine.Edit
        let engine: RuleEngine
    }

    /// What waits to be written: formatting and lint happen on the writer thread, off the event loops.
    enum Item: Sendable {
        case record(Pending)
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
        /// The writer waits for a signal rather than polling (after a quiet spell).
        var writerIdle = true
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

    /// Queues a record; the writer turns it into JSON (the lint of the result at the exchange's URL included).
    func submit(_ record: Pending) {
        switch overflow {
        case .block: slots.wait()
        case .drop:
            if slots.wait(timeout: .now()) == .timedOut {
                state.withLock { $0.dropped += 1 }
                return
            }
        }
        enqueue(.record(record))
    }

    /// A line of its own, e.g. a reload event (never dropped; these are rare).
    func submit(line: String) { enqueue(.line(line)) }

    /// SIGUSR1: reopen the file (logrotate moves it, then signals).
    func reopen() { enqueue(.reopen) }

    /// A busy writer polls the queue every `pollInterval`, and is woken early only when `wakeThreshold` records
    /// wait: waking it for every response would cost a context switch per response, more than the records.
    static let pollInterval = DispatchTimeInterval.milliseconds(5)
    var wakeThreshold: Int { min(256, capacity) }

    private func enqueue(_ item: Item) {
        let urgent: Bool
        if case .record = item { urgent = false } else { urgent = true }
        let wake = state.withLock { s -> Bool in
            if s.closed {
                s.dropped += 1
                return false
            }
            s.queue.append(item)
            if s.writerIdle || urgent || s.queue.count == wakeThreshold {
                s.writerIdle = false
                return true
            }
            return false
        }
        if wake { signal.signal() }
    }

    /// The writer thread's working state: a reused output buffer; the exchange fields of the last response; and
    /// for cookies seen before, the rest of their record (`,"cookie":` to the end) as JSON bytes, so a repeated
    /// cookie is neither parsed, diffed, linted nor escaped again.
    private struct Writer: ~Copyable {
        var json = JSONWriter(capacity: 64 * 1024)
        var fragment = JSONWriter(capacity: 4096)
        var lastExchange: Exchange? = nil
        var exchangeFields: [UInt8] = []
        var fragments: [FragmentKey: [UInt8]] = [:]
        static let cacheLimit = 4096
    }

    /// What the cookie part of a record depends on: both lines, which rules of which engine matched, and what the
    /// lint reads besides the line (the URL and the second); so a hit is exact.
    struct FragmentKey: Hashable {
        var original: [UInt8]
        var result: [UInt8]?
        var rulesLow: UInt64
        var rulesHigh: [Int]
        var engine: ObjectIdentifier
        var url: RequestURL
        var now: Int64
        var dryRun: Bool
        // The lines are folded eight bytes at a time into one word for the Hasher, and compared with memcmp: the
        // standard library's byte-by-byte hashing and comparison of arrays cost more than the rest of a record.
        func hash(into hasher: inout Hasher) {
            hasher.combine(Self.fold(original))
            hasher.combine(result.map(Self.fold) ?? 1)
            hasher.combine(rulesLow)
            hasher.combine(now)
        }

        static func == (a: FragmentKey, b: FragmentKey) -> Bool {
            a.now == b.now && a.rulesLow == b.rulesLow && a.dryRun == b.dryRun && a.engine == b.engine
                && same(a.original, b.original) && a.result?.count == b.result?.count
                && (a.result == nil || same(a.result!, b.result!)) && a.rulesHigh == b.rulesHigh && a.url == b.url
        }

        static func same(_ x: [UInt8], _ y: [UInt8]) -> Bool {
            x.count == y.count
                && x.withUnsafeBytes { p in
                    y.withUnsafeBytes { q in p.count == 0 || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0 }
                }
        }

        static func fold(_ bytes: [UInt8]) -> UInt64 {
            bytes.withUnsafeBytes { b in
                var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(b.count)
                var i = 0
                while i + 8 <= b.count {
                    h = (h ^ b.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
                    h ^= h >> 32
                    i += 8
                }
                while i < b.count {
                    h = (h ^ UInt64(b[i])) &* 0x100_0000_01B3
                    i += 1
                }
                return h
            }
        }
    }

    /// The whole record, built the slow way (a cache miss, the terminal's compact line).
    private func record(_ p: Pending) -> TransformationRecord {
        let original = SetCookie(bytes: p.original)
        let outcome = p.engine.outcome(
            original: original, edited: p.result.map { SetCookie(bytes: $0) } ?? original, p.edit)
        let e = p.exchange
        var record = TransformationRecord(
            time: e.time, requestID: e.requestID, client: e.client, method: e.method, url: e.url, status: e.status,
            outcome: outcome, findings: [], dryRun: e.dryRun)
        record.findings = CookieLint.findings(
            for: outcome.result ?? outcome.original, from: e.lintURL, now: e.time / 1000)
        return record
    }

    private func format(_ p: Pending, _ w: inout Writer) {
        if case .standardOutput(let compact, let color) = destination, compact {
            var line = Array(record(p).line(showValues: redaction.showValues, color: color).utf8)
            line.withUnsafeMutableBufferPointer { w.json.raw(UnsafeBufferPointer($0)) }
            return
        }
        let e = p.exchange
        if w.lastExchange !== e {
            // The fields every record of this response shares, written once.
            w.fragment.removeAll()
            TransformationRecord.writeExchangeFields(
                time: e.time, requestID: e.requestID, client: e.client, method: e.method, url: e.url, status: e.status,
                to: &w.fragment)
            w.exchangeFields = w.fragment.withBytes { Array($0) }
            w.lastExchange = e
        }
        w.exchangeFields.withUnsafeBufferPointer { w.json.raw($0) }
        let rules = p.edit.matchedRules
        let key = FragmentKey(
            original: p.original, result: p.result, rulesLow: rules.low, rulesHigh: rules.high,
            engine: ObjectIdentifier(p.engine), url: e.lintURL, now: e.time / 1000, dryRun: e.dryRun)
        if let cached = w.fragments[key] {
            cached.withUnsafeBufferPointer { w.json.raw($0) }
            return
        }
        let full = record(p)
        w.fragment.removeAll()
        full.writeCookieFields(to: &w.fragment, redaction: redaction)
        w.fragment.raw(",\"changes\":")
        TransformationRecord.writeChanges(full.outcome.changes, redaction: redaction, to: &w.fragment)
        w.fragment.raw(",\"findings\":")
        TransformationRecord.writeFindings(full.findings, to: &w.fragment)
        full.writeTail(to: &w.fragment)
        let bytes = w.fragment.withBytes { Array($0) }
        bytes.withUnsafeBufferPointer { w.json.raw($0) }
        if w.fragments.count >= Writer.cacheLimit { w.fragments.removeAll(keepingCapacity: true) }
        w.fragments[key] = bytes
    }

    private func writerLoop() {
        var w = Writer()
        var quietPolls = 0
        while true {
            if quietPolls >= 20 {
                signal.wait()  // idle: the next record wakes the writer
                quietPolls = 0
            } else {
                _ = signal.wait(timeout: .now() + Self.pollInterval)
            }
            let (batch, closed) = state.withLock { s -> ([Item], Bool) in
                let b = s.queue
                s.queue.removeAll(keepingCapacity: true)
                if b.isEmpty {
                    quietPolls += 1
                    // After 20 empty polls (100 ms) the writer sleeps until signalled.
                    if quietPolls >= 20 { s.writerIdle = true }
                } else {
                    quietPolls = 0
                }
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
                case .record(let pending):
                    format(pending, &w)
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
