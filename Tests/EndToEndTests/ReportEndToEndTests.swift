import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `run --report` and `--fail-on` through the binary, read back by the tools CI uses: curl traffic with a cookie
/// browsers reject and a cookie sent that was never set (or clean traffic), the proxy stopped with SIGTERM, the
/// JUnit file read by junitparser, the SARIF file by sarif-tools, and the exit status as `--fail-on` asks.
@Suite(.serialized) struct ReportEndToEndTests {
    static let python = Paths.root + "/.build/test-python/bin/python"

    /// (problems in the traffic, --fail-on values, exit status)
    @Test(arguments: [
        (true, [String](), Int32(0)), (true, ["rejects"], 1), (true, ["warnings"], 1), (true, ["verdicts"], 1),
        (false, ["rejects", "warnings", "verdicts"], 0),
    ])
    func aRunsReportsAreReadByCIToolsAndFailOnSetsTheExitStatus(
        _ problems: Bool, _ failOn: [String], _ status: Int32
    ) throws {
        let dir = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let upstream = try Upstream()
        let proxy = try Proxy(
            [
                "--log", "none", "--ui", "off", "--resolve", "app.site.test:127.0.0.1", "--report",
                "junit:\(dir)/report.xml", "--report", "sarif:\(dir)/report.sarif",
            ] + failOn.flatMap { ["--fail-on", $0] }, environment: ["COOKIE_PROXY_HOME": dir])
        let origin = "http://app.site.test:\(upstream.port)"
        let line = problems ? "bad=1; SameSite=None" : "good=1; Path=/"
        _ = try curl([
            "-s", "-o", "/dev/null", "-x", proxy.url, origin + "/setcookie?c=" + InterceptionEndToEndTests.enc(line),
        ])
        _ = try curl(["-s", "-o", "/dev/null", "-x", proxy.url, "-b", problems ? "ghost=1" : "good=1", origin + "/"])
        // SIGUSR1 writes the reports while the proxy runs.
        proxy.process.signal(SIGUSR1)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: dir + "/report.sarif") && Date() < deadline { usleep(50_000) }
        #expect(FileManager.default.fileExists(atPath: dir + "/report.xml"))
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == status, "\(proxy.process.stderr)")

        let cases = try junitCases(dir + "/report.xml")
        let names = cases.map { "\($0[1])" }
        if problems {
            #expect(names.contains("bad: samesite-none-insecure"), "\(cases)")
            #expect(names.contains("ghost: sent-not-set/not-seen"), "\(cases)")
            let failed = cases.filter { !(($0[2] as? [Any])?.isEmpty ?? true) }.map { "\($0[1])" }
            #expect(failed.contains("bad: samesite-none-insecure") && failed.contains("ghost: sent-not-set/not-seen"))
            #expect(cases.allSatisfy { "\($0[0])" == "app.site.test" })
        } else {
            #expect(cases.isEmpty, "\(cases)")
        }

        let sarif = try run(
            Self.python,
            [
                "-c",
                """
                import json, sys
                from sarif import loader
                records = loader.load_sarif_file(sys.argv[1]).get_records()
                counts = {}
                for r in records:
                    counts[r["Severity"]] = counts.get(r["Severity"], 0) + 1
                print(json.dumps({"counts": counts, "rules": sorted(r["Code"] for r in records)}))
                """, dir + "/report.sarif",
            ])
        let read = try #require(
            try JSONSerialization.jsonObject(with: sarif.stdout) as? [String: Any], "\(sarif.stderr)")
        let counts = read["counts"] as? [String: Int] ?? [:]
        let rules = read["rules"] as? [String] ?? []
        if problems {
            #expect(rules.contains("samesite-none-insecure") && rules.contains("sent-not-set/not-seen"), "\(read)")
            #expect((counts["error"] ?? 0) >= 1 && (counts["warning"] ?? 0) >= 1, "\(read)")
        } else {
            #expect(rules.isEmpty && counts.values.reduce(0, +) == 0, "\(read)")
        }
    }

    /// A `--report` the proxy could not write is refused before it starts; so is an unknown format or condition.
    @Test(arguments: [
        (["--report", "xml:/tmp/r.xml"], "must be junit:FILE or sarif:FILE"),
        (["--report", "junit:/nonexistent-dir/r.xml"], "is not writable"),
        (["--fail-on", "errors"], "--fail-on must be rejects, warnings or verdicts"),
    ])
    func badReportOptionsAreRefused(_ options: [String], _ message: String) throws {
        let result = try run(Paths.binary, ["run", "--listen", "127.0.0.1:0"] + options)
        #expect(result.status != 0 && result.stderr.contains(message), "\(result.stderr)")
    }
}
