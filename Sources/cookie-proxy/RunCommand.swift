import ArgumentParsing
import ProxyApp
import CookieInspector
import Foundation
import CookieKit
import CookieRules
import ProxyConsole
import Terminal

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `cookie-proxy run`: the proxy in the foreground.
enum RunCommand {
    static let limits = ProxyApp.Configuration.Limits()
    static let deadlines = ProxyApp.Configuration.Deadlines()

    /// The options of `cookie-proxy run`, declared once: parsing, `--help` and every read
    /// of a value use these (a misspelt option is a compile error).
    enum Option {
        static let listen = OptionSpec(
            names: ["--listen", "-l"], value: "host:port",
            help:
                "Address to listen on (numeric); https://HOST:PORT ends TLS there with leaves the local CA mints for"
                + " the name asked (a local https origin for --route). Repeatable.",
            defaultValue: "127.0.0.1:8080", repeatable: true)
        static let reverse = OptionSpec(
            names: ["--reverse"], value: "url",
            help:
                "Reverse mode: send every request to this upstream, e.g. http://localhost:3000 (https://…, or h2c://…"
                + " for an upstream that speaks HTTP/2 without TLS, e.g. a gRPC server); the same as --route /=URL.")
        static let allow = OptionSpec(
            names: ["--allow"], value: "cidr", help: "Also accept clients from this network (loopback always).",
            repeatable: true)
        static let allowLoopbackUpstream = OptionSpec(
            names: ["--allow-loopback-upstream"], value: nil,
            help:
                "Let those clients reach this machine's loopback addresses through the proxy (off: loopback clients only)."
        )
        static let upstreamProxy = OptionSpec(
            names: ["--upstream-proxy"], value: "url|env",
            help:
                "Send requests through this HTTP proxy: http://[user:pass@]host:port, or env for HTTP_PROXY/HTTPS_PROXY/NO_PROXY.",
            choices: ["env"]
        )
        static let noUpstreamProxy = OptionSpec(
            names: ["--no-upstream-proxy"], value: "host",
            help: "Go direct to this host and its subdomains (as NO_PROXY; * for all; loopback always).",
            repeatable: true)
        static let ui = OptionSpec(
            names: ["--ui"], value: "host:port|off",
            help: "Serve the cookie inspector here (loopback unless named; a taken default port picks another).",
            defaultValue: "127.0.0.1:8081",
            choices: ["off"])
        static let metrics = OptionSpec(
            names: ["--metrics"], value: "host:port",
            help:
                "Serve Prometheus metrics at http://HOST:PORT/metrics (a bare port: loopback; the inspector's token as Authorization: Bearer). Off unless given."
        )
        static let uiHistory = OptionSpec(
            names: ["--ui-history"], value: "n", help: "Exchanges the inspector holds (the oldest go first).",
            defaultValue: "10000")
        static let noVia = OptionSpec(names: ["--no-via"], value: nil, help: "Do not add a Via header.")
        static let resolve = OptionSpec(
            names: ["--resolve"], value: "host:address",
            help: "Connect to this numeric address for this host instead of asking DNS (as curl --resolve).",
            repeatable: true)
        static let threads = OptionSpec(
            names: ["--threads"], value: "n", help: "Event loops.", defaultValue: "CPUs the process may use")
        static let maxConnections = OptionSpec(
            names: ["--max-connections"], value: "n", help: "Client connections at once.",
            defaultValue: "\(limits.connections)")
        static let maxHeadBytes = OptionSpec(
            names: ["--max-head-bytes"], value: "n",
            help: "Largest request or response head (431 beyond; 414 when the request line alone is).",
            defaultValue: "\(limits.headBytes)")
        static let maxHeaders = OptionSpec(
            names: ["--max-headers"], value: "n", help: "Most header fields in one head.",
            defaultValue: "\(limits.fields)")
        static let headerTimeout = OptionSpec(
            names: ["--header-timeout"], value: "seconds", help: "Time to receive a request head once started.",
            defaultValue: seconds(deadlines.header))
        static let idleTimeout = OptionSpec(
            names: ["--idle-timeout"], value: "seconds",
            help: "Idle keep-alive client connections are closed after.",
            defaultValue: seconds(deadlines.idle))
        static let connectTimeout = OptionSpec(
            names: ["--connect-timeout"], value: "seconds", help: "Time to connect to an upstream (504 beyond).",
            defaultValue: seconds(deadlines.connect))
        static let responseTimeout = OptionSpec(
            names: ["--response-timeout"], value: "seconds",
            help: "Time for an upstream's response head (504 beyond).",
            defaultValue: seconds(deadlines.response))
        static let upstreamReadTimeout = OptionSpec(
            names: ["--upstream-read-timeout"], value: "seconds",
            help: "Time an upstream may send nothing of its response body (the client's connection closes beyond).",
            defaultValue: seconds(deadlines.upstreamRead))
        static let clientWriteTimeout = OptionSpec(
            names: ["--client-write-timeout"], value: "seconds",
            help: "Time a client may take nothing of what is sent to it (both sides close beyond).",
            defaultValue: seconds(deadlines.clientWrite))
        static let streamIdleTimeout = OptionSpec(
            names: ["--stream-idle-timeout"], value: "seconds",
            help: "Time a body stream or tunnel (CONNECT, WebSocket) may be silent both ways.",
            defaultValue: seconds(deadlines.streamIdle))
        static let drainTimeout = OptionSpec(
            names: ["--drain-timeout"], value: "seconds",
            help: "On SIGINT/SIGTERM, time given to exchanges in flight.", defaultValue: "10s")
        static let quiet = OptionSpec(
            names: ["--quiet", "-q"], value: nil,
            help: "No banner and no live status line: only the 'listening on' lines and warnings.")
        static let http2 = OptionSpec(
            names: ["--http2"], value: "mode",
            help:
                "HTTP/2 with clients: fallback (intercepted TLS offers h2 to clients that offer nothing else), on"
                + " (h2 whenever offered) or off (HTTP/1.1 only); h2c with prior knowledge unless off.",
            defaultValue: "fallback",
            choices: ["fallback", "on", "off"])
    }

