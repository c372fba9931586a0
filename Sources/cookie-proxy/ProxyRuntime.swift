import ProxyApp
import CookieInspector
import CookieKit
import CookieRules
import Foundation
import Locking
import ProxyCore
import ProxyServer
import ProxyTLS

/// What `run` adds around the server: the rules (hot-reloaded), the transformation log, audit mode.
final class ProxyRuntime {
    let hooks: RulesHooks
    let banner: String
    let rulesPath: String?
    private var fingerprint: String
    private let sink: LogSink?
    /// The last reload: time, whether it took, and what was said (null until one happens).
    let reloadStatus = Locked<JSONValue>(.null)

    /// The options every proxy-running command reads, declared once (parsing, `--help`, every read of a value).
    enum Option {
        static let dryRun = OptionSpec(
            names: ["--dry-run"], value: nil,
            help: "Audit mode: change nothing, log what the rules would do to every cookie.")
        static let log = OptionSpec(
            names: ["--log"], value: "file",
            help: "Write the transformation log (JSON Lines) to this file; 'none' for no log.", defaultValue: "stdout")
        static let logFormat = OptionSpec(
            names: ["--log-format"], value: "format", help: "Log on stdout as json or line (compact).",
            defaultValue: "line on a terminal, else json")
        static let logValues = OptionSpec(
            names: ["--log-values"], value: nil,
            help: "Show cookie values in the log (redacted to a short keyed hash by default).")
        static let logOverflow = OptionSpec(
            names: ["--log-overflow"], value: "policy",
            help: "When the log falls behind: block (slow down, lose nothing) or drop (count and report).",
            defaultValue: "block")
        static let logQueue = OptionSpec(
            names: ["--log-queue"], value: "records", help: "Log records that may wait for the writer.",
            defaultValue: "10000")
        static let intercept = OptionSpec(
            names: ["--intercept"], value: "host",
            help: "Intercept https to this host (*.suffix allowed); hosts rules target are intercepted too.",
            repeatable: true)
        static let interceptAll = OptionSpec(
            names: ["--intercept-all"], value: nil, help: "Intercept https to every host.")
        static let upstreamCa = OptionSpec(
            names: ["--upstream-ca"], value: "file", help: "Also trust this CA (PEM) for upstream certificates.")
        static let insecureUpstream = OptionSpec(
            names: ["--insecure-upstream"], value: "host",
            help: "Do not verify this upstream's certificate (dev backends).",
            repeatable: true)
    }

    static let options: [OptionSpec] = [
        Option.dryRun, Option.log, Option.logFormat, Option.logValues, Option.logOverflow, Option.logQueue,
        Option.intercept, Option.interceptAll, Option.upstreamCa, Option.insecureUpstream,
    ]

    private init(hooks: RulesHooks, banner: String, rulesPath: String?, sink: LogSink?) {
        self.hooks = hooks
        self.banner = banner
        self.rulesPath = rulesPath
        self.sink = sink
        self.fingerprint = rulesPath.map(RulesFiles.fingerprint) ?? ""
    }

