import CookieInspector
import CookieKit
import CookieReports
import CookieRules
import Foundation
import HTTPGrammar
import JSONStream
import Locking
import LogWriter
import ProxyCore
import ProxyServer
import ProxyTLS
import Terminal

/// The proxy as a library: a configuration value in, a running proxy out (``start(_:)``). The executable parses its
/// arguments into a ``Configuration``, starts it, prints what it got and waits for signals; a test starts one the
/// same way, without the executable.
public enum ProxyApp {
    /// Everything a running proxy is made of, decided before it starts. Values only: the log, the inspector, the
    /// lifecycle, TLS and the metrics are made by ``start(_:)``.
    public struct Configuration {
        /// Where it listens; the first is the one the banner names.
        public var listeners = [Listener(host: "127.0.0.1", port: 8080)]
        /// Reverse mode's routes (`--reverse`, `--route`); none: a forward proxy.
        public var routes: [ReverseRoute] = []
        /// Towards routes, X-Forwarded-For, -Proto and -Host are added.
        public var forwardedHeaders = true
        /// Networks clients may connect from besides loopback (`--allow`).
        public var allowed: [Network] = []
        /// Upstreams on loopback addresses are allowed in forward mode (`--allow-loopback-upstream`).
        public var allowLoopbackUpstream = false
        /// Upstream proxies (`--upstream-proxy`, or HTTP_PROXY and HTTPS_PROXY); nil: none.
        public var upstreamProxies: UpstreamProxyRoutes? = nil
        /// `Via` is added to what is forwarded.
        public var via = true
        /// Host names resolved to these addresses instead of by DNS (`--resolve`).
        public var resolve: [String: String] = [:]
        public var limits = Limits()
        public var deadlines = Deadlines()
        public var http2 = HTTP2.off
        /// Event loops, one thread each.
        public var threads = 1
        public var poller = Poller.native
        /// Where the CA, the log's key and the inspector's token live (mode 0600; made on first use).
        public var home: String
        /// The rules in force, and the file they came from (watched and reloaded; nil: none).
        public var rules: RuleSet = .empty
        public var rulesPath: String? = nil
        /// Rules that follow the file's and stay across reloads (`--emulate`).
        public var extraRules: [Rule] = []
        /// Change nothing; log what the rules would do.
        public var dryRun = false
        /// The transformation log; nil for none.
        public var log: Log? = nil
        /// A line per exchange (``AccessLog``) to this file (`-`: standard output); nil for none.
        public var accessLog: String? = nil
        /// The access log's format: `combined` (nginx's, GoAccess's) or `json` (Caddy's field names and the proxy's).
        package var accessLogFormat = AccessLog.Format.combined
        /// Hosts whose exchanges the JSON access log marks `"browser_own": true` (the site audit's: the browser's
        /// own traffic, not the site's); nil: none is marked, and the field is not written.
        package var accessLogOwnTraffic: (@Sendable (String) -> Bool)? = nil
        /// Observers told every exchange after the built-in ones (``ExchangeObserver``): what a program embedding the
        /// proxy adds, with no other change.
        public var observers: [any ExchangeObserver] = []
        /// Hosts whose https is intercepted (the hosts the rules target are added to them).
        public var intercept = HostPatternList()
        public var tls = TLS()
        /// Each client's cookies replayed and its requests judged (only when the log, the inspector or a report
        /// reads the verdicts).
        public var lifecycle = true
        public var clientKey: LifecycleTracker.ClientKey = .automatic
        /// Whose cookie store the lifecycle replays; nil: each client's, by its User-Agent.
        public var engine: CookieJar.Profile.Engine? = nil
        /// The inspector; nil: off (the local service still answers the onboarding host, on a free loopback port).
        public var inspector: Inspector? = nil
        /// Cookie values shown in the log and the inspector (a short keyed hash of each by default).
        public var showValues = false
        /// `/metrics` for Prometheus; nil: off.
        public var metrics: (host: String, port: Int)? = nil
        /// Findings and verdicts are gathered for a CI report (``RunningProxy/report``).
        public var report = false

        public struct Inspector {
            public var host: String
            public var port: Int
            /// Exchanges held.
            public var capacity: Int
            /// The port is the default one, not asked for: another free one is taken when it is in use.
            public var anyPortIfTaken: Bool
            public init(host: String, port: Int, capacity: Int, anyPortIfTaken: Bool) {
                (self.host, self.port, self.capacity, self.anyPortIfTaken) = (host, port, capacity, anyPortIfTaken)
            }
        }

        public struct Log {
            public var destination: LogSink.Destination
            public var overflow: LogSink.Overflow = .block
            public var capacity = 10_000
            /// The live status line's view of stdout, when there is one.
            public var terminal: TerminalView? = nil
            public init(destination: LogSink.Destination) { self.destination = destination }
        }

