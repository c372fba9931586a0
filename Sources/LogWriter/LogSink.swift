import Foundation
import JSONStream
import Locking
import Terminal

/// A log file's writer: the transformation log's and the access log's. Each response's records are formatted on the
/// event loop that forwarded it, into bytes (a ``Chunk``, one per loop thread), and handed over in one copy to a
/// writer thread that only writes: the data is formatted where it already is, so nothing is allocated, copied into
/// objects or reference-counted per record on the way. Records wait in a bounded buffer; when the writer falls behind, the event loop that submits
/// waits for room (backpressure: the proxy reads no more requests until the log has caught up), so no record is
/// lost and memory stays bounded. `--log-overflow drop` drops and counts a response's records instead.
public final class LogSink: Sendable {
    public enum Destination: Sendable {
        case standardOutput(compact: Bool, color: Bool)
        case file(String)
    }

    public enum Overflow: String, Sendable {
        /// The submitting loop waits for room.
        case block
        /// The records that find no room are dropped and counted.
        case drop
    }

    /// Whole lines and how many records they hold: a response's, or a line of the proxy's own. A loop fills one
    /// and hands it over; the writer writes it and gives it back for reuse.
    package final class Chunk {
        package var bytes = JSONWriter(capacity: 8 * 1024)
        package var records = 0
        /// Lines of the proxy's own (`exchange-closed`, `rules-reloaded`): counted apart from the cookies' records.
        package var events = 0
        package init() {}
    }

    private struct State {
        /// What waits for the writer, in order, and how many records it holds.
        var pending: [Chunk] = []
        var pendingRecords = 0
        /// Written chunks, emptied, for the loops to fill again.
        var free: [Chunk] = []
        /// Reopen requests (SIGUSR1): the chunks before one go to the old file, those after to the new.
        var reopens: [Int] = []
        /// Event loops waiting for room.
        var waiting = 0
        var dropped = 0
        var written = 0
        var eventsWritten = 0
        var closed = false
        var fd: Int32 = -1
        /// The last write or reopen error, once reported.
        var failure: String? = nil
        var failedRecords = 0
        /// Writes are failing now (since the first failed write; said on stderr then): why, and the records lost
        /// since. The first write that succeeds says so, and writes a gap record before the others.
        var failing: (reason: String, lost: Int, since: Int64)? = nil
        /// A failed write left part of a line that could not be taken back (not a regular file, or truncating
        /// failed): the next write starts with a line end, so that no record is glued to it.
        var torn = false
        /// The writer waits for a signal rather than polling (after a quiet spell).
        var writerIdle = true
    }

