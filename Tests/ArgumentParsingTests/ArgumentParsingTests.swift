import ArgumentParsing
import Testing

/// The command-line parser without the executable: one declaration, read as the parser, `--help` and the errors
/// read it.
@Suite struct ArgumentParsingTests {
    static let format = OptionSpec(
        names: ["--format", "-f"], value: "format", help: "Output.", defaultValue: "text",
        choices: ["text", "json"])
    static let route = OptionSpec(names: ["--route"], value: "R", help: "A route.", repeatable: true)
    static let quiet = OptionSpec(names: ["--quiet", "-q"], value: nil, help: "Say less.")
    static let spec = CommandSpec(
        name: "t", abstract: "A test command.", usage: "cookie-proxy t [options] [ARG...]",
        options: [format, route, quiet],
        actions: ["go"], arguments: "  ARG  Anything.")

    /// (arguments, the format, routes, quiet, positionals; nil: refused with this message)
    @Test(arguments: [
        (["-f", "json", "go"], "json", [String](), false, ["go"], nil as String?),
        (["--format=json", "--route", "x", "--route", "y", "-q"], "json", ["x", "y"], true, [], nil),
        (["go", "--", "--quiet"], "text", [], false, ["go", "--quiet"], nil),
        (["--fromat", "json"], "", [], false, [], "unknown option '--fromat'; did you mean '--format'?"),
        (["--format"], "", [], false, [], "option '--format' needs a value <format>"),
        (["-f", "a", "-f", "b"], "", [], false, [], "option '-f' given more than once"),
        (["--quiet=yes"], "", [], false, [], "option '--quiet' takes no value"),
        (["-f", "xml"], "", [], false, [], "--format must be text or json, not 'xml'"),
        (["gp"], "", [], false, [], "unknown action 'gp' (did you mean 'go'?); the actions are: go"),
    ])
    func theDeclarationIsWhatIsParsed(
        _ arguments: [String], _ format: String, _ routes: [String], _ quiet: Bool, _ positionals: [String],
        _ refusal: String?
    ) {
        do throws(UsageError) {
            let parsed = try Self.spec.parse(arguments)
            let chosen = try parsed.choice(Self.format, command: "t")
            #expect(refusal == nil)
            #expect(chosen == format && parsed.all(Self.route) == routes && parsed.flag(Self.quiet) == quiet)
            #expect(parsed.positionals == positionals)
        } catch {
            #expect(error.message == refusal)
        }
    }

    /// `--help` lists every option with its default and repeatability, and the common ones.
    @Test func helpListsEveryOption() {
        let help = Self.spec.helpText
        for line in [
            "USAGE: cookie-proxy t [options] [ARG...]", "  --format, -f <format>", "(default: text)", "  --route <R>",
            "(repeatable)", "  --quiet, -q", "  -h, --help", "  --version",
        ] {
            #expect(help.contains(line), "\(line)")
        }
    }

    /// The completions offer the command's actions and an option's choices (each shell's script holds them).
    @Test func theCompletionsHoldActionsAndChoices() {
        let commands = [(name: "t", spec: Self.spec)]
        #expect(Completions.bash(commands).contains(#""t --format"|"t -f") words="text json""#))
        #expect(Completions.zsh(commands).contains("'1:action:(go)'"))
        #expect(Completions.fish(commands).contains("-x -a 'text json'"))
        #expect(Completions.man(commands, root: Self.spec, version: "9").contains(".SY \"cookie\\-proxy t\""))
    }
}

/// A program of subcommands: what each kind of command line gets, and its exit status. (arguments, status, what
/// stdout or stderr holds)
@Suite struct ProgramTests {
    static var program: Program {
        Program(
            name: "tool", version: "1.2", abstract: "A tool.",
            commands: [
                Subcommand(ArgumentParsingTests.spec) { args throws(UsageError) in
                    args.positionals == ["go", "fail"] ? 1 : 0
                }
            ])
    }

    @Test(
        arguments: [
            ([], 2, "  t    A test command."), (["--help"], 0, "USAGE: tool <subcommand> [options]"),
            (["--version"], 0, "tool 1.2"), (["t", "--version"], 0, "tool 1.2"),
            (["t", "--help"], 0, "OVERVIEW: A test command."),
            (["t"], 0, ""), (["t", "go", "fail"], 1, ""), (["x"], 2, "error: unknown subcommand 'x'"),
            (["t", "--nope"], 2, "error: unknown option '--nope'\nRun 'tool t --help' for usage."),
        ] as [([String], Int32, String)])
    func eachCommandLineGetsItsAnswerAndStatus(_ argv: [String], _ status: Int32, _ said: String) {
        var text = ""
        let got = Self.program.main(argv, out: { text += $0 }, err: { text += $0 })
        #expect(got == status)
        #expect(said.isEmpty ? text.isEmpty : text.contains(said), "\(text)")
    }
}
