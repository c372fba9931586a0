import BuildVersion
import Foundation
import LogWriter
import ProxyServer

/// The proxy's counters in the Prometheus text exposition format (version 0.0.4): names `cookie_proxy_…`, counters
/// ending in `_total`, base units, and bounded label sets (no host, client or cookie name is a label). Read from the
/// counters the server and the cookie stage keep anyway, when scraped: serving metrics costs the traffic nothing.
struct Metrics: Sendable {
    var requests: Int
    var openConnections: Int
    var interceptedConnections: Int
    var setCookieLinesExamined: Int
    var setCookieLinesChanged: Int
    var requestCookiesChanged: Int
    /// Responses forwarded from upstreams by protocol, mode and status class (nil: not counted).
    var responses: [(protocol: String, mode: ResponseCounts.Mode, class: String, count: Int)]?
    var closings: [(ProxyServer.Closing, Int)]
    /// Nil without a log.
    var logRecords: (written: Int, dropped: Int, lost: Int)?
    /// Nil without an access log.
    var accessLogLines: (written: Int, lost: Int)?
    var transformations: [(rule: String, action: String, count: Int)]
    package var findings: [(code: String, severity: String, count: Int)]
    /// Nil without per-response counting.
    var upstreamResponse: (cumulative: [Int], sum: Double, count: Int)?
    var requestDuration: (cumulative: [Int], sum: Double, count: Int)?
    var verdicts: [(verdict: String, reason: String, count: Int)]
    var startTime: Double

    /// The process's counters now: the server's, and the metrics observer's.
    init(server: ProxyServer, metrics: MetricsObserver, log: LogSink?, accessLog: LogSink?, startTime: Double) {
        requests = server.requests
        openConnections = server.connections
        interceptedConnections = server.intercepted
        setCookieLinesExamined = metrics.linesSeen.load()
        setCookieLinesChanged = metrics.linesChanged.load()
        requestCookiesChanged = metrics.requestCookiesChanged.load()
        responses = metrics.responses.samples
        let counted = Dictionary(uniqueKeysWithValues: server.closingCounts.map { ($0.0.rawValue, $0.1) })
        closings = ProxyServer.Closing.allCases.map { ($0, counted[$0.rawValue] ?? 0) }
        logRecords = log.map { ($0.writtenCount, $0.droppedCount, $0.failure?.records ?? 0) }
        accessLogLines = accessLog.map { ($0.writtenCount, $0.droppedCount + ($0.failure?.records ?? 0)) }
        transformations = metrics.cookies.transformationSamples
        findings = metrics.cookies.findingSamples
        upstreamResponse = metrics.responses.upstreamResponse.snapshot
        requestDuration = metrics.responses.requestDuration.snapshot
        verdicts = metrics.lifecycle ? metrics.cookies.verdictSamples : []
        self.startTime = startTime
    }

    /// A closing's label value: its case name in snake case (`header_timeout`).
    static func label(_ closing: ProxyServer.Closing) -> String {
        String(describing: closing).reduce(into: "") { out, c in
            if c.isUppercase { out += "_" + c.lowercased() } else { out.append(c) }
        }
    }

