import BuildVersion
import CookieReports
import Foundation
import ProxyApp
import ProxyPlatform
import Terminal

/// `run --report FORMAT:FILE` and `--fail-on`: the reports asked for and the conditions that fail the run, written
/// at exit and on SIGUSR1.
public struct RunReports {
    public var files: [(format: String, path: String)] = []
    public var failOn: Set<FindingsReport.FailOn> = []
    public var isEmpty: Bool { files.isEmpty && failOn.isEmpty }

    public init() {}

    /// Writes each report (atomically: a reader never sees half of one); failures are said on stderr.
    public func write(_ snapshot: FindingsReport?) {
        guard let snapshot, !files.isEmpty else { return }
        for (format, path) in files {
            let text =
                format == "junit"
                ? snapshot.junit(name: "cookie-proxy run") + "\n"
                : snapshot.sarif(toolVersion: cookieProxyBuildVersion) + "\n"
            do {
                try text.write(toFile: path, atomically: true, encoding: .utf8)
            } catch {
                Console.err("cookie-proxy: --report \(format):\(path): \(error.localizedDescription)")
            }
        }
    }

    /// The exit status the report gives: 1 when it meets a `--fail-on` condition (said on stderr), else 0.
    public func status(_ snapshot: FindingsReport?) -> Int32 {
        guard let snapshot, !failOn.isEmpty else { return 0 }
        guard snapshot.fails(failOn) else { return 0 }
        let counts = Dictionary(grouping: snapshot.entries, by: \.level).mapValues { $0.count }
        let kinds = failOn.map(\.rawValue).sorted().joined(separator: ",")
        Console.err(
            "cookie-proxy: --fail-on \(kinds): \(counts[.rejects] ?? 0) rejected, \(counts[.warning] ?? 0) warned, \(counts[.verdict] ?? 0) verdicts (by host and cookie)"
        )
        return 1
    }
}

/// `run`'s wait: until SIGINT or SIGTERM, SIGHUP reloads the rules, SIGUSR1 reopens the logs and writes the reports,
/// and once a second the running proxy is polled and the status line redrawn; then the proxy drains and the exit
/// messages say how connections ended.
public enum RunLoop {
    /// Blocks the signals ``serve(_:signals:drain:terminal:statusLine:reports:)`` takes (SIGINT, SIGTERM, SIGHUP,
    /// SIGUSR1) and ignores SIGPIPE (a peer's close is a write's error, not the process's end). Called before
    /// ``ProxyApp/start(_:)``: the loops' threads inherit the mask, so the signals come only to the waiting thread.
    public static func blockSignals() -> BlockedSignals {
        let signals = BlockedSignals([SIGINT, SIGTERM, SIGHUP, SIGUSR1])
        signal(SIGPIPE, SIG_IGN)
        return signals
    }

    /// What the server noted for a person since the last look (the log's closings are the running proxy's:
    /// ``RunningProxy/poll()``).
    static func reportEvents(_ proxy: RunningProxy) {
        for note in proxy.takeNotes() { Console.err("cookie-proxy: \(note)") }
    }

    /// Until SIGINT or SIGTERM: SIGHUP reloads the rules and reopens the logs (as nginx's HUP does), SIGUSR1 reopens
    /// the logs (the transformation log and the access log), and once a second the rules
    /// files are looked at and the status line redrawn. Then the server drains and the log is flushed.
    public static func serve(
        _ proxy: RunningProxy, signals: inout BlockedSignals, drain: Double, terminal: TerminalView?,
        statusLine: Bool, reports: RunReports
    ) -> Int32 {
        while true {
            let sig = signals.wait(milliseconds: 1000)
            if sig == SIGHUP {
                proxy.reload(reason: "SIGHUP")
                proxy.reopenLog()
                continue
            }
            if sig == SIGUSR1 {
                proxy.reopenLog()
                reports.write(proxy.findings)
                continue
            }
            if sig == SIGINT || sig == SIGTERM {
                if let terminal { terminal.finish() } else if statusLine { Console.errRaw("\n") }
                Console.err(
                    "cookie-proxy: stopping (finishing exchanges in flight, up to \(drain == drain.rounded() ? "\(Int(drain))s" : "\(drain)s"))"
                )
                // (It logs the last closings before the log is closed.)
                proxy.stop(drain: drain)
                reportEvents(proxy)
                let status = proxy.status
                if !status.socketErrors.isEmpty {
                    let errors = status.socketErrors.map { "\($0.count) × \($0.error)" }.joined(separator: ", ")
                    Console.err("cookie-proxy: client connections ended by a socket error: \(errors)")
                }
                if !status.closings.isEmpty {
                    let closings = status.closings.map { "\($0.count) × \($0.reason)" }.joined(separator: ", ")
                    Console.err("cookie-proxy: exchanges closed early: \(closings)")
                }
                let cuts = proxy.cutCount
                if cuts > 0 {
                    Console.err(
                        "cookie-proxy: \(cuts) exchange\(cuts == 1 ? " was" : "s were") cut short by a side (a body ended early; each said when it happened)"
                    )
                }
                if status.unexpectedEvents > 0 {
                    Console.err(
                        "cookie-proxy: \(status.unexpectedEvents) connections were closed on an event their state could not take (a bug in cookie-proxy: please report it)"
                    )
                }
                reports.write(proxy.findings)
                return reports.status(proxy.findings)
            }
            proxy.poll()
            reportEvents(proxy)
            if statusLine {
                let status = proxy.status
                let text = "\(status.connections) connections · \(status.requests) requests · \(proxy.statusSummary)"
                let line = TerminalText(escaping: text)
                if let terminal { terminal.setStatus(line) } else { Console.errRaw("\r\u{1B}[2K" + line) }
            }
        }
    }
}
