/// A subcommand: its declaration and what runs it.
public struct Subcommand {
    public let spec: CommandSpec
    public let run: (ParsedArguments) throws(UsageError) -> Int32

    public init(_ spec: CommandSpec, run: @escaping (ParsedArguments) throws(UsageError) -> Int32) {
        (self.spec, self.run) = (spec, run)
    }
}

/// A program of subcommands (swift-argument-parser's `subcommands`): `--version`, `--help` (the root's, listing every
/// subcommand with its abstract), an unknown subcommand with the nearest spelling, each subcommand's `--help`, and
/// a usage error printed with where to look; the exit status is the subcommand's.
public struct Program {
    public let name: String
    public let version: String
    public let commands: [Subcommand]
    /// The root's declaration: its abstract, and the subcommands listed from their own abstracts (one table).
    public let root: CommandSpec

    public init(name: String, version: String, abstract: String, commands: [Subcommand]) {
        (self.name, self.version, self.commands) = (name, version, commands)
        let width = (commands.map(\.spec.name.count).max() ?? 0) + 4
        let list = commands.map {
            "  " + $0.spec.name + String(repeating: " ", count: width - $0.spec.name.count) + $0.spec.abstract
        }
        root = CommandSpec(
            name: "", abstract: abstract, usage: "\(name) <subcommand> [options]", options: [],
            arguments: list.joined(separator: "\n")
                + "\n\nRun '\(name) <subcommand> --help' for a subcommand's options.")
    }

    /// Runs `argv` (without the program's own name); `prepare` sees the parsed arguments first (options every
    /// subcommand takes) and may end the run with a status.
    public func main(
        _ argv: [String], out: (String) -> Void, err: (String) -> Void,
        prepare: (ParsedArguments) -> Int32? = { _ in nil }
    ) -> Int32 {
        if argv.first == "--version" {
            out("\(name) \(version)")
            return 0
        }
        guard let first = argv.first, first != "--help", first != "-h", first != "help" else {
            out(root.helpText)
            return argv.isEmpty ? 2 : 0
        }
        guard let command = commands.first(where: { $0.spec.name == first }) else {
            let suggestion = CommandSpec.nearest(first, commands.map(\.spec.name))
            err(
                "error: unknown subcommand '\(first)'" + (suggestion.map { "; did you mean '\($0)'?" } ?? "")
                    + "\nRun '\(name) --help' for the list of subcommands.")
            return 2
        }
        do {
            let args = try command.spec.parse(Array(argv.dropFirst()))
            if args.helpRequested {
                out(command.spec.helpText)
                return 0
            }
            if args.versionRequested {
                out("\(name) \(version)")
                return 0
            }
            if let status = prepare(args) { return status }
            return try command.run(args)
        } catch {
            err(
                "error: \(error.message)"
                    + (error.showsHelpHint ? "\nRun '\(name) \(error.command) --help' for usage." : ""))
            return error.exitStatus
        }
    }
}