    static let spec = CommandSpec(
        name: "run",
        abstract: "Run the proxy in the foreground.",
        usage: "cookie-proxy run [--listen HOST:PORT] [--rules PATH] [--reverse URL] [options]",
        options: [
            Option.listen,
            RuntimeOptions.Option.rules,
            Option.reverse,
            RouteOption.route,
            RouteOption.noForwarded,
            Option.allow,
            Option.allowLoopbackUpstream,
            Option.upstreamProxy,
            Option.noUpstreamProxy,
            Option.ui,
            Option.uiHistory,
            Option.metrics,
            ReportOption.report,
            ReportOption.failOn,
            Option.noVia,
            Option.resolve,
            Option.threads,
            Option.maxConnections,
            Option.maxHeadBytes,
            Option.maxHeaders,
            Option.headerTimeout,
            Option.idleTimeout,
            Option.connectTimeout,
            Option.responseTimeout,
            Option.upstreamReadTimeout,
            Option.clientWriteTimeout,
            Option.streamIdleTimeout,
            Option.drainTimeout,
            Option.http2,
            Option.quiet,
        ] + RuntimeOptions.options + [.psl],
        discussion: """
            Point a client at the proxy:
              curl -x http://127.0.0.1:8080 http://example.com/
              export http_proxy=http://127.0.0.1:8080 https_proxy=http://127.0.0.1:8080
              iOS simulator: the Mac's network settings → Proxies → Web Proxy (HTTP) and Secure Web Proxy.
            The proxy listens on loopback only unless told otherwise (--listen 0.0.0.0:8080 --allow 192.168.1.0/24);
            the banner then lists the addresses to type on a device. Clients from the network cannot reach this
            machine's loopback services through it unless --allow-loopback-upstream.
            SIGINT/SIGTERM stop accepting, finish exchanges in flight (up to --drain-timeout), write every queued log
            record and the --report files, and exit 0 (1 when a --fail-on condition was met). SIGHUP reloads the
            rules and reopens the log files; SIGUSR1 reopens the log and access log files (logrotate: move them,
            then send USR1; nothing is lost) and writes the --report files.
            """)

