import CookieKit
import CookieRules
import Foundation
import Locking

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

    /// One response's records as the event loop hands them over: both lines of every logged cookie back to back in
    /// one buffer, and what the rules did to each. Everything else (parsing them again, the diff, the lint, JSON)
    /// happens on the writer thread, and only for a cookie it has not seen before.
    struct Batch: Sendable {
        struct Cookie: Sendable {
            let original: Range<Int>
            /// Nil when a rule dropped the line.
            let result: Range<Int>?
            let edit: RuleEngine.Edit
        }
        let exchange: Exchange
        let engine: RuleEngine
        private(set) var bytes: [UInt8] = []
        private(set) var cookies: [Cookie] = []
        /// The places in the queue it holds: one per record, at most the whole queue.
        fileprivate(set) var places = 0

        init(exchange: Exchange, engine: RuleEngine) {
            self.exchange = exchange
            self.engine = engine
            bytes.reserveCapacity(1024)
            cookies.reserveCapacity(8)
        }

        /// Adds a record: the line as received and as forwarded (nil: dropped).
        mutating func append(original: ArraySlice<UInt8>, result: UnsafeBufferPointer<UInt8>?, edit: RuleEngine.Edit) {
            let start = bytes.count
            bytes.append(contentsOf: original)
            let middle = bytes.count
            if let result { bytes.append(contentsOf: result) }
            cookies.append(
                Cookie(original: start..<middle, result: result == nil ? nil : middle..<bytes.count, edit: edit))
        }

        mutating func keepFirst(_ n: Int) { cookies.removeLast(cookies.count - n) }

        /// A record's two lines as arrays of their own (the slow path: parsing them, keeping them in the cache).
        func lines(_ c: Cookie) -> (original: [UInt8], result: [UInt8]?) {
            (Array(bytes[c.original]), c.result.map { Array(bytes[$0]) })
        }
    }

    /// What waits to be written: formatting and lint happen on the writer thread, off the event loops.
    enum Item: Sendable {
        case records(Batch)
        case line(String)
        /// Reopen the log file (SIGUSR1): what was queued before goes to the old file, what follows to the new.
        case reopen
    }

    private struct State {
        var queue: [Item] = []
        /// The records in `queue` (a batch holds one response's).
        var queuedRecords = 0
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

    private let state = Locked(State())
    private let signal = DispatchSemaphore(value: 0)
    /// Free places in the queue: taken by a record, given back once it is written.
    private let slots: DispatchSemaphore
    /// Held while a loop takes several places (``submit(_:)``).
    private let taking = Locked(())
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

    /// Queues a response's records; the writer turns them into JSON (the lint of each result at the exchange's
    /// URL included). Each record takes a place in the queue: with `--log-overflow drop`, those that find none
    /// are dropped and counted.
    func submit(_ batch: Batch) {
        var batch = batch
        let wanted = min(batch.cookies.count, capacity)
        switch overflow {
        case .block:
            // One loop at a time takes its places, all of them before it lets go: two loops each holding part
            // of what they need could otherwise wait for each other for ever.
            taking.withLock { _ in for _ in 0..<wanted { slots.wait() } }
            batch.places = wanted
        case .drop:
            var taken = 0
            while taken < wanted, slots.wait(timeout: .now()) == .success { taken += 1 }
            batch.places = taken
            if taken < batch.cookies.count {
                let lost = batch.cookies.count - taken
                state.withLock { $0.dropped += lost }
                if taken == 0 { return }
                batch.keepFirst(taken)
            }
        }
        enqueue(.records(batch), records: batch.cookies.count)
    }

    /// A line of its own, e.g. a reload event (never dropped; these are rare).
    func submit(line: String) { enqueue(.line(line), records: 0) }

    /// SIGUSR1: reopen the file (logrotate moves it, then signals).
    func reopen() { enqueue(.reopen, records: 0) }

    /// A busy writer polls the queue every `pollInterval`, and is woken early only when `wakeThreshold` records
    /// wait: waking it for every response would cost a context switch per response, more than the records.
    static let pollInterval = DispatchTimeInterval.milliseconds(5)
    var wakeThreshold: Int { min(256, capacity) }

    private func enqueue(_ item: Item, records: Int) {
        let urgent = records == 0
        let wake = state.withLock { s -> Bool in
            if s.closed {
                s.dropped += max(records, 1)
                return false
            }
            let before = s.queuedRecords
            s.queue.append(item)
            s.queuedRecords += records
            if s.writerIdle || urgent || (before < wakeThreshold && s.queuedRecords >= wakeThreshold) {
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
        /// By a 64-bit digest of what the cookie part depends on; an entry is used only if all of it is equal.
        var fragments: [UInt64: Fragment] = [:]
        static let cacheLimit = 4096
    }

    /// A cookie's part of its record and everything it depends on: both lines, which rules of which engine
    /// matched, and what the lint reads besides the line (the URL and the second); so a hit is exact.
    final class Fragment {
        let original: [UInt8]
        let result: [UInt8]?
        let rulesLow: UInt64
        let rulesHigh: [Int]
        let engine: ObjectIdentifier
        let url: RequestURL
        let now: Int64
        let dryRun: Bool
        let json: [UInt8]
        init(_ batch: Batch, _ c: Batch.Cookie, lines: (original: [UInt8], result: [UInt8]?), json: [UInt8]) {
            (original, result) = lines
            (rulesLow, rulesHigh) = c.edit.matchedRules
            engine = ObjectIdentifier(batch.engine)
            url = batch.exchange.lintURL
            now = batch.exchange.time / 1000
            dryRun = batch.exchange.dryRun
            self.json = json
        }

        /// Whether this entry was made for cookie `c` of `batch` (the lines compared with memcmp).
        func matches(_ batch: Batch, _ c: Batch.Cookie) -> Bool {
            let e = batch.exchange
            guard now == e.time / 1000, dryRun == e.dryRun, engine == ObjectIdentifier(batch.engine),
                rulesLow == c.edit.matchedRules.low, (result == nil) == (c.result == nil)
            else { return false }
            return batch.bytes.withUnsafeBytes { b in
                Self.same(original, b, c.original) && (c.result.map { Self.same(result!, b, $0) } ?? true)
            } && rulesHigh == c.edit.matchedRules.high && url == e.lintURL
        }

        static func same(_ x: [UInt8], _ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> Bool {
            x.count == r.count
                && x.withUnsafeBytes { p in
                    p.count == 0 || memcmp(p.baseAddress!, b.baseAddress! + r.lowerBound, p.count) == 0
                }
        }

        /// The digest: the lines folded eight bytes at a time (the standard library's byte-by-byte hashing of
        /// arrays costs more than the rest of a record), the rules and the second.
        static func digest(_ batch: Batch, _ c: Batch.Cookie) -> UInt64 {
            batch.bytes.withUnsafeBytes { b in
                var h = fold(b, c.original, seed: 0x9E37_79B9_7F4A_7C15)
                h = c.result.map { fold(b, $0, seed: h) } ?? (h ^ 0xD6E8_FEB8_6659_FD93)
                h = (h ^ c.edit.matchedRules.low) &* 0xFF51_AFD7_ED55_8CCD
                return (h ^ UInt64(bitPattern: batch.exchange.time / 1000)) &* 0xC4CE_B9FE_1A85_EC53
            }
        }

        static func fold(_ b: UnsafeRawBufferPointer, _ r: Range<Int>, seed: UInt64) -> UInt64 {
            var h = seed ^ UInt64(r.count)
            var i = r.lowerBound
            while i + 8 <= r.upperBound {
                h = (h ^ b.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
                h ^= h >> 32
                i += 8
            }
            while i < r.upperBound {
                h = (h ^ UInt64(b[i])) &* 0x100_0000_01B3
                i += 1
            }
            return h
        }
    }

    /// The whole record, built the slow way (a cache miss, the terminal's compact line).
    private func record(_ batch: Batch, _ c: Batch.Cookie, lines: (original: [UInt8], result: [UInt8]?))
        -> TransformationRecord
    {
        let original = SetCookie(bytes: lines.original)
        let outcome = batch.engine.outcome(
            original: original, edited: lines.result.map { SetCookie(bytes: $0) } ?? original, c.edit)
        let e = batch.exchange
        var record = TransformationRecord(
            time: e.time, requestID: e.requestID, client: e.client, method: e.method, url: e.url, status: e.status,
            outcome: outcome, findings: [], dryRun: e.dryRun)
        record.findings = CookieLint.findings(
            for: outcome.result ?? outcome.original, from: e.lintURL, now: e.time / 1000)
        return record
    }

    /// Appends one line per record of `batch` to the output buffer.
    private func format(_ batch: Batch, _ w: inout Writer) {
        if case .standardOutput(let compact, let color) = destination, compact {
            for c in batch.cookies {
                let full = record(batch, c, lines: batch.lines(c))
                var line = Array(full.line(showValues: redaction.showValues, color: color).utf8)
                line.withUnsafeMutableBufferPointer { w.json.raw(UnsafeBufferPointer($0)) }
                w.json.raw(0x0A)
            }
            return
        }
        let e = batch.exchange
        if w.lastExchange !== e {
            // The fields every record of this response shares, written once.
            w.fragment.removeAll()
            TransformationRecord.writeExchangeFields(
                time: e.time, requestID: e.requestID, client: e.client, method: e.method, url: e.url, status: e.status,
                to: &w.fragment)
            w.exchangeFields = w.fragment.withBytes { Array($0) }
            w.lastExchange = e
        }
        for c in batch.cookies {
            w.exchangeFields.withUnsafeBufferPointer { w.json.raw($0) }
            let digest = Fragment.digest(batch, c)
            if let cached = w.fragments[digest], cached.matches(batch, c) {
                cached.json.withUnsafeBufferPointer { w.json.raw($0) }
                w.json.raw(0x0A)
                continue
            }
            let lines = batch.lines(c)
            let full = record(batch, c, lines: lines)
            w.fragment.removeAll()
            full.writeCookieFields(to: &w.fragment, redaction: redaction)
            w.fragment.raw(",\"changes\":")
            TransformationRecord.writeChanges(full.outcome.changes, redaction: redaction, to: &w.fragment)
            w.fragment.raw(",\"findings\":")
            TransformationRecord.writeFindings(full.findings, to: &w.fragment)
            full.writeTail(to: &w.fragment)
            let bytes = w.fragment.withBytes { Array($0) }
            bytes.withUnsafeBufferPointer { w.json.raw($0) }
            w.json.raw(0x0A)
            if w.fragments.count >= Writer.cacheLimit { w.fragments.removeAll(keepingCapacity: true) }
            w.fragments[digest] = Fragment(batch, c, lines: lines, json: bytes)
        }
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
            let (items, closed) = state.withLock { s -> ([Item], Bool) in
                let b = s.queue
                s.queue.removeAll(keepingCapacity: true)
                s.queuedRecords = 0
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
            var places = 0
            for item in items {
                switch item {
                case .reopen:
                    flush(&w, records: records, places: places)
                    (records, places) = (0, 0)
                    reopenFile()
                case .line(let text):
                    var bytes = Array(text.utf8)
                    bytes.withUnsafeMutableBufferPointer { w.json.raw(UnsafeBufferPointer($0)) }
                    w.json.raw(0x0A)
                case .records(let batch):
                    format(batch, &w)
                    records += batch.cookies.count
                    places += batch.places
                }
            }
            flush(&w, records: records, places: places)
            if closed && state.withLock({ $0.queue.isEmpty }) {
                done.signal()
                return
            }
        }
    }

    /// Writes what the buffer holds and gives the records' places back.
    private func flush(_ w: inout Writer, records: Int, places: Int) {
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
        for _ in 0..<places { slots.signal() }
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
    private let status = Locked<String>("")

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