        /// TLS interception and listeners: set up when the rules or the intercept list ask for it, `required`, or
        /// always when a CA exists already.
        public struct TLS {
            /// A TLS listener or an https route needs the local CA whatever the rules say.
            public var required = false
            /// Also trusted for upstream certificates.
            public var upstreamCAFile: String? = nil
            /// Upstreams whose certificates are not verified.
            public var insecureHosts: Set<String> = []
            /// The common name of a CA made on first use.
            public var commonName = "cookie-proxy local CA"
            public init() {}
        }

        public init(home: String) {
            self.home = home
        }
    }

    /// Why the proxy did not start, as one line for a person, and at which stage.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
        public var stage: Stage
        public enum Stage: Sendable {
            /// The log (a file that cannot be opened, the log's key).
            case log
            /// TLS or the local service (the CA, the inspector's token).
            case setup
            /// A listener or the metrics endpoint could not be bound.
            case listen
        }
    }

    /// What ``start(_:)`` set up for TLS: the contexts the server uses, what to tell a person, and the CA.
    public struct TLSSetup {
        public var interception: ProxyServer.Interception
        /// The banner's line for what is intercepted.
        public var note: String
        /// A CA made by this start, and where its certificate is to be trusted: said whatever the mode.
        public var created: String?
        /// Upstreams whose certificates are not verified: said even without a banner.
        public var warnings: [String]
        public var ca: CertificateAuthority
    }

    /// Starts the proxy: the log, the rules' hooks, TLS when asked for, the local service, the listeners, and the
    /// metrics endpoint; returns once every listener is bound.
    public static func start(_ configuration: Configuration) throws(StartError) -> RunningProxy {
        var c = configuration
        // What the configuration implies: TLS for an https route or a TLS listener; the onboarding host never
        // through an upstream proxy (it is the proxy's own); a forward proxy's own URL in a browser a page that says
        // what this is.
        var server = c.serverConfiguration
        if c.routes.contains(where: { $0.scheme == .https }) || c.listeners.contains(where: \.tls) {
            c.tls.required = true
        }
        if let routes = c.upstreamProxies, let onboarding = server.onboardingHost {
            server.proxy.upstreamProxies = UpstreamProxyRoutes(
                http: routes.http, https: routes.https, bypass: routes.bypass + [onboarding])
        }
        if !c.isReverse {
            server.proxy.forwardProxyPage = ServicePages.forwardProxyPage(
                inspector: c.inspector.map { ($0.host, $0.port) }, onboarding: server.onboardingHost)
        }
        let store = c.inspector.map { InspectorStore(capacity: $0.capacity) }
        let key: [UInt8]
        let sink: LogSink?
        let accessLog: AccessLog?
        // Whose client keys every record and view uses (the lifecycle's, `--client-by`).
        let tracker = LifecycleTracker(clientKey: c.clientKey, engine: c.engine)
        do {
            key = try LogKey.load(directory: c.home)
            sink = try c.log.map { log throws(LogSink.OpenError) in
                var printAbove: LogSink.PrintAbove? = nil
                if let terminal = log.terminal {
                    printAbove = { fd, bytes in terminal.printAbove(fd: fd, bytes) }
                }
                return try LogSink(
                    destination: log.destination, overflow: log.overflow, capacity: log.capacity,
                    printAbove: printAbove,
                    gapRecord: { lost, reason, since, now in
                        JSONValue.object([
                            ("time", .string(TransformationRecord.timestamp(now))), ("event", .string("log-gap")),
                            ("lost", .int(Int64(lost))), ("since", .string(TransformationRecord.timestamp(since))),
                            ("reason", .string(reason)),
                        ]).serialized
                    })
            }
            accessLog = try c.accessLog.map { path throws(RulesLoadError) in
                try AccessLog(
                    path: path, format: c.accessLogFormat, onboardingHost: server.onboardingHost,
                    ownTraffic: c.accessLogOwnTraffic)
            }
        } catch {
            throw StartError(description: "\(error)", stage: .log)
        }
        var rules = c.rules
        rules.rules += c.extraRules
        let lifecycle = c.lifecycle && (sink != nil || store != nil || c.report)
        let metricsObserver = c.metrics.map { _ in MetricsObserver(reverse: c.isReverse, lifecycle: lifecycle) }
        let report = c.report ? RunReport() : nil
        let observers =
            builtInObservers(
                log: sink.map {
                    TransformationLog(
                        sink: $0, redaction: Redaction(showValues: c.showValues, key: key), clients: tracker)
                }, inspector: store, tracker: tracker, lifecycle: lifecycle, report: report,
                metrics: metricsObserver,
                accessLog: accessLog) + c.observers
        let hooks = RulesHooks(
            engine: RuleEngine(rules), dryRun: c.dryRun, intercept: c.intercept, lifecycle: lifecycle,
            tracker: tracker, observers: observers)
        let runtime = ProxyRuntime(
            hooks: hooks, rulesPath: c.rulesPath, sink: sink, accessLog: accessLog, report: report,
            extraRules: c.extraRules)
        let tls = try tlsSetup(c, wanted: hooks.wantsInterception, described: hooks.interceptDescription)
        let service: InspectorService
        do {
            let token = try LogKey.inspectorToken(directory: c.home)
            var certificate: (pem: [UInt8], der: [UInt8], name: String)? = nil
            if let ca = tls?.ca {
                certificate = (try ca.certificatePEM(), try ca.certificateDER(), try ca.commonName())
            }
            let reload = runtime.reloadStatus
            service = InspectorService(
                store: store ?? InspectorStore(capacity: 1),
                redaction: Redaction(showValues: c.showValues, key: key), token: token,
                rules: { hooks.current.ruleSet }, reloadStatus: { reload.withLock { $0 } }, caCertificate: certificate,
                inspectorEnabled: store != nil, lifecycle: hooks.lifecycle ? hooks.tracker : nil)
        } catch {
            throw StartError(description: "cannot set up the inspector: \(error)", stage: .setup)
        }
        // Without the inspector the service still answers the onboarding host, on a free loopback port.
        server.localServiceAddress = c.inspector.map { ($0.host, $0.port) } ?? ("127.0.0.1", 0)
        server.localServiceAnyPortIfTaken = c.inspector?.anyPortIfTaken ?? true
        let proxy = ProxyServer(
            configuration: server, hooks: hooks, interception: tls?.interception, localService: service)
        do {
            try proxy.start()
        } catch {
            throw StartError(description: "\(error)", stage: .listen)
        }
        if let inspector = c.inspector {
            service.bound(host: inspector.host, port: proxy.localServicePort)
            // `ui url` and `mcp` in another terminal find the inspector here, whichever port it took.
            InspectorAddress.record(
                ServicePages.inspectorURL(inspector.host, proxy.localServicePort), directory: c.home)
        }
        var metrics: MetricsServer? = nil
        if let (host, port) = c.metrics, let observer = metricsObserver {
            let started = Date().timeIntervalSince1970
            do {
                metrics = try MetricsServer(host: host, port: port, token: service.token) {
                    Metrics(server: proxy, metrics: observer, log: sink, accessLog: accessLog?.sink, startTime: started)
                }
            } catch {
                proxy.shutdown(deadline: 0)
                throw StartError(
                    description: "--metrics: cannot listen on \(HostPort.format(host, port)): \(error)", stage: .listen)
            }
        }
        return RunningProxy(
            server: proxy, runtime: runtime, service: service, metrics: metrics, tls: tls, home: c.home)
    }

    /// The CA (made on first use), the leaves' contexts for interception and TLS listeners, and the upstream side's
    /// trust; nil when nothing asks for TLS.
    static func tlsSetup(_ c: Configuration, wanted: Bool, described: String) throws(StartError) -> TLSSetup? {
        guard wanted || c.tls.required else { return nil }
        var created: String? = nil
        var warnings: [String] = []
        do {
            let ca: CertificateAuthority
            if CertificateAuthority.exists(in: c.home) {
                ca = try CertificateAuthority.load(from: c.home)
            } else {
                ca = try CertificateAuthority.create(in: c.home, force: false, commonName: c.tls.commonName)
                created =
                    "created a local CA in \(c.home): trust it once with `cookie-proxy ca install` (\(ca.certificatePath);"
                    + " docs/https.md)"
            }
            let leaves = try LeafCache(ca: ca)
            let http2 = c.http2
            let server = try TLSServerContext(leaves: leaves, http2: http2)
            let listener = try TLSServerContext(leaves: leaves, http2: http2 == .off ? .off : .on)
            let client = try TLSClientContext(extraCAFile: c.tls.upstreamCAFile)
            for host in c.tls.insecureHosts.sorted() {
                warnings.append("upstream certificates of \(host) are NOT verified (--insecure-upstream)")
            }
            let note =
                described.isEmpty
                ? "  https:        CONNECT is tunnelled untouched (no host is intercepted; see --intercept); the"
                    + " listener's certificate is the CA's \(ca.certificatePath)\n"
                : "  https:        intercepting \(described) with the CA \(ca.certificatePath); every other CONNECT is"
                    + " tunnelled untouched\n"
            let interception = ProxyServer.Interception(
                server: server, client: client, insecureHosts: c.tls.insecureHosts, listener: listener)
            return TLSSetup(interception: interception, note: note, created: created, warnings: warnings, ca: ca)
        } catch {
            throw StartError(description: "cannot set up https interception: \(error)", stage: .setup)
        }
    }
}