    private let state = Locked(State())
    private let signal = DispatchSemaphore(value: 0)
    /// Signalled once per waiting loop when the writer has taken what was pending.
    private let room = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    let capacity: Int
    package let overflow: Overflow
    package let destination: Destination
    /// Writes whole lines to a descriptor above a terminal's live status line (0, or the errno of a failed write):
    /// standard output shared with the status line.
    package typealias PrintAbove = @Sendable (_ fd: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Int32
    let printAbove: PrintAbove?
    /// The log's name in what is said about it on stderr (`the log cookies.jsonl`).
    let label: String
    /// The line that says, after a gap, how many records were lost and why, in this log's own format (nil: none;
    /// the terminal's lines).
    let gapRecord: (@Sendable (_ lost: Int, _ reason: String, _ since: Int64, _ now: Int64) -> String)?
    /// Emptied chunks kept for reuse (more are freed).
    static let freeLimit = 256

    package init(
        destination: Destination, overflow: Overflow = .block, capacity: Int = 10_000, printAbove: PrintAbove? = nil,
        label: String = "the log",
        gapRecord: (@Sendable (_ lost: Int, _ reason: String, _ since: Int64, _ now: Int64) -> String)? = nil
    ) throws(OpenError) {
        self.gapRecord = gapRecord
        switch destination {
        case .standardOutput: self.label = "\(label) (stdout)"
        case .file(let path): self.label = "\(label) \(path)"
        }
        self.destination = destination
        self.overflow = overflow
        self.capacity = capacity
        self.printAbove = printAbove
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

    /// A log file that cannot be opened, and why.
    package struct OpenError: Error, CustomStringConvertible {
        package let description: String
    }

    static func open(_ path: String) throws(OpenError) -> Int32 {
        let f = Foundation.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard f >= 0 else {
            throw OpenError(description: "cannot open log file \(path): \(String(cString: strerror(errno)))")
        }
        return f
    }

    package var droppedCount: Int { state.withLock { $0.dropped } }
    package var writtenCount: Int { state.withLock { $0.written } }
    /// The proxy's own lines written (``submit(line:)``).
    package var eventsWritten: Int { state.withLock { $0.eventsWritten } }
    /// Records that could not be written (the file failed), and why.
    package var failure: (records: Int, reason: String)? {
        state.withLock { s in s.failure.map { (s.failedRecords, $0) } }
    }

    /// Hands over `chunk` (whole lines, its records counted: one response's); returns an empty chunk to fill next
    /// (`chunk` itself, emptied, when its records were dropped). At most `capacity` records wait: a loop that finds
    /// no room waits for the writer (or, with `--log-overflow drop`, the records are dropped and counted). A
    /// response with more records than the whole capacity goes in alone.
    package func submit(_ chunk: Chunk) -> Chunk {
        if let next = enqueue(chunk) { return next }
        chunk.bytes.removeAll()
        chunk.records = 0
        return chunk
    }

    /// Records formatted elsewhere (`count` of them, one per line, without the last newline): counted, held to the
    /// capacity and dropped under `--log-overflow drop` like a response's.
    package func submit(records text: String, count: Int) {
        let chunk = Chunk()
        var bytes = Array(text.utf8)
        bytes.append(0x0A)
        bytes.withUnsafeBufferPointer { chunk.bytes.raw($0) }
        chunk.records = count
        _ = enqueue(chunk)
    }

    /// A line of its own, e.g. a reload event (never dropped; these are rare).
    package func submit(line: String) {
        let chunk = Chunk()
        var bytes = Array(line.utf8)
        bytes.append(0x0A)
        bytes.withUnsafeBufferPointer { chunk.bytes.raw($0) }
        chunk.events = 1
        _ = enqueue(chunk)
    }

    /// SIGUSR1: reopen the file (logrotate moves it, then signals).
    package func reopen() {
        state.withLock { s in
            s.reopens.append(s.pending.count)
            s.writerIdle = false
        }
        signal.signal()
    }

    /// A busy writer polls every `pollInterval`, and is woken early only when `wakeThreshold` records wait: waking
    /// it for every response would cost a context switch per response, more than the records.
    static let pollInterval = DispatchTimeInterval.milliseconds(5)
    var wakeThreshold: Int { min(256, capacity) }

    private enum Admission {
        case queued(wake: Bool, next: Chunk?)
        case wait
        case refused
    }

    /// Queues `chunk`; an empty chunk in its place when it was taken (nil: refused, the caller keeps it).
    private func enqueue(_ chunk: Chunk) -> Chunk? {
        let records = chunk.records
        let urgent = records == 0
        while true {
            let admission = state.withLock { s -> Admission in
                if s.closed {
                    s.dropped += records
                    return .refused
                }
                let before = s.pendingRecords
                if records > 0 && before > 0 && before + records > capacity {
                    if overflow == .drop {
                        s.dropped += records
                        return .refused
                    }
                    s.waiting += 1
                    s.writerIdle = false
                    return .wait
                }
                s.pending.append(chunk)
                s.pendingRecords += records
                let next = s.free.popLast()
                if s.writerIdle || urgent || (before < wakeThreshold && s.pendingRecords >= wakeThreshold) {
                    s.writerIdle = false
                    return .queued(wake: true, next: next)
                }
                return .queued(wake: false, next: next)
            }
            switch admission {
            case .queued(let wake, let next):
                if wake { signal.signal() }
                return next ?? Chunk()
            case .refused:
                return nil
            case .wait:
                signal.signal()
                room.wait()
            }
        }
    }

    private func writerLoop() {
        var taken: [Chunk] = []
        var quietPolls = 0
        var pages = pageCache()
        while true {
            if quietPolls >= 20 {
                signal.wait()  // idle: the next record wakes the writer
                quietPolls = 0
            } else {
                _ = signal.wait(timeout: .now() + Self.pollInterval)
            }
            // Take what is pending: the loops queue new chunks while these are written.
            let (reopens, waiting, closed) = state.withLock { s -> ([Int], Int, Bool) in
                swap(&s.pending, &taken)
                let result = (s.reopens, s.waiting, s.closed)
                s.pendingRecords = 0
                s.reopens.removeAll()
                s.waiting = 0
                if taken.isEmpty && result.0.isEmpty && result.1 == 0 {
                    quietPolls += 1
                    // After 20 empty polls (100 ms) the writer sleeps until signalled.
                    if quietPolls >= 20 { s.writerIdle = true }
                } else {
                    quietPolls = 0
                }
                return result
            }
            for _ in 0..<waiting { room.signal() }
            var from = 0
            for r in reopens {
                write(taken[from..<r], &pages)
                from = r
                reopenFile()
                pages = pageCache()
            }
            write(taken[from...], &pages)
            for chunk in taken {
                chunk.bytes.removeAll()
                chunk.records = 0
                chunk.events = 0
            }
            state.withLock { s in
                s.free.append(contentsOf: taken.prefix(Self.freeLimit - s.free.count))
            }
            taken.removeAll(keepingCapacity: true)
            if closed && state.withLock({ $0.pending.isEmpty && $0.reopens.isEmpty }) {
                done.signal()
                return
            }
        }
    }

    /// The page-cache bookkeeping for the file written to now (nil: standard output, or not a regular file).
    private func pageCache() -> LogPageCache? {
        guard case .file = destination else { return nil }
        return LogPageCache(fd: state.withLock { $0.fd })
    }

    /// Writes `chunks` (with writev, up to 512 at a time), counts their records written or failed, and lets go of
    /// the file's cached pages behind it (``LogPageCache``).
    ///
    /// A record is written whole or not at all: when a write fails partway (ENOSPC, EIO, EPIPE), a file is cut back
    /// to the end of the last whole chunk written (chunks hold whole lines), so that no fragment is left for the
    /// next record to be glued to. The failure is said on stderr when it starts and when it ends, with the records
    /// lost in between; after the gap, a record in the log's own format says the same (``gapRecord``).
    private func write(_ chunks: ArraySlice<Chunk>, _ pages: inout LogPageCache?) {
        guard !chunks.isEmpty else { return }
        let (fd, failing, torn) = state.withLock { ($0.fd, $0.failing, $0.torn) }
        let records = chunks.reduce(0) { $0 + $1.records }
        let events = chunks.reduce(0) { $0 + $1.events }
        var error: Int32 = 0
        var recordsWritten = records
        var eventsWritten = events
        if let printAbove, case .standardOutput = destination {
            // Above the status line, under its lock: one buffer (the terminal's volume is small).
            var all: [UInt8] = []
            for chunk in chunks { chunk.bytes.withBytes { all.append(contentsOf: $0) } }
            error = all.withUnsafeBufferPointer { printAbove(fd, $0) }
            if error != 0 { (recordsWritten, eventsWritten) = (0, 0) }
        } else {
            // What goes before the chunks, only after a fault (nothing is made for a write that follows a good
            // one): a line end after a fragment that stayed, and the gap's record.
            var all = chunks
            if torn || (failing != nil && gapRecord != nil) {
                var lead: [UInt8] = torn ? [0x0A] : []
                if let failing, let gapRecord {
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    lead += Array(gapRecord(failing.lost, failing.reason, failing.since, now).utf8) + [0x0A]
                }
                let leadChunk = Chunk()
                lead.withUnsafeBufferPointer { leadChunk.bytes.raw($0) }
                all = ArraySlice([leadChunk] + chunks)
            }
            let hasLead = all.count > chunks.count
            var written = 0
            var first = all.startIndex
            while first < all.endIndex && error == 0 {
                let end = min(first + 512, all.endIndex)
                let (e, n) = Self.writeAll(fd, all[first..<end])
                error = e
                written += n
                first = end
            }
            if error == 0 {
                if let range = pages?.appended(written) { LogPageCache.release(fd, range) }
                if torn { state.withLock { $0.torn = false } }
            } else {
                // A regular file's size before the write (appended to: it ends where this write stopped), where to
                // cut back to.
                let start = pages == nil ? -1 : lseek(fd, 0, SEEK_END) - off_t(written)
                // The whole chunks written stay (the lead among them only when whole); the rest is taken back.
                var whole = 0
                var kept = 0
                recordsWritten = 0
                eventsWritten = 0
                for (i, chunk) in all.enumerated() {  // (i counts from 0: the lead, when there is one, is 0)
                    let count = chunk.bytes.count
                    guard kept + count <= written else { break }
                    kept += count
                    whole = i + 1
                    if i > 0 || !hasLead {
                        recordsWritten += chunk.records
                        eventsWritten += chunk.events
                    }
                }
                let cut = start >= 0 && kept < written && ftruncate(fd, start + off_t(kept)) == 0
                let fragment = kept < written && !cut
                state.withLock { s in
                    s.torn = fragment || (torn && whole == 0)
                }
                if whole > 0, let range = pages?.appended(kept) { LogPageCache.release(fd, range) }
            }
        }
        let lost = records - recordsWritten
        // The counts; the fault's state only when there is one (a good write after a good one takes one lock).
        guard error != 0 || failing != nil else {
            state.withLock { s in
                s.written += recordsWritten
                s.eventsWritten += eventsWritten
            }
            return
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var said: String? = nil
        state.withLock { s in
            s.written += recordsWritten
            s.eventsWritten += eventsWritten
            if error == 0 {
                if let f = s.failing {
                    said =
                        "cookie-proxy: \(label) is written again; \(f.lost) record\(f.lost == 1 ? " was" : "s were") lost while it could not be (\(f.reason))"
                    s.failing = nil
                }
            } else {
                let reason = Self.describe(errno: error)
                s.failedRecords += lost
                s.failure = "cannot write \(label): \(reason)"
                if s.failing == nil {
                    said =
                        "cookie-proxy: cannot write \(label): \(reason); its records are lost (and counted) until it can be written again"
                    s.failing = (reason, lost, now)
                } else {
                    s.failing!.lost += lost
                }
            }
        }
        if let said { Console.err(TerminalText(escaping: said)) }
    }

    /// An errno as a person and a search engine read it: `No space left on device (ENOSPC, errno 28)`.
    package static func describe(errno e: Int32) -> String {
        let names: [Int32: String] = [
            ENOSPC: "ENOSPC", EIO: "EIO", EPIPE: "EPIPE", EDQUOT: "EDQUOT", EFBIG: "EFBIG", EROFS: "EROFS",
            EBADF: "EBADF", EACCES: "EACCES", EPERM: "EPERM", ENXIO: "ENXIO", EAGAIN: "EAGAIN",
        ]
        return "\(String(cString: strerror(e))) (\(names[e].map { "\($0), " } ?? "")errno \(e))"
    }

    /// Writes every byte of `chunks` with writev (after a short write, from where it stopped): 0, or the errno
    /// of the call that failed, and the bytes written before it.
    static func writeAll(_ fd: Int32, _ chunks: ArraySlice<Chunk>) -> (error: Int32, written: Int) {
        var vectors: [iovec] = []
        vectors.reserveCapacity(chunks.count)
        // The chunks' storage stays put while they are written: each is held by `chunks`, and nothing appends to
        // a chunk the writer holds.
        for chunk in chunks {
            chunk.bytes.withBytes { b in
                if b.count > 0 {
                    vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress), iov_len: b.count))
                }
            }
        }
        var first = 0
        var written = 0
        while first < vectors.count {
            let n = vectors[first...].withUnsafeBufferPointer { writev(fd, $0.baseAddress, Int32($0.count)) }
            if n < 0 {
                if errno == EINTR { continue }
                return (errno, written)
            }
            if n == 0 { return (EIO, written) }
            written += n
            var left = n
            while first < vectors.count && left >= vectors[first].iov_len {
                left -= vectors[first].iov_len
                first += 1
            }
            if left > 0 {
                vectors[first].iov_base = vectors[first].iov_base + left
                vectors[first].iov_len -= left
            }
        }
        return (0, written)
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
    package func close() {
        state.withLock { $0.closed = true }
        signal.signal()
        done.wait()
        if case .file = destination { _ = Foundation.close(state.withLock { $0.fd }) }
    }
}
