import ArgumentParsing
import CookieKit
import CookieRules
import Foundation
import LogWriter
import ProxyApp
import Terminal
import TrustStores

/// The command line of the proxy's runtime (rules, log, interception, lifecycle), shared by the commands that run
/// the proxy (`run`, `audit --browser`): its options, and what they put into the app's configuration.
public enum RuntimeOptions {
    /// The options every proxy-running command reads, declared once (parsing, `--help`, every read of a value).
    public enum Option {
        public static let rules = OptionSpec(
            names: ["--rules", "-r"], value: "path", help: "Rules file, or a folder of *.rules files.")
        public static let dryRun = OptionSpec(
            names: ["--dry-run"], value: nil,
            help: "Audit mode: change nothing, log what the rules would do to every cookie.")
        public static let log = OptionSpec(
            names: ["--log"], value: "file",
            help: "Write the transformation log (JSON Lines) to this file; 'none' for no log.", defaultValue: "stdout")
        public static let accessLog = OptionSpec(
            names: ["--access-log"], value: "file|-",
            help:
                "Append a line per request to this file ('-': stdout), whatever became of it (relayed, answered by"
                + " the proxy, cut short).")
        public static let accessLogFormat = OptionSpec(
            names: ["--access-log-format"], value: "format",
            help:
                "The access log's lines: combined (nginx's format, which GoAccess reads) or json (Caddy's field names,"
                + " with the route, the target and Host sent upstream, cookies changed and verdicts).",
            defaultValue: "combined",
            choices: ["combined", "json"])
        public static let logFormat = OptionSpec(
            names: ["--log-format"], value: "format", help: "Log on stdout as json or line (compact).",
            defaultValue: "line on a terminal, else json",
            choices: ["json", "line"])
        public static let logValues = OptionSpec(
            names: ["--log-values"], value: nil,
            help: "Show cookie values in the log (redacted to a short keyed hash by default).")
        public static let logOverflow = OptionSpec(
            names: ["--log-overflow"], value: "policy",
            help: "When the log falls behind: block (slow down, lose nothing) or drop (count and report).",
            defaultValue: "block",
            choices: ["block", "drop"])
        public static let logQueue = OptionSpec(
            names: ["--log-queue"], value: "records", help: "Log records that may wait for the writer.",
            defaultValue: "10000")
        public static let intercept = OptionSpec(
            names: ["--intercept"], value: "host",
            help: "Intercept https to this host (*.suffix allowed); hosts rules target are intercepted too.",
            repeatable: true)
        public static let interceptAll = OptionSpec(
            names: ["--intercept-all"], value: nil, help: "Intercept https to every host.")
        public static let upstreamCa = OptionSpec(
            names: ["--upstream-ca"], value: "file", help: "Also trust this CA (PEM) for upstream certificates.")
        public static let insecureUpstream = OptionSpec(
            names: ["--insecure-upstream"], value: "host",
            help: "Do not verify this upstream's certificate (dev backends).",
            repeatable: true)
        public static let lifecycle = OptionSpec(
            names: ["--lifecycle"], value: "on|off",
            help:
                "Replay each client's cookies and judge every request's Cookie header against them (expected vs"
                + " sent), for the log and the inspector.",
            defaultValue: "on",
            choices: ["on", "off"])
        public static let emulate = OptionSpec(
            names: ["--emulate"], value: "browser",
            help:
                "Add a browser's cookie policy to the rules: safari (WebKit, every WKWebView: unpartitioned"
                + " third-party cookies neither kept nor sent).",
            choices: ["safari"])
        public static let clientBy = OptionSpec(
            names: ["--client-by"], value: "auto|address|header:NAME",
            help:
                "What tells clients apart for the lifecycle: the address (auto: on loopback with the User-Agent's"
                + " engine or product), or a request header (devices behind one NAT).",
            defaultValue: "auto",
            choices: ["auto", "address", "header:"])
        public static let engine = OptionSpec(
            names: ["--engine"], value: "auto|rfc6265bis|chromium|firefox|webkit",
            help:
                "Whose cookie store the lifecycle replays for each client (limits, eviction, SameSite defaults,"
                + " third-party cookies): auto reads each client's User-Agent; unknown clients get RFC 6265bis's.",
            defaultValue: "auto",
            choices: ["auto"] + CookieJar.Profile.Engine.allCases.map(\.rawValue))
    }