    /// `terminal`: the shared view of stdout and stderr when both are a terminal with a live status line.
    static func make(
        args: ParsedArguments, command: String, terminal: TerminalView? = nil, inspector: InspectorStore? = nil
    ) throws(UsageError) -> ProxyRuntime {
        let rulesPath = args.value(RunCommand.Option.rules)
        var ruleSet = RuleSet.empty
        if let rulesPath {
            do {
                ruleSet = try RulesFiles.load(rulesPath)
            } catch let error as RulesError {
                throw UsageError(message: "invalid rules\n\(error)", command: command, exitStatus: 2, kind: .input)
            } catch {
                throw UsageError(message: "\(error)", command: command, exitStatus: 2)
            }
        }
        let dryRun = args.flag(Option.dryRun)
        let sink: LogSink?
        guard let overflow = LogSink.Overflow(rawValue: args.value(orDefault: Option.logOverflow) ?? "") else {
            throw UsageError(message: "--log-overflow must be block or drop", command: command)
        }
        let queueText = args.value(orDefault: Option.logQueue) ?? ""
        guard let queue = Int(queueText), queue >= 1 else {
            throw UsageError(message: "--log-queue must be a positive number of records", command: command)
        }
        do {
            if args.value(Option.log) == "none" {
                sink = nil
            } else {
                let key = try LogKey.load(
                    directory: CertificateAuthority.defaultDirectory(environment: ProcessInfo.processInfo.environment))
                let redaction = Redaction(showValues: args.flag(Option.logValues), key: key)
                if let file = args.value(Option.log) {
                    sink = try LogSink(
                        destination: .file(file), redaction: redaction, overflow: overflow, capacity: queue)
                } else {
                    let format = args.value(Option.logFormat) ?? (isatty(1) != 0 ? "line" : "json")
                    guard format == "json" || format == "line" else {
                        throw UsageError(message: "--log-format must be json or line", command: command)
                    }
                    sink = try LogSink(
                        destination: .standardOutput(
                            compact: format == "line", color: format == "line" && isatty(1) != 0),
                        redaction: redaction, overflow: overflow, capacity: queue, terminal: terminal)
                }
            }
        } catch let error as UsageError {
            throw error
        } catch {
            throw UsageError(message: "\(error)", command: command)
        }
        var intercept = HostPatternList()
        for host in args.all(Option.intercept) {
            guard intercept.add(host) else {
                throw UsageError(message: "--intercept '\(host)' must be a host name or *.suffix", command: command)
            }
        }
        if args.flag(Option.interceptAll) { intercept.all = true }
        let hooks = RulesHooks(
            engine: RuleEngine(ruleSet), dryRun: dryRun, sink: sink, intercept: intercept, inspector: inspector)
        var banner = ""
        if let rulesPath {
            banner +=
                "  rules:        \(ruleSet.rules.count) from \(rulesPath)\(dryRun ? " (dry run: nothing is changed)" : "")"
            banner += " — reloaded on change or SIGHUP\n"
        } else {
            banner +=
                "  rules:        none (everything passes through unchanged)\(dryRun ? "; dry run logs every cookie" : "")\n"
        }
        banner +=
            "  log:          \(args.value(orDefault: Option.log) ?? "")\(args.flag(Option.logValues) ? " (cookie values shown)" : " (cookie values redacted)")\(args.value(Option.log).map { $0 == "none" ? "" : " — reopened on SIGUSR1" } ?? "")\n"
        return ProxyRuntime(hooks: hooks, banner: banner, rulesPath: rulesPath, sink: sink)
    }

    /// Reloads the rules; an invalid file is reported and the last good rules stay in force.
    func reload(reason: String) {
        guard let rulesPath else { return }
        fingerprint = RulesFiles.fingerprint(rulesPath)
        let stamp = CookieDate.rfc3339(Int64(Date().timeIntervalSince1970))
        do {
            let set = try RulesFiles.load(rulesPath)
            hooks.replace(RuleEngine(set))
            Console.err("cookie-proxy: rules reloaded (\(reason)): \(set.rules.count) rules from \(rulesPath)")
            reloadStatus.withLock {
                $0 = .object([
                    ("time", .string(stamp)), ("ok", true),
                    ("message", .string("\(set.rules.count) rules from \(rulesPath) (\(reason))")),
                ])
            }
            sink?.submit(
                line: JSONValue.object([
                    ("time", .string(stamp)), ("event", "rules-reloaded"), ("reason", .string(reason)),
                    ("rules", .int(Int64(set.rules.count))), ("path", .string(rulesPath)),
                ]).serialized)
        } catch {
            Console.err("cookie-proxy: rules NOT reloaded (\(reason)); the last good rules stay in force:\n\(error)")
            reloadStatus.withLock {
                $0 = .object([
                    ("time", .string(stamp)), ("ok", false),
                    ("message", .string("\(error) — the last good rules stay in force")),
                ])
            }
            sink?.submit(
                line: JSONValue.object([
                    ("time", .string(stamp)), ("event", "rules-reload-failed"), ("reason", .string(reason)),
                    ("error", .string("\(error)")), ("path", .string(rulesPath)),
                ]).serialized)
        }
    }

    /// Called about once a second: notices edited rules files.
    func poll() {
        guard let rulesPath else { return }
        if RulesFiles.fingerprint(rulesPath) != fingerprint { reload(reason: "file changed") }
    }

    /// SIGUSR1: the log file is reopened (after logrotate moved it).
    func reopenLog() { sink?.reopen() }

