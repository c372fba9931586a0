import CookieKit
import CookieLifecycle
import Testing

@testable import CookieReports

/// What a run's report holds and when it fails the run.
@Suite struct FindingsReportTests {
    static func report(findings: [String], verdicts: [CookieVerdict.Kind]) -> FindingsReport {
        var report = FindingsReport()
        for line in findings {
            let cookie = SetCookie(line)
            report.add(
                findings: CookieLint.findings(for: cookie, from: RequestURL("http://app.test/")!, now: 1_800_000_000),
                cookie: cookie.name, host: "app.test", url: "http://app.test/", time: 0, rules: [])
        }
        report.add(
            verdicts: verdicts.map { CookieVerdict(kind: $0, name: "c", reason: .init(.unexplained, "why")) },
            host: "app.test", url: "http://app.test/", time: 0)
        return report
    }

    /// (Set-Cookie lines, verdicts, --fail-on, fails)
    @Test(
        arguments: [
            ([String](), [CookieVerdict.Kind](), Set<FindingsReport.FailOn>([.rejects, .warnings, .verdicts]), false),
            (["a=1; SameSite=None"], [], [.rejects], true),
            (["a=1; SameSite=None"], [], [.warnings], true),
            (["a=1; SameSite=None"], [], [.verdicts], false),
            (["a=1; Domain=other.test"], [], [.rejects], true),
            ([], [.expectedNotSent], [.verdicts], true),
            ([], [.expectedNotSent], [.rejects, .warnings], false),
            ([], [.sentAsExpected], [.verdicts], false),
            (["a=1; Path=/"], [.sentAsExpected], [.rejects, .warnings, .verdicts], false),
        ] as [([String], [CookieVerdict.Kind], Set<FindingsReport.FailOn>, Bool)])
    func failOnMeetsTheConditionsAsked(
        _ lines: [String], _ verdicts: [CookieVerdict.Kind], _ failOn: Set<FindingsReport.FailOn>, _ fails: Bool
    ) {
        #expect(Self.report(findings: lines, verdicts: verdicts).fails(failOn) == fails)
    }

    /// The same finding on the same cookie of a host is one entry, counted; the rules that matched accumulate.
    @Test func repeatsAreCountedIntoOneEntry() {
        var report = FindingsReport()
        let key = FindingsReport.Key(host: "app.test", cookie: "a", code: "x")
        report.add(key, level: .warning, url: "http://app.test/1", time: 1, message: "m", rules: ["r1"])
        report.add(key, level: .warning, url: "http://app.test/2", time: 2, message: "m", rules: ["r2", "r1"])
        #expect(report.entries.count == 1)
        #expect(report.entries[0].count == 2 && report.entries[0].firstURL == "http://app.test/1")
        #expect(report.entries[0].rules == ["r1", "r2"])
    }

    /// Past the bound, groups are counted, not kept; the reports say how many.
    @Test func aReportIsBounded() {
        var report = FindingsReport()
        for i in 0..<(FindingsReport.maximumEntries + 5) {
            report.add(.init(host: "h", cookie: "c\(i)", code: "x"), level: .warning, url: "u", time: 0, message: "m")
        }
        #expect(report.entries.count == FindingsReport.maximumEntries && report.unlisted == 5)
        #expect(report.junit(name: "t").contains("5 more occurrences"))
        #expect(report.sarif(toolVersion: "0").contains("\"unlisted\":5"))
    }
}