    static func seconds(_ s: Double) -> String { s == s.rounded() ? "\(Int(s))s" : "\(s)s" }

    /// What `run` reads from its options besides the rules and the log: the configuration's listeners, routes,
    /// limits and deadlines, how long a stop waits for exchanges in flight, and the inspector's address (nil:
    /// `--ui off`).
    struct Settings {
        var config: ProxyApp.Configuration
        var drain: Double
        var uiAddress: (String, Int)?
        var uiHistory: Int
        var metricsAddress: (String, Int)? = nil
    }

    static func run(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        let settings = try settings(args)
        let quiet = args.flag(Option.quiet)
        let statusLine = !quiet && isatty(2) != 0
        let terminal = statusLine && isatty(1) != 0 ? TerminalView() : nil
        let uiAddress = settings.uiAddress
        var configuration = settings.config
        let runtimeBanner = try RuntimeOptions.apply(args, command: spec.name, terminal: terminal, to: &configuration)
        let reports = try reportSettings(args)
        configuration.report = !reports.isEmpty
        configuration.inspector = uiAddress.map {
            .init(host: $0.0, port: $0.1, capacity: settings.uiHistory, anyPortIfTaken: args.value(Option.ui) == nil)
        }
        configuration.metrics = settings.metricsAddress
        var signals = RunLoop.blockSignals()
        let proxy: RunningProxy
        do {
            proxy = try ProxyApp.start(configuration)
        } catch {
            switch error.stage {
            case .log: throw UsageError(message: error.description, command: spec.name)
            case .setup: throw UsageError(message: error.description, command: spec.name, exitStatus: 1)
            case .listen:
                Console.err("error: \(error.description)")
                return 1
            }
        }
        // The banner and status on stderr: stdout carries only the log when the log goes there (`run | jq`).
        for line in RunBanner.started(configuration, proxy: proxy) { Console.err(TerminalText(lines: line)) }
        if !quiet {
            Console.err(
                TerminalText(
                    lines: RunBanner.banner(
                        configuration, proxy: proxy, runtimeBanner: runtimeBanner, uiAddress: uiAddress,
                        https: proxy.tls?.note, pslGiven: args.value(OptionSpec.psl) != nil,
                        metricsHost: settings.metricsAddress?.0)))
        }
        return RunLoop.serve(
            proxy, signals: &signals, drain: settings.drain, terminal: terminal, statusLine: statusLine,
            reports: reports)
    }

