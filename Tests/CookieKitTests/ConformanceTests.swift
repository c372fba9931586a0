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
}
