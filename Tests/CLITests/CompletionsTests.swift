import Foundation
import TestSupport
import Testing

/// `cookie-proxy completions`: each shell's script is read by that shell (bash, zsh and fish, installed by
/// scripts/setup.sh --tests), asked for completions where the shell can be asked, and holds every option of every
/// subcommand as `--help` lists it; the manual page is read by groff without a warning.
@Suite struct CompletionsTests {
    /// Every subcommand's options as its `--help` lists them (the long spellings), read from the binary.
    static func optionsByCommand() throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for command in ["run", "check", "try", "ca", "audit", "parse", "conformance", "mcp", "ui", "completions"] {
            let help = try Binary.run([command, "--help"]).stdout
            let options = help.split(separator: "\n", omittingEmptySubsequences: false).drop { $0 != "OPTIONS:" }
                .dropFirst()
                .prefix { !$0.isEmpty }
                .compactMap { line in line.split(separator: " ").first { $0.hasPrefix("--") } }
                .map { String($0.split(separator: ",")[0]) }
            result[command] = options
        }
        return result
    }

    static func script(_ kind: String) throws -> String {
        let result = try Binary.run(["completions", kind])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout
    }

    static func write(_ text: String, _ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cp-\(getpid())-\(name)").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(arguments: ["bash", "zsh", "fish", "man"])
    func everyOptionOfEveryCommandIsInIt(_ kind: String) throws {
        let text = try Self.script(kind)
        for (command, options) in try Self.optionsByCommand() {
            #expect(!options.isEmpty || command == "completions", "\(command)")
            for option in options {
                let spelled =
                    kind == "fish"
                    ? "-l \(option.dropFirst(2))"
                    : kind == "man" ? option.replacingOccurrences(of: "-", with: "\\-") : option
                #expect(text.contains(spelled), "\(kind): \(command) \(option)")
            }
        }
    }

    /// bash: the script is sourced and `_cookie_proxy` asked as bash asks it, for a subcommand, an option of `run`,
    /// and a file after an option that takes a path (`FOLDER/`: a folder of the case's own holding `share.rules`).
    @Test(arguments: [
        (["cookie-proxy", "con"], "conformance"),
        (["cookie-proxy", "run", "--log-f"], "--log-format"),
        (["cookie-proxy", "run", "--rules", "FOLDER/sha"], "FOLDER/share.rules"),
    ])
    func bashCompletesSubcommandsOptionsAndFiles(_ words: [String], _ expected: String) throws {
        // Files of the case's own: the cases run at once.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cp-bash-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "".write(toFile: folder + "/share.rules", atomically: true, encoding: .utf8)
        let file = folder + "/completion.bash"
        try Self.script("bash").write(toFile: file, atomically: true, encoding: .utf8)
        let expected = expected.replacingOccurrences(of: "FOLDER", with: folder)
        let quoted = words.map { "'\($0.replacingOccurrences(of: "FOLDER", with: folder))'" }.joined(separator: " ")
        let result = try run(
            "/bin/bash",
            [
                "-c",
                "source \(file); COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _cookie_proxy; printf '%s\\n' \"${COMPREPLY[@]}\"",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.split(separator: "\n").contains { $0 == expected }, "\(result.text)")
    }

    /// zsh reads the script without an error (`zsh -n`), and fish both reads it and completes from it.
    @Test func zshAndFishReadTheirScripts() throws {
        let zsh = try Self.write(try Self.script("zsh"), "_cookie-proxy")
        let fish = try Self.write(try Self.script("fish"), "cookie-proxy.fish")
        defer {
            try? FileManager.default.removeItem(atPath: zsh)
            try? FileManager.default.removeItem(atPath: fish)
        }
        let checked = try run("/usr/bin/zsh", ["-n", zsh])
        #expect(checked.status == 0, "\(checked.stderr)")
        let asked = try run("/usr/bin/fish", ["-c", "source \(fish); complete -C 'cookie-proxy run --log-f'"])
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.text.hasPrefix("--log-format\t"), "\(asked.text)")
    }

    /// groff reads the manual page with every warning on and reports none.
    @Test func groffReadsTheManualPageWithoutAWarning() throws {
        let page = try Self.write(try Self.script("man"), "cookie-proxy.1")
        defer { try? FileManager.default.removeItem(atPath: page) }
        let result = try run("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-z", page])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }
}