    /// A label value as the exposition format writes it: backslash, double quote and line feed escaped.
    static func escaped(_ value: String) -> String {
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// The exposition: `# HELP` and `# TYPE` before each family, one sample per line, a line end after the last.
    var text: String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for sample in samples { out += "\(name)\(sample.labels) \(sample.value)\n" }
        }
        // Prometheus's `*_build_info` convention (as prometheus_build_info): the build as labels on a constant 1.
        family(
            "cookie_proxy_build_info", "gauge",
            "The build of cookie-proxy that serves these metrics: its release and commit.",
            [("{version=\"\(Self.escaped(cookieProxyVersion))\",commit=\"\(Self.escaped(cookieProxyCommit))\"}", "1")])
        family(
            "cookie_proxy_requests_total", "counter",
            "Requests read from clients (HTTP/1.1 requests and HTTP/2 streams).", [("", "\(requests)")])
        if let responses {
            family(
                "cookie_proxy_upstream_responses_total", "counter",
                "Responses forwarded from upstreams, by the client's protocol, the proxy's mode and the status class.",
                responses.map {
                    ("{protocol=\"\($0.protocol)\",mode=\"\($0.mode.rawValue)\",code=\"\($0.class)\"}", "\($0.count)")
                })
        }
        func histogram(_ name: String, _ help: String, _ h: (cumulative: [Int], sum: Double, count: Int)) {
            let bounds = ResponseCounts.bounds.map { String($0) } + ["+Inf"]
            out += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
            for (bound, n) in zip(bounds, h.cumulative) { out += "\(name)_bucket{le=\"\(bound)\"} \(n)\n" }
            out += "\(name)_sum \(String(format: "%.6f", h.sum))\n"
            out += "\(name)_count \(h.count)\n"
        }
        if let upstreamResponse {
            histogram(
                "cookie_proxy_upstream_response_seconds",
                "Time from a request's head read (and sent upstream) to its final response's head.", upstreamResponse)
        }
        if let requestDuration {
            histogram(
                "cookie_proxy_request_duration_seconds",
                "Time from a request's head read to the last byte of its response relayed to the client.",
                requestDuration)
        }
        family(
            "cookie_proxy_open_connections", "gauge", "Client connections open now.",
            [("", "\(openConnections)")])
        family(
            "cookie_proxy_intercepted_connections_total", "counter",
            "CONNECT tunnels whose TLS the proxy terminated (https interception).",
            [("", "\(interceptedConnections)")])
        family(
            "cookie_proxy_set_cookie_lines_examined_total", "counter",
            "Set-Cookie lines the rules, the log or the lifecycle read.", [("", "\(setCookieLinesExamined)")])
        family(
            "cookie_proxy_set_cookie_lines_changed_total", "counter",
            "Set-Cookie lines a rule rewrote or dropped.", [("", "\(setCookieLinesChanged)")])
        family(
            "cookie_proxy_request_cookies_changed_total", "counter",
            "Cookies of requests' Cookie headers a request-cookie rule removed, set, added or renamed.",
            [("", "\(requestCookiesChanged)")])
        family(
            "cookie_proxy_cookie_transformations_total", "counter",
            "Set-Cookie lines the rules rewrote or dropped, by rule (a line counts for each rule whose action rewrote or dropped it; a rule that only logs counts for neither).",
            transformations.map { ("{rule=\"\(Self.escaped($0.rule))\",action=\"\($0.action)\"}", "\($0.count)") })
        family(
            "cookie_proxy_lint_findings_total", "counter",
            "Findings of the Set-Cookie lines clients were sent, by lint code and severity (rejects: browsers do not keep the cookie; warning).",
            findings.map { ("{code=\"\(Self.escaped($0.code))\",severity=\"\($0.severity)\"}", "\($0.count)") })
        if !verdicts.isEmpty {
            family(
                "cookie_proxy_lifecycle_verdicts_total", "counter",
                "Cookies judged against each client's replayed jar, by verdict and reason (docs/lifecycle.md).",
                verdicts.map { ("{verdict=\"\($0.verdict)\",reason=\"\($0.reason)\"}", "\($0.count)") })
        }
        family(
            "cookie_proxy_closings_total", "counter",
            "Exchanges or connections the proxy ended early, by reason (a deadline, or a client gone mid-request).",
            closings.map { ("{reason=\"\(Self.label($0.0))\"}", "\($0.1)") })
        if let logRecords {
            family(
                "cookie_proxy_log_records_total", "counter",
                "Records of the transformation log, by what became of them (lost: the file could not be written).",
                [
                    ("{result=\"written\"}", "\(logRecords.written)"),
                    ("{result=\"dropped\"}", "\(logRecords.dropped)"),
                    ("{result=\"lost\"}", "\(logRecords.lost)"),
                ])
        }
        if let accessLogLines {
            family(
                "cookie_proxy_access_log_lines_total", "counter",
                "Lines of the access log, by what became of them (lost: the file could not be written).",
                [
                    ("{result=\"written\"}", "\(accessLogLines.written)"),
                    ("{result=\"lost\"}", "\(accessLogLines.lost)"),
                ])
        }
        family(
            "cookie_proxy_start_time_seconds", "gauge", "When the proxy started, in seconds since the epoch.",
            [("", String(format: "%.3f", startTime))])
        return out
    }
}