    /// Writes every queued record, then says what was written and what, if anything, was lost.
    func finish() {
        if let sink {
            sink.close()
            var summary = "cookie-proxy: \(sink.writtenCount) log records written, \(sink.droppedCount) dropped"
            if sink.droppedCount > 0 { summary += " (--log-overflow drop: the log could not keep up)" }
            if let failure = sink.failure { summary += "; \(failure.records) not written: \(failure.reason)" }
            Console.err(summary)
        }
    }

    var statusSummary: String {
        let dropped = sink?.droppedCount ?? 0
        return
            "\(hooks.rewritten.load()) cookies rewritten · \(hooks.observed.load()) seen"
            + (dropped > 0 ? " · \(dropped) log records dropped" : "")
    }
}

extension ProxyRuntime {
    /// Sets up TLS interception when something asks for it (or a CA already exists): loads the CA, creating it
    /// on first use, and says so. Returns nil when every CONNECT is to be tunnelled.
    static func interception(args: ParsedArguments, hooks: RulesHooks, command: String) throws(UsageError)
        -> (ProxyServer.Interception, String, CertificateAuthority)?
    {
        let environment = ProcessInfo.processInfo.environment
        let directory = CertificateAuthority.defaultDirectory(environment: environment)
        guard hooks.wantsInterception else {
            return nil
        }
        var note = ""
        let ca: CertificateAuthority
        do {
            if CertificateAuthority.exists(in: directory) {
                ca = try CertificateAuthority.load(from: directory)
            } else {
                ca = try CertificateAuthority.create(in: directory, force: false, commonName: CACommand.commonName())
                note =
                    "  created a local CA in \(directory) (trust \(ca.certificatePath); see README \"Trusting the CA\")\n"
            }
            let server = try TLSServerContext(leaves: try LeafCache(ca: ca))
            let client = try TLSClientContext(extraCAFile: args.value(Option.upstreamCa))
            let insecure = Set(args.all(Option.insecureUpstream).map { $0.lowercased() })
            for host in insecure.sorted() {
                note += "  WARNING: upstream certificates of \(host) are NOT verified (--insecure-upstream)\n"
            }
            note += "  https:        intercepting \(hooks.interceptDescription) with the CA \(ca.certificatePath);"
            note += " every other CONNECT is tunnelled untouched\n"
            return (ProxyServer.Interception(server: server, client: client, insecureHosts: insecure), note, ca)
        } catch {
            throw UsageError(message: "cannot set up https interception: \(error)", command: command, exitStatus: 1)
        }
    }
}

/// The secret of the log's value hashes: 16 random bytes in `log-key` next to the CA (mode 0600), made on first
/// use, so that the same value hashes the same across runs on one machine and differently on another.
enum LogKey {
    /// The inspector's token: the 16 bytes of `inspector-token`, as 32 hex digits (what the banner's URL, the page's
    /// cookie and `cookie-proxy mcp` present).
    static func inspectorToken(directory: String) throws(RulesLoadError) -> String {
        try load(directory: directory, name: "inspector-token").map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
            .joined()
    }

    /// `name`: `log-key`, or `inspector-token` (see ``inspectorToken(directory:)``).
    static func load(directory: String, name: String = "log-key") throws(RulesLoadError) -> [UInt8] {
        let path = directory + "/" + name
        if let data = FileManager.default.contents(atPath: path), data.count >= 16 { return Array(data.prefix(16)) }
        mkdir(directory, 0o700)
        // getrandom(2) on Linux, arc4random on macOS: cryptographically secure.
        var generator = SystemRandomNumberGenerator()
        let key = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        // Written whole under a name of this process's own, then linked into place: link(2) fails if the name
        // exists, so two processes starting at once agree on one key, and none reads a file still being written
        // (with O_EXCL on the final name, the loser could read it empty).
        let temporary = "\(path).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw RulesLoadError(description: "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        let writeError = TerminalView.writeAll(fd, key)
        close(fd)
        defer { unlink(temporary) }
        guard writeError == 0 else {
            throw RulesLoadError(description: "cannot write \(temporary): \(String(cString: strerror(writeError)))")
        }
        if link(temporary, path) != 0 {
            let error = errno
            // Another process made it first: use that one.
            if error == EEXIST, let data = FileManager.default.contents(atPath: path), data.count >= 16 {
                return Array(data.prefix(16))
            }
            throw RulesLoadError(description: "cannot create \(path): \(String(cString: strerror(error)))")
        }
        return key
    }
}
