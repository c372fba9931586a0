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

    /// What each shell offers for the words typed so far (the last one being completed), asked through the shell's
    /// own completion machinery: bash calls the function as `complete -F` would, fish answers `complete -C`, and zsh
    /// runs compsys (`compinit`) in a pseudo-terminal (zsh/zpty) with a Tab typed, every offered match recorded.
    static func offered(_ shell: String, _ words: [String]) throws -> [String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cp-\(shell)-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let line = (["cookie-proxy"] + words).joined(separator: " ")
        switch shell {
        case "bash":
            let file = folder + "/completion.bash"
            try Self.script("bash").write(toFile: file, atomically: true, encoding: .utf8)
            let quoted = (["cookie-proxy"] + words).map { "'\($0)'" }.joined(separator: " ")
            let result = try run(
                "/bin/bash",
                [
                    "-c",
                    "source \(file); COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count); _cookie_proxy; printf '%s\\n' \"${COMPREPLY[@]}\"",
                ])
            #expect(result.status == 0, "\(result.stderr)")
            return result.text.split(separator: "\n").map(String.init)
        case "fish":
            let file = folder + "/cookie-proxy.fish"
            try Self.script("fish").write(toFile: file, atomically: true, encoding: .utf8)
            let result = try run("/usr/bin/fish", ["-c", "source \(file); complete -C '\(line)'"])
            #expect(result.status == 0, "\(result.stderr)")
            return result.text.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
        default:
            try Self.script("zsh").write(toFile: folder + "/_cookie-proxy", atomically: true, encoding: .utf8)
            let driver = """
                zmodload zsh/zpty
                zpty z zsh -f -i
                zpty -w z "PROMPT=''; fpath=(\(folder) \\$fpath); autoload -U compinit; compinit -u -D"
                zpty -w z 'compadd () { builtin compadd -O __hits "$@"; print -l -- $__hits >> \(folder)/hits; builtin compadd "$@" }'
                zpty -w z "bindkey '^I' complete-word; print ready > \(folder)/ready"
                for i in {1..100}; do [[ -e \(folder)/ready ]] && break; sleep 0.1; done
                zpty -wn z $'\(line)\\t'
                for i in {1..100}; do [[ -e \(folder)/hits ]] && break; sleep 0.1; done
                sleep 0.5
                zpty -d z
                """
            try driver.write(toFile: folder + "/drive.zsh", atomically: true, encoding: .utf8)
            let result = try run("/usr/bin/zsh", ["-f", folder + "/drive.zsh"], timeout: 30)
            #expect(result.status == 0, "\(result.stderr)")
            let hits = (try? String(contentsOfFile: folder + "/hits", encoding: .utf8)) ?? ""
            return hits.split(separator: "\n").map(String.init)
        }
    }

    /// Subcommand actions and option values come from the one command table the help and the parser read, in
    /// every shell. (words typed, the last being completed; what is offered)
    @Test(
        arguments: ["bash", "zsh", "fish"],
        [
            (["ca", "i"], ["init", "install"]), (["completions", ""], ["bash", "fish", "man", "zsh"]),
            (["ui", ""], ["url"]), (["run", "--engine", "ch"], ["chromium"]),
            (["run", "--http2", "o"], ["off", "on"]),
            (["audit", "--format", "j"], ["json", "junit"]), (["run", "--fail-on", "r"], ["rejects"]),
            (["parse", "--browser", "w"], ["webkit"]), (["try", "--site", "cross-site-s"], ["cross-site-subresource"]),
            (["run", "--log-f"], ["--log-format"]),
        ] as [([String], [String])])
    func eachShellCompletesActionsAndOptionValues(_ shell: String, _ typed: ([String], [String])) throws {
        let offered = Set(try Self.offered(shell, typed.0))
        #expect(offered == Set(typed.1), "\(shell): \(typed.0.joined(separator: " "))")
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

    /// groff reads the manual page with every warning on and reports none; rendered, no line runs past the page's
    /// width (arguments are wrapped, not kept as long preformatted lines), and each usage line of a subcommand
    /// starts a synopsis of its own instead of running into the one before or the description.
    @Test func groffReadsTheManualPageWithoutAWarningOrARunOnLine() throws {
        let page = try Self.write(try Self.script("man"), "cookie-proxy.1")
        defer { try? FileManager.default.removeItem(atPath: page) }
        let result = try run("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-P-cbou", page])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        let lines = result.text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count > 300)
        for line in lines { #expect(line.count <= 80, "\(line)") }
        for command in ["try", "audit", "ca", "run"] {
            let usage = try Binary.run([command, "--help"]).stdout.split(
                separator: "\n", omittingEmptySubsequences: false
            ).drop {
                !$0.hasPrefix("USAGE:")
            }
            .prefix { !$0.isEmpty }
            #expect(!usage.isEmpty)
            for line in usage {
                // The synopsis' first words, as the page starts the line with them.
                let start = line.drop { $0 != "c" }.split(separator: " ").prefix(4).joined(separator: " ")
                #expect(lines.contains { $0.hasPrefix("       " + start) }, "\(command): \(start)")
            }
        }
        #expect(lines.contains { $0.hasPrefix("       VALUE  A Set-Cookie value") })
        #expect(lines.contains { $0.hasPrefix("       uninstall") })
    }
}
