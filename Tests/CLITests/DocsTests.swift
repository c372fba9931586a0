import Foundation
import TestSupport
import Testing

/// Documentation that cannot drift from the binary: every command in a fenced block marked `sh runnable` (README.md,
/// docs/, rules/README.md) runs as written, from the repository's folder, with `cookie-proxy` the built binary.
/// (The log's record keys are held to rules/README.md's table by LogEndToEndTests.)
@Suite struct DocsTests {
    static let documents: [String] = {
        let root = Binary.repositoryRoot
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: root + "/docs")) ?? []
        return ["README.md", "rules/README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }()

    /// Each command line of the `sh runnable` blocks, with the document it is in.
    static func runnableCommands() -> [(document: String, command: String)] {
        var found: [(String, String)] = []
        for document in documents {
            guard let text = try? String(contentsOfFile: Binary.repositoryRoot + "/" + document, encoding: .utf8)
            else { continue }
            var inBlock = false
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("```") {
                    inBlock = !inBlock && line.dropFirst(3).split(separator: " ").contains("runnable")
                    continue
                }
                let command = line.trimmingCharacters(in: .whitespaces)
                if inBlock && !command.isEmpty && !command.hasPrefix("#") { found.append((document, command)) }
            }
        }
        return found
    }

    /// Every rules example in the documents (a fenced block that starts with `rule` or a comment and holds a `rule`)
    /// is valid, and none adds `secure` where plain http reaches it: a browser rejects a Secure cookie set over
    /// http, so an example that adds it needs `scheme https` (as the presets it mirrors have).
    @Test func everyRulesExampleIsValidAndAddsSecureOnlyOnHTTPS() throws {
        var examples = 0
        for document in Self.documents {
            let text = try String(contentsOfFile: Binary.repositoryRoot + "/" + document, encoding: .utf8)
            var block: [Substring]? = nil
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("```") {
                    if let lines = block, lines.contains(where: { $0.hasPrefix("rule \"") }) {
                        examples += 1
                        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                            "cp-doc-\(UUID().uuidString).rules"
                        ).path
                        try (lines.joined(separator: "\n") + "\n").write(
                            toFile: file, atomically: true, encoding: .utf8)
                        defer { try? FileManager.default.removeItem(atPath: file) }
                        let check = try Binary.run(["check", file])
                        #expect(check.status == 0, "\(document): \(check.stdout)\(check.stderr)")
                        for rule in ("\n" + check.stdout).components(separatedBy: "\n\(file):").dropFirst()
                        where rule.contains("turn Secure on") {
                            #expect(rule.contains("the request is https"), "\(document): \(rule)")
                        }
                    }
                    block = block == nil && line == "```" ? [] : nil
                    continue
                }
                block?.append(line)
            }
        }
        #expect(examples >= 3)
    }

    @Test func theReadmeHasRunnableCommands() {
        #expect(Self.runnableCommands().filter { $0.document == "README.md" }.count >= 5)
    }

    /// Run by bash as written (bash strips the comments), exit 0 with output; a `--format json` command prints JSON
    /// on every line.
    @Test(arguments: runnableCommands().map { "\($0.document): \($0.command)" })
    func aRunnableCommandRunsAsDocumented(_ entry: String) throws {
        let command = String(entry.split(separator: ": ", maxSplits: 1)[1])
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cp-docs-\(UUID().uuidString.prefix(8))"
        )
        .path
        defer { try? FileManager.default.removeItem(atPath: home) }
        let binaryFolder = URL(fileURLWithPath: Binary.path).deletingLastPathComponent().path
        let path = binaryFolder + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try run(
            "/bin/bash", ["-c", "cd '\(Binary.repositoryRoot)' && \(command)"],
            environment: ["PATH": path, "COOKIE_PROXY_HOME": home], timeout: 120)
        #expect(result.status == 0, "\(entry)\n\(result.text)\n\(result.stderr)")
        #expect(!result.text.isEmpty, "\(entry)")
        if command.contains("--format json") {
            for line in result.text.split(separator: "\n") {
                #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "\(entry): \(line)")
            }
        }
    }
}
