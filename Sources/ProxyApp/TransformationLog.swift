import CookieKit
import CookieRules
import JSONStream
import LogWriter

/// The transformation log: a ``LogSink`` (its own writer thread and file), how values are shown in it, and whose client
/// keys its records name. An observer: each loop formats its responses' records into its own ``Recorder``; a request
/// whose cookies a `request-cookie` rule changed gets a record per change, and one whose cookies were not all sent
/// as expected a record of its verdicts.
package final class TransformationLog: ExchangeObserver {
    let sink: LogSink
    let redaction: Redaction
    /// Where each request's client key is kept (the lifecycle's, `--client-by`), so that every record names a client
    /// as the lifecycle's records and the inspector do (docs/lifecycle.md: one key); nil, or a request it does not
    /// hold: the address.
    let clients: LifecycleTracker?

    package init(sink: LogSink, redaction: Redaction, clients: LifecycleTracker?) {
        (self.sink, self.redaction, self.clients) = (sink, redaction, clients)
    }

    package func makeLoopObserver() -> (any LoopObserver)? { Recorder(log: self) }

    /// One event loop's record formatting: the response's lines (handed over by ``LogSink/submit(_:)``) and the
    /// fields its records share; the rest of a record (`,"cookie":` to the end) is kept with the line's memo
    /// (``LineMemo``), so that a repeated cookie is neither parsed, diffed, linted nor escaped again. Used by one
    /// thread only (its loop's part of the log as an observer of the cookie stage).
    final class Recorder {
        let log: TransformationLog
        var sink: LogSink { log.sink }
        /// This response's lines (handed over whole by ``LogSink/submit(_:)``, which puts an empty one here).
        var chunk = LogSink.Chunk()
        /// This response's first record is written (its shared fields are set).
        var started = false
        private var fragment = JSONWriter(capacity: 4096)
        /// The fields every record of this response shares (written at its first record).
        private var exchangeFields = JSONWriter(capacity: 1024)
        /// The last response's time as text.
        private var stamp = TransformationRecord.Timestamp()
        /// The sink's: the terminal's compact lines instead of JSON (and in color), and how values are shown.
        private var compact: (on: Bool, color: Bool) = (false, false)
        private var redaction = Redaction(showValues: false, key: [])

        init(log: TransformationLog) {
            self.log = log
            if case .standardOutput(let on, let color) = log.sink.destination { compact = (on, color) }
            redaction = log.redaction
        }

        /// Starts a response's records (at its first).
        func start() {
            started = true
            chunk.bytes.removeAll()
            chunk.records = 0
            exchangeFields.removeAll()
        }

        /// Adds the line's record: the line as received and as the rules left it, the rules that matched, the
        /// changes and the findings (the stage's, worked out once: ``SetCookieLine``).
        func add(_ line: borrowing SetCookieLine) {
            let response = line.response
            let chunk = self.chunk  // one reference for the record's appends, not one per append
            chunk.records += 1
            if compact.on {
                let full = record(line)
                var text = Array(full.line(showValues: redaction.showValues, color: compact.color).utf8)
                text.withUnsafeMutableBufferPointer { chunk.bytes.raw(UnsafeBufferPointer($0)) }
                chunk.bytes.raw(0x0A)
                return
            }
            if exchangeFields.count == 0 {
                // Written once per response, into storage kept across responses (no allocation per response).
                stamp.set(response.time)
                stamp.bytes.withUnsafeBufferPointer { stamp in
                    let context = response.context
                    TransformationRecord.writeExchangeFields(
                        of: context, client: log.clients?.client(ofRequest: context.requestID), stamp: stamp,
                        to: &exchangeFields)
                }
            }
            chunk.bytes.raw(exchangeFields)
            // The cookie part, written once for a line decided the same way before (kept with the line's memo).
            let memo = line.memo
            if !memo.recorded {
                let full = record(line)
                fragment.removeAll()
                full.writeCookiePart(to: &fragment, redaction: redaction, changes: full.outcome.changes)
                fragment.withBytes { json in
                    var copy = JSONWriter(capacity: json.count)
                    copy.raw(json)
                    memo.record = copy
                }
                memo.recorded = true
            }
            chunk.bytes.raw(memo.record)
            chunk.bytes.raw(0x0A)
        }

        /// The whole record (a cache miss, the terminal's compact line).
        private func record(_ line: borrowing SetCookieLine) -> TransformationRecord {
            TransformationRecord(
                time: line.time, exchange: line.context, outcome: line.transformation, findings: line.findings,
                dryRun: line.response.dryRun)
        }
    }
}
