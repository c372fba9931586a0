import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `run --metrics`: the Prometheus text format through the real binary, read by Prometheus' own tools — promtool
/// checks the exposition, and a real Prometheus server (Debian's) scrapes the proxy with the installation's token —
/// and the counters agree with what the traffic and the log show.
@Suite(.serialized) struct MetricsEndToEndTests {
    static func value(_ exposition: String, _ sample: String) -> Int? {
        exposition.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.flatMap {
            Int($0.split(separator: " ")[1])
        }
    }

    static func number(_ exposition: String, _ sample: String) -> Double? {
        exposition.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.flatMap {
            Double($0.split(separator: " ")[1])
        }
    }

    @Test func prometheusScrapesCountersThatAgreeWithTheTrafficAndTheLog() throws {
        let dir = try LogEndToEndTests.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let upstream = try Recorder()
        let metricsPort = try HTTP2EndToEndTests.freePort()
        let proxy = try Proxy(
            [
                "--rules", dir + "/h.rules", "--log", dir + "/log.jsonl", "--ui", "off", "--metrics",
                "127.0.0.1:\(metricsPort)",
            ], environment: ["COOKIE_PROXY_HOME": dir + "/home"])
        #expect(
            proxy.process.stderr.contains("  metrics:      http://127.0.0.1:\(metricsPort)/metrics"),
            "\(proxy.process.stderr)")
        for i in 0..<5 {
            // The last request sends a cookie no response set: the lifecycle judges it (sent-not-set, not-seen).
            let cookie = i == 4 ? ["-b", "x=1"] : []
            let result = try curl(["-x", proxy.url] + cookie + ["http://127.0.0.1:\(upstream.port)/cookies/same"])
            #expect(result.text == "ok")
        }
        let token = try String(contentsOfFile: dir + "/home/inspector-token", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        let url = "http://127.0.0.1:\(metricsPort)/metrics"
        #expect(try curl(["-o", "/dev/null", "-w", "%{http_code}", url]).text == "401")
        let scraped = try curl(["-H", "Authorization: Bearer \(token)", url]).text
        #expect(Self.value(scraped, "cookie_proxy_requests_total") == 5, "\(scraped)")
        // The build: its release and the commit it was made from (this checkout's HEAD).
        let head = try run("/usr/bin/git", ["-C", Paths.root, "rev-parse", "HEAD"]).text.trimmingCharacters(
            in: .newlines)
        #expect(Self.value(scraped, "cookie_proxy_build_info{version=\"0.8.0\",commit=\"\(head)\"}") == 1, "\(scraped)")
        #expect(Self.value(scraped, "cookie_proxy_set_cookie_lines_changed_total") == 15, "\(scraped)")
        #expect(Self.value(scraped, "cookie_proxy_set_cookie_lines_examined_total") == 15)
        #expect(Self.value(scraped, "cookie_proxy_closings_total{reason=\"header_timeout\"}") == 0)
        // Every response's upstream time observed once, in buckets that add up.
        #expect(Self.value(scraped, "cookie_proxy_upstream_response_seconds_count") == 5, "\(scraped)")
        #expect(Self.value(scraped, "cookie_proxy_upstream_response_seconds_bucket{le=\"+Inf\"}") == 5)
        #expect(Self.value(scraped, "cookie_proxy_upstream_response_seconds_bucket{le=\"10.0\"}") == 5)
        // And each exchange's whole time, once it ended; never shorter than its upstream's time.
        #expect(Self.value(scraped, "cookie_proxy_request_duration_seconds_count") == 5, "\(scraped)")
        #expect(Self.value(scraped, "cookie_proxy_request_duration_seconds_bucket{le=\"+Inf\"}") == 5)
        let sums = (
            Self.number(scraped, "cookie_proxy_request_duration_seconds_sum"),
            Self.number(scraped, "cookie_proxy_upstream_response_seconds_sum")
        )
        #expect(sums.0 != nil && sums.1 != nil && sums.0! >= sums.1!, "\(sums)")
        // Each changed line counts for the rule that changed it; the cookie sent and never set, once.
        #expect(
            Self.value(scraped, "cookie_proxy_cookie_transformations_total{rule=\"harden\",action=\"rewrite\"}") == 15,
            "\(scraped)")
        #expect(Self.value(scraped, "cookie_proxy_cookie_transformations_total{rule=\"harden\",action=\"drop\"}") == 0)
        #expect(
            Self.value(scraped, "cookie_proxy_lifecycle_verdicts_total{verdict=\"sent-not-set\",reason=\"not-seen\"}")
                == 1, "\(scraped)")
        #expect(
            Self.value(scraped, "cookie_proxy_lifecycle_verdicts_total{verdict=\"sent-as-expected\",reason=\"none\"}")
                == 0)
        #expect(
            Self.value(
                scraped, "cookie_proxy_upstream_responses_total{protocol=\"HTTP/1.1\",mode=\"forward\",code=\"2xx\"}")
                == 5, "\(scraped)")
        #expect(
            Self.value(
                scraped, "cookie_proxy_upstream_responses_total{protocol=\"HTTP/2\",mode=\"reverse\",code=\"5xx\"}")
                == 0)

        // promtool reads the exposition and finds nothing to say.
        let exposition = dir + "/metrics.txt"
        try scraped.write(toFile: exposition, atomically: true, encoding: .utf8)
        let checked = try run("/bin/sh", ["-c", "promtool check metrics < '\(exposition)'"])
        #expect(checked.status == 0 && checked.stderr.isEmpty, "\(checked.text) \(checked.stderr)")

        // A real Prometheus scrapes it with the token file as its credentials, once a second.
        let prometheusPort = try HTTP2EndToEndTests.freePort()
        try """
        global:
          scrape_interval: 1s
        scrape_configs:
          - job_name: cookie-proxy
            authorization:
              credentials_file: \(dir)/home/inspector-token
            static_configs:
              - targets: ["127.0.0.1:\(metricsPort)"]
        """.write(toFile: dir + "/prometheus.yml", atomically: true, encoding: .utf8)
        let prometheus = try TestProcess(
            Paths.which("prometheus"),
            [
                "--config.file=\(dir)/prometheus.yml", "--storage.tsdb.path=\(dir)/tsdb",
                "--web.listen-address=127.0.0.1:\(prometheusPort)",
            ])
        defer { prometheus.process.terminate() }
        func query(_ expression: String) throws -> String? {
            let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let answer = try curl(["http://127.0.0.1:\(prometheusPort)/api/v1/query?query=\(encoded)"]).text
            guard let object = try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any],
                let data = object["data"] as? [String: Any], let result = (data["result"] as? [[String: Any]])?.first,
                let value = result["value"] as? [Any]
            else { return nil }
            return value.last as? String
        }
        var up: String? = nil
        for _ in 0..<60 where up != "1" {
            usleep(500_000)
            up = try? query("up{job=\"cookie-proxy\"}")
        }
        #expect(up == "1", "the target is up: \(prometheus.stderr.suffix(2000))")
        // Queried while the proxy serves (a failed scrape marks its series stale): what Prometheus stored.
        let changed = try query("cookie_proxy_set_cookie_lines_changed_total")
        #expect(try query("cookie_proxy_requests_total") == "5")
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        // The counters agree with the records the log wrote: a transformation record per changed line, one
        // cookies-sent record for the request whose cookie was not as expected.
        let lines = try String(contentsOfFile: dir + "/log.jsonl", encoding: .utf8).split(separator: "\n")
        let records = lines.filter { !$0.contains("\"record\":\"cookies-sent\"") }.count
        #expect(records == 15)
        #expect(lines.count - records == 1)
        #expect(changed == "\(records)")
        // Every line was changed, so each line the clients got has a record: its findings, counted by code and
        // severity, are the metric's (informational ones are not counted).
        var logged: [String: Int] = [:]
        for line in lines where !line.contains("\"record\":\"cookies-sent\"") {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            for finding in try #require(record["findings"] as? [[String: Any]]) {
                let severity = try #require(finding["severity"] as? String)
                guard severity != "info" else { continue }
                logged["{code=\"\(finding["code"]!)\",severity=\"\(severity)\"}", default: 0] += 1
            }
        }
        #expect(!logged.isEmpty, "the test's lines have findings to count")
        let counted = scraped.split(separator: "\n").filter { $0.hasPrefix("cookie_proxy_lint_findings_total{") }
        #expect(counted.count == logged.count, "\(counted) \(logged)")
        for (labels, n) in logged {
            #expect(
                Self.value(scraped, "cookie_proxy_lint_findings_total" + labels) == n, "\(labels) \(logged) \(counted)")
        }
    }
}
