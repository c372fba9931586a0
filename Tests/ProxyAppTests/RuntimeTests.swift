import CookieKit
import CookieRules
import Foundation
import ProxyApp
import ProxyCore
import Testing

/// The runtime around the server without the binary: rules reloaded from their file, an invalid edit reported with
/// the last good rules kept in force.
@Suite struct RuntimeTests {
    @Test func anInvalidEditKeepsTheLastGoodRulesAndAValidOneReplacesThem() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-runtime-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.rules"
        try "rule \"one\" {\n    secure\n}\n".write(toFile: path, atomically: true, encoding: .utf8)
        let hooks = RulesHooks(
            engine: RuleEngine(try RulesFiles.load(path)), dryRun: false, intercept: HostPatternList())
        let runtime = ProxyRuntime(hooks: hooks, rulesPath: path, sink: nil)
        #expect(hooks.current.ruleSet.rules.map(\.name) == ["one"])

        try "rule \"two\" {\n    secure on off\n}\n".write(toFile: path, atomically: true, encoding: .utf8)
        runtime.reload(reason: "test")
        #expect(hooks.current.ruleSet.rules.map(\.name) == ["one"])
        guard case .object(let failed) = runtime.reloadStatus.withLock({ $0 }) else {
            Issue.record("no reload status")
            return
        }
        #expect(failed.first { $0.0 == "ok" }?.1 == .bool(false))

        try "rule \"two\" {\n    httponly\n}\nrule \"three\" {\n    drop\n}\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        runtime.reload(reason: "test")
        #expect(hooks.current.ruleSet.rules.map(\.name) == ["two", "three"])
    }
}