    /// The options that configure the server, checked.
    static func settings(_ args: ParsedArguments) throws(UsageError) -> Settings {
        var config = ProxyApp.Configuration(home: ProxyApp.Configuration.defaultHome())
        config.threads = ProxyApp.Configuration.availableCPUs
        switch ProxyApp.Configuration.Poller.fromEnvironment(
            getenv("COOKIE_PROXY_POLLER").map { ["COOKIE_PROXY_POLLER": String(cString: $0)] } ?? [:])
        {
        case .success(let kind): config.poller = kind
        case .failure(let error): throw UsageError(message: error.description, command: spec.name)
        }
        var listeners: [ProxyApp.Configuration.Listener] = []
        for listen in args.all(Option.listen) {
            // `https://HOST:PORT`: a TLS listener; `http://HOST:PORT` or `HOST:PORT`: plain.
            let lower = listen.lowercased()
            let tls = lower.hasPrefix("https://")
            let address =
                tls ? String(listen.dropFirst(8)) : lower.hasPrefix("http://") ? String(listen.dropFirst(7)) : listen
            guard let (host, port) = parseHostPort(address) else {
                throw UsageError(
                    message: "--listen '\(listen)' must be HOST:PORT or https://HOST:PORT, e.g. 127.0.0.1:8080",
                    command: spec.name)
            }
            listeners.append(.init(host: host, port: port, tls: tls))
        }
        if !listeners.isEmpty { config.listeners = listeners }
        try routes(args, into: &config)
        for cidr in args.all(Option.allow) {
            guard let c = ProxyApp.Configuration.Network(cidr) else {
                throw UsageError(
                    message: "--allow '\(cidr)' is not a network such as 192.168.1.0/24", command: spec.name)
            }
            config.allowed.append(c)
        }
        if args.flag(Option.allowLoopbackUpstream) { config.allowLoopbackUpstream = true }
        let bypass = args.all(Option.noUpstreamProxy).flatMap { $0.split(separator: ",").map(String.init) }
        if let error = config.setUpstreamProxies(
            args.value(Option.upstreamProxy), bypass: bypass, environment: { getenv($0).map { String(cString: $0) } })
        {
            throw UsageError(message: error.description, command: spec.name)
        }
        if args.flag(Option.noVia) { config.via = false }
        for entry in args.all(Option.resolve) {
            let (host, address) = try resolveEntry(entry, command: spec.name)
            config.resolve[host] = address
        }
        func int(_ option: OptionSpec, _ range: ClosedRange<Int>, orDefault: Bool = false) throws(UsageError) -> Int? {
            try args.integer(option, in: range, orDefault: orDefault, command: spec.name)
        }
        func secs(_ option: OptionSpec, orDefault: Bool = false) throws(UsageError) -> Double? {
            try args.seconds(option, orDefault: orDefault, command: spec.name)
        }
        if let n = try int(Option.threads, 1...64) { config.threads = n }
        if let n = try int(Option.maxConnections, 1...1_000_000) { config.limits.connections = n }
        if let n = try int(Option.maxHeadBytes, 1024...(1 << 24)) { config.limits.headBytes = n }
        if let n = try int(Option.maxHeaders, 1...10_000) { config.limits.fields = n }
        if let s = try secs(Option.headerTimeout) { config.deadlines.header = s }
        if let s = try secs(Option.idleTimeout) { config.deadlines.idle = s }
        if let s = try secs(Option.connectTimeout) { config.deadlines.connect = s }
        if let s = try secs(Option.responseTimeout) { config.deadlines.response = s }
        if let s = try secs(Option.upstreamReadTimeout) { config.deadlines.upstreamRead = s }
        if let s = try secs(Option.clientWriteTimeout) { config.deadlines.clientWrite = s }
        if let s = try secs(Option.streamIdleTimeout) { config.deadlines.streamIdle = s }
        let drain = try secs(Option.drainTimeout, orDefault: true) ?? 10
        config.http2 = ["off": ProxyApp.Configuration.HTTP2.off, "fallback": .fallback, "on": .on][
            try args.choice(Option.http2, command: spec.name)]!
        let uiText = args.value(orDefault: Option.ui) ?? ""
        let uiAddress: (String, Int)?
        if uiText == "off" {
            uiAddress = nil
        } else {
            guard let parsed = parseHostPort(uiText) else {
                throw UsageError(message: "--ui '\(uiText)' must be HOST:PORT or off", command: spec.name)
            }
            uiAddress = parsed
        }
        let history = try int(Option.uiHistory, 1...1_000_000, orDefault: true) ?? 10_000
        var metricsAddress: (String, Int)? = nil
        if let text = args.value(Option.metrics) {
            // A bare port is loopback's, as for the inspector.
            let address = text.allSatisfy(\.isNumber) ? "127.0.0.1:" + text : text
            guard let parsed = parseHostPort(address) else {
                throw UsageError(message: "--metrics '\(text)' must be HOST:PORT or a port", command: spec.name)
            }
            metricsAddress = parsed
        }
        return Settings(
            config: config, drain: drain, uiAddress: uiAddress, uiHistory: history, metricsAddress: metricsAddress)
    }

    /// A `--resolve HOST:ADDRESS` entry (``ProxyApp/Configuration/resolveEntry(_:)``).
    static func resolveEntry(_ entry: String, command: String) throws(UsageError) -> (host: String, address: String) {
        guard let parsed = ProxyApp.Configuration.resolveEntry(entry) else {
            throw UsageError(
                message: "--resolve '\(entry)' must be HOST:ADDRESS, e.g. app.test:127.0.0.1", command: command)
        }
        return parsed
    }

    static func parseHostPort(_ s: String) -> (String, Int)? { ProxyApp.Configuration.address(s) }
}
