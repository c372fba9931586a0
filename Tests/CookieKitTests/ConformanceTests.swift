import CookieConformance
import CookieKit
import Foundation
import Testing

/// The external corpora in conformance/ (http-state and web-platform-tests), run against the jar.
/// Counted cases must all pass; informative ones are run and reported, not asserted.
@Suite struct ConformanceTests {
    static let folder: String = {
        // Tests/CookieKitTests/ConformanceTests.swift → repository root → conformance/
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent("conformance").path
    }()

    @Test(arguments: [("http-state.json", 218), ("wpt.json", 789)])
    func everyCountedCasePasses(file: String, counted: Int) throws {
        let suite = try ConformanceSuite(contentsOf: "\(Self.folder)/\(file)")
        let results = suite.run()
        let countedResults = results.filter { !$0.informative }
        #expect(countedResults.count == counted)
        for result in countedResults where !result.passed {
            Issue.record(
                "\(result.id) (\(result.description)): expected \(result.expected!.debugDescription), got \(result.got!.debugDescription)"
            )
        }
        let informative = results.filter(\.informative)
        print(
            "\(file): \(countedResults.filter(\.passed).count)/\(countedResults.count) counted cases pass; informative \(informative.filter(\.passed).count)/\(informative.count)"
        )
    }

    /// The report `conformance` prints: every counted case passes, the informative ones are said to be disputed
    /// and not counted (never shown as a score), and only without `quiet` listed one by one.
    @Test(arguments: [true, false])
    func theReportCountsCountedCasesAndSaysInformativeOnesAreDisputed(quiet: Bool) throws {
        let suites = try ["http-state.json", "wpt.json"].map {
            try ConformanceSuite(contentsOf: "\(Self.folder)/\($0)")
        }
        let report = ConformanceReport(suites, quiet: quiet)
        #expect(report.passed == 1007 && report.failed == 0 && report.notCounted == 8)
        #expect(report.text.text.hasSuffix("1007 passed, 0 failed (1015 cases, 8 informative not counted)\n"))
        #expect(report.text.text.contains("wpt: 789/789 counted cases pass; 4 informative (disputed expectations"))
        #expect(report.text.text.contains("  informative wpt/") == !quiet, "\(report.text)")
    }
}