/// A started proxy: its addresses, and what a running one is asked to do (reload its rules, reopen its log, stop).
public final class RunningProxy {
    let server: ProxyServer
    let runtime: ProxyRuntime
    let service: InspectorService
    let metrics: MetricsServer?
    /// What TLS was set up (nil: none).
    public let tls: ProxyApp.TLSSetup?
    /// The configuration folder (where the inspector's address is recorded while it runs).
    let home: String

    init(
        server: ProxyServer, runtime: ProxyRuntime, service: InspectorService, metrics: MetricsServer?,
        tls: ProxyApp.TLSSetup?, home: String
    ) {
        (self.server, self.runtime, self.service, self.metrics, self.tls) = (server, runtime, service, metrics, tls)
        self.home = home
    }

    /// How the proxy is doing now, as a value: what a status line, an exit message or a supervisor reads (the
    /// server's own objects stay inside).
    public struct Status: Sendable {
        public var connections: Int
        public var requests: Int
        /// Exchanges or connections ended early, by reason, most first.
        public var closings: [(reason: String, count: Int)]
        /// Client connections a socket error ended, by the error's text, most first.
        public var socketErrors: [(error: String, count: Int)]
        /// Connections closed on an event their state could not take (a bug).
        public var unexpectedEvents: Int
    }

