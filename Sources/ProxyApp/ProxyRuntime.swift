import CookieInspector
import CookieKit
import CookieRules
import Foundation
import JSONStream
import Locking
import LogWriter
import ProxyServer
import Terminal

/// What `run` adds around the server: the rules (hot-reloaded), the transformation log, audit mode.
package final class ProxyRuntime {
    let hooks: RulesHooks
    let rulesPath: String?
    /// Rules appended after the files' at every load (`--emulate`).
    let extraRules: [Rule]
    private var fingerprint: String
    private let sink: LogSink?
    /// The access log (`--access-log`) and the run report (`--report`): observers whose file and findings the runtime
    /// reopens, closes and reads.
    let accessLog: AccessLog?
    let report: RunReport?
    /// The last reload: time, whether it took, and what was said (null until one happens).
    package let reloadStatus = Locked<JSONValue>(.null)

    package init(
        hooks: RulesHooks, rulesPath: String?, sink: LogSink?, accessLog: AccessLog? = nil, report: RunReport? = nil,
        extraRules: [Rule] = []
    ) {
        self.hooks = hooks
        (self.accessLog, self.report) = (accessLog, report)
        self.extraRules = extraRules
        self.rulesPath = rulesPath
        self.sink = sink
        self.fingerprint = rulesPath.map(RulesFiles.fingerprint) ?? ""
    }

    /// Reloads the rules; an invalid file is reported and the last good rules stay in force.
    package func reload(reason: String) {
        guard let rulesPath else { return }
        fingerprint = RulesFiles.fingerprint(rulesPath)
        let stamp = Self.now()
        do {
            var set = try RulesFiles.load(rulesPath)
            if let emptied = Self.emptied(set, replacing: hooks.current.ruleSet) {
                // An editor's truncate-then-write caught between its two steps, or a file emptied by mistake: running
                // with none of its rules would let every cookie through unrewritten. An empty file is never a
                // reason to drop rules (a comment in it is).
                let kept = hooks.current.ruleSet.rules.count
                Console.err(
                    "cookie-proxy: WARNING: rules NOT reloaded (\(reason)): \(emptied) is empty; the last good rules (\(kept)) stay in force (to run without its rules, leave a comment in it)"
                )
                reloadFailed(reason: reason, error: "\(emptied) is empty", path: rulesPath, at: stamp)
                return
            }
            set.rules += extraRules
            hooks.replace(RuleEngine(set))
            Console.err("cookie-proxy: rules reloaded (\(reason)): \(set.rules.count) rules from \(rulesPath)")
            reloadStatus.withLock {
                $0 = .object([
                    ("time", .string(stamp)), ("ok", true),
                    ("message", .string("\(set.rules.count) rules from \(rulesPath) (\(reason))")),
                ])
            }
            logEvent(
                "rules-reloaded", at: stamp,
                [("reason", .string(reason)), ("rules", .int(Int64(set.rules.count))), ("path", .string(rulesPath))])
        } catch {
            Console.err("cookie-proxy: rules NOT reloaded (\(reason)); the last good rules stay in force:\n\(error)")
            reloadFailed(reason: reason, error: "\(error)", path: rulesPath, at: stamp)
        }
    }

    /// A reload that did not take: the status the inspector shows, and the log's `rules-reload-failed` event.
    private func reloadFailed(reason: String, error: String, path: String, at stamp: String) {
        reloadStatus.withLock {
            $0 = .object([
                ("time", .string(stamp)), ("ok", false),
                ("message", .string("\(error) — the last good rules stay in force")),
            ])
        }
        logEvent(
            "rules-reload-failed", at: stamp,
            [("reason", .string(reason)), ("error", .string(error)), ("path", .string(path))])
    }

    /// A deadline that closed an exchange: a line on stderr, and an event in the log beside the exchange's records
    /// (`{"event": "exchange-closed", "reason": …, "request": …, "client": …, "detail": …}`).
    func report(_ note: ProxyServer.ClosingNote) {
        Console.err("cookie-proxy: \(note.text)")
        logEvent(
            "exchange-closed", at: Self.now(),
            [
                ("reason", .string(note.closing.name)), ("request", JSONValue(note.exchange)),
                // The client by the one key every record uses (the lifecycle's), when the request is still held.
                ("client", .string(note.requestID.flatMap { hooks.tracker.client(ofRequest: $0) } ?? note.client)),
                ("detail", .string(note.detail)),
            ])
    }

    /// An exchange cut short by either side (a body ended early): a line on stderr, and an event in the log
    /// (`{"event": "body-cut", "request": …, "client": …, "detail": …, "bytes": …}`).
    func report(_ cut: RulesHooks.Cut) {
        Console.err("cookie-proxy: body cut short: \(cut.exchange) (client \(cut.client)): \(cut.why)")
        logEvent(
            "body-cut", at: Self.now(),
            [
                ("request", .string(cut.exchange)),
                ("client", .string(hooks.tracker.client(ofRequest: cut.requestID) ?? cut.client)),
                ("detail", .string(cut.why)), ("bytes", .int(Int64(cut.bodyBytes))),
            ])
    }

    /// Notes past the limit between two looks: how many were not said one by one (all are in the exit counts).
    func reportLeftOut(closings: Int, cuts: Int) {
        guard closings + cuts > 0 else { return }
        var parts: [String] = []
        if closings > 0 { parts.append("\(closings) more closing\(closings == 1 ? "" : "s")") }
        if cuts > 0 { parts.append("\(cuts) more cut\(cuts == 1 ? "" : "s")") }
        Console.err(
            "cookie-proxy: and \(parts.joined(separator: " and ")) in the last second, not listed one by one (counted at exit)"
        )
        logEvent(
            "notes-left-out", at: Self.now(), [("closings", .int(Int64(closings))), ("cuts", .int(Int64(cuts)))])
    }

    /// An event of the proxy's own in the log, beside the cookies' records: `{"time", "event", fields…}`.
    private func logEvent(_ event: String, at stamp: String, _ fields: [(String, JSONValue)]) {
        sink?.submit(line: JSONValue.object([("time", .string(stamp)), ("event", .string(event))] + fields).serialized)
    }

    /// Milliseconds, as every record's `time` (rules/README.md).
    private static func now() -> String { TransformationRecord.timestamp(Int64(Date().timeIntervalSince1970 * 1000)) }

    /// A file that gave rules to `current` and is empty now (nothing but white space), if any: its path.
    static func emptied(_ new: RuleSet, replacing current: RuleSet) -> String? {
        let had = Set(current.rules.map(\.location.file))
        for file in new.files where had.contains(file) && !new.rules.contains(where: { $0.location.file == file }) {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            if text.allSatisfy(\.isWhitespace) { return file }
        }
        return nil
    }

    /// Called about once a second: notices edited rules files, and reads them once they have been still for a
    /// moment (``settleTime``): an editor's save (truncate then write, or write a copy then rename) is one change,
    /// read once, not a half-written file read between its steps.
    func poll() {
        guard let rulesPath else { return }
        var seen = RulesFiles.fingerprint(rulesPath)
        guard seen != fingerprint else { return }
        for _ in 0..<10 {
            usleep(Self.settleTime)
            let again = RulesFiles.fingerprint(rulesPath)
            if again == seen { return reload(reason: "file changed") }
            seen = again
        }
        // Still changing after a second: read at the next poll.
    }

    /// How long the files must stay unchanged before they are read (microseconds).
    static let settleTime: UInt32 = 100_000

    /// SIGUSR1: the log file and the access log are reopened (after logrotate moved them).
    func reopenLog() {
        sink?.reopen()
        accessLog?.reopen()
    }

    /// Writes every queued record, then says what was written and what, if anything, was lost.
    func finish() {
        if let sink {
            sink.close()
            let events = sink.eventsWritten
            var summary =
                "cookie-proxy: \(sink.writtenCount) log records"
                + (events > 0 ? " and \(events) event\(events == 1 ? "" : "s")" : "")
                + " written, \(sink.droppedCount) dropped"
            if sink.droppedCount > 0 { summary += " (--log-overflow drop: the log could not keep up)" }
            if let failure = sink.failure { summary += "; \(failure.records) not written: \(failure.reason)" }
            Console.err(TerminalText(escaping: summary))
        }
        accessLog?.close()
        if let access = accessLog?.counts, access.lost > 0 {
            Console.err(
                "cookie-proxy: access log: \(access.written) lines written, \(access.lost) lost: \(access.failure ?? "")"
            )
        }
    }

    /// The log's writer, for what reads its counts from another thread (the metrics).
    var logSink: LogSink? { sink }

    var statusSummary: String {
        let dropped = sink?.droppedCount ?? 0
        return
            "\(hooks.changed.load()) cookies rewritten · \(hooks.seen.load()) seen"
            + (dropped > 0 ? " · \(dropped) log records dropped" : "")
    }
}