    public static let options: [OptionSpec] = [
        Option.dryRun, Option.log, Option.accessLog, Option.accessLogFormat, Option.logFormat, Option.logValues,
        Option.logOverflow,
        Option.logQueue,
        Option.intercept, Option.interceptAll, Option.upstreamCa, Option.insecureUpstream, Option.lifecycle,
        Option.clientBy, Option.engine, Option.emulate,
    ]

    /// What the runtime's options say, into `c` (rules, log, interception, lifecycle), and the banner's lines for
    /// them. `terminal`: the shared view of stdout and stderr when both are a terminal with a live status line.
    public static func apply(
        _ args: ParsedArguments, command: String, terminal: TerminalView? = nil, to c: inout ProxyApp.Configuration
    ) throws(UsageError) -> String {
        let rulesPath = args.value(Option.rules)
        if let rulesPath {
            do {
                c.rules = try RulesFiles.load(rulesPath)
            } catch let error as RulesError {
                throw UsageError(message: "invalid rules\n\(error)", command: command, exitStatus: 2, kind: .input)
            } catch {
                throw UsageError(message: "\(error)", command: command, exitStatus: 2)
            }
        }
        c.rulesPath = rulesPath
        if let name = args.value(Option.emulate) {
            do {
                guard let preset = try Presets.rules(name) else {
                    throw UsageError(
                        message: "--emulate must be one of \(Presets.names.joined(separator: ", "))", command: command)
                }
                c.extraRules = preset
            } catch let error as UsageError {
                throw error
            } catch {
                throw UsageError(message: "\(error)", command: command, exitStatus: 2)
            }
        }
        c.dryRun = args.flag(Option.dryRun)
        c.accessLog = args.value(Option.accessLog)
        c.accessLogFormat = AccessLog.Format(rawValue: try args.choice(Option.accessLogFormat, command: command))!
        if c.accessLog == "-" && args.value(Option.log) == nil {
            throw UsageError(
                message:
                    "--access-log -: the transformation log is on stdout already; give it a file (--log FILE) or"
                    + " turn it off (--log none)",
                command: command)
        }
        c.showValues = args.flag(Option.logValues)
        let overflow = LogSink.Overflow(rawValue: try args.choice(Option.logOverflow, command: command))!
        let queue = try args.integer(Option.logQueue, in: 1...10_000_000, orDefault: true, command: command) ?? 10_000
        if args.value(Option.log) != "none" {
            var log: ProxyApp.Configuration.Log
            if let file = args.value(Option.log) {
                log = .init(destination: .file(file))
            } else {
                let format = args.value(Option.logFormat) ?? (isatty(1) != 0 ? "line" : "json")
                guard format == "json" || format == "line" else {
                    throw UsageError(message: "--log-format must be json or line", command: command)
                }
                log = .init(
                    destination: .standardOutput(compact: format == "line", color: format == "line" && isatty(1) != 0))
                log.terminal = terminal
            }
            log.overflow = overflow
            log.capacity = queue
            c.log = log
        }
        for host in args.all(Option.intercept) {
            guard c.intercept.add(host) else {
                throw UsageError(message: "--intercept '\(host)' must be a host name or *.suffix", command: command)
            }
        }
        if args.flag(Option.interceptAll) { c.intercept.all = true }
        c.tls.upstreamCAFile = args.value(Option.upstreamCa)
        c.tls.insecureHosts = Set(args.all(Option.insecureUpstream).map { $0.lowercased() })
        c.tls.commonName = CATrust.commonName()
        c.lifecycle = try args.choice(Option.lifecycle, command: command) == "on"
        guard let clientKey = LifecycleTracker.parseClientKey(args.value(orDefault: Option.clientBy) ?? "") else {
            throw UsageError(message: "--client-by must be auto, address or header:NAME", command: command)
        }
        c.clientKey = clientKey
        c.engine = CookieJar.Profile.Engine(rawValue: try args.choice(Option.engine, command: command))
        return RunBanner.runtime(c, emulate: args.value(Option.emulate))
    }
}