    public var status: Status {
        Status(
            connections: server.connections, requests: server.requests,
            closings: server.closingCounts.map { ($0.0.name, $0.1) }, socketErrors: server.clientSocketErrorCounts,
            unexpectedEvents: server.unexpectedEventCount)
    }

    /// Each listener's port (as configured, in order; a port 0 resolved).
    public var listenerPorts: [Int] { server.boundPorts }
    /// What the server noted for a person since the last call: TLS handshakes that failed and HTTP/2 connections
    /// refused, each as a sentence.
    public func takeNotes() -> [String] {
        server.takeTLSFailures().map { "\($0)" } + server.takeHTTP2Refusals().map { "HTTP/2: \($0)" }
    }

    /// The local service's port (the inspector, the onboarding pages).
    public var servicePort: Int { server.localServicePort }
    /// The metrics endpoint's port, when there is one.
    public var metricsPort: Int? { metrics?.port }
    /// The inspector's token (the local pages' and `/metrics`' bearer).
    public var token: String { service.token }

    /// The exchanges the inspector recorded after the one numbered `sequence` (0: all it holds), as a HAR file whose
    /// creator is `version` (values redacted as in the log), and the last one's number (`sequence` when none).
    public func har(after sequence: UInt64, version: String) -> (bytes: [UInt8], last: UInt64) {
        let exchanges = service.store.exchanges(after: sequence)
        return (service.views.harBytes(exchanges, version: version), exchanges.last?.sequence ?? sequence)
    }

    /// Reads the rules file again; an invalid file leaves the last good rules in force (and says so).
    public func reload(reason: String) { runtime.reload(reason: reason) }
    /// What `run --report` found so far (nil without it): cookie-line findings and lifecycle verdicts.
    public var findings: FindingsReport? { runtime.report?.snapshot }
    /// Exchanges cut short by either side since the start (a body that ended early; deadlines are closings).
    public var cutCount: Int { runtime.hooks.cutCount }
    /// The status line's summary: lines examined and changed, log records, the last reload.
    public var statusSummary: String { runtime.statusSummary }
    /// Reopens the log file (after a rotation).
    public func reopenLog() { runtime.reopenLog() }
    /// Once a second: the rules file looked at (reloaded when it changed), the exchanges a deadline closed logged.
    public func poll() {
        runtime.poll()
        logClosings()
    }

    /// The exchanges a deadline closed, and those cut short by either side, since the last look: on stderr and into
    /// the log, each (at most 100 of each between two looks, and how many more there were).
    private func logClosings() {
        let (notes, leftOut) = server.takeClosingNotes()
        for note in notes { runtime.report(note) }
        let cuts = runtime.hooks.takeCuts()
        for cut in cuts.notes { runtime.report(cut) }
        runtime.reportLeftOut(closings: leftOut, cuts: cuts.leftOut)
    }

    /// Stops taking connections, lets the exchanges in flight finish for up to `drain` seconds, logs the last
    /// closings, then flushes and closes the log.
    public func stop(drain: Double) {
        InspectorAddress.forget(directory: home)
        server.shutdown(deadline: drain)
        logClosings()
        runtime.finish()
        metrics?.stop()
    }
}
