import ArgumentParsing
import ProxyApp
import CookieKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let rootSpec = CommandSpec(
    name: "",
    abstract: "A local HTTP/HTTPS proxy that rewrites Set-Cookie headers by declarative rules and logs every change.",
    usage: "cookie-proxy <subcommand> [options]",
    options: [],
    arguments: """
          run            Run the proxy in the foreground.
          check          Validate a rules file and say what each rule will do.
          try            Run Set-Cookie values through rules offline.
          ca             Create, locate, export or trust the local CA used to intercept https.
          audit          Fetch a URL, follow its redirects, check every cookie it sets.
          parse          Parse Set-Cookie values and show what a browser makes of them.
          conformance    Run cookie conformance corpora against the jar.
          mcp            Serve these tools to agents over the Model Context Protocol (stdio).
          ui             Print the inspector's URL with this installation's token.
          completions    Print shell completions (bash, zsh, fish) or the manual page (man).

        Run 'cookie-proxy <subcommand> --help' for a subcommand's options.
        """)

/// The subcommands, in the order the root's help lists them (completions and the manual page follow it).
let commandList: [(name: String, spec: CommandSpec)] = [
    ("run", RunCommand.spec), ("check", CheckCommand.spec), ("try", TryCommand.spec), ("ca", CACommand.spec),
    ("audit", AuditCommand.spec), ("parse", ParseCommand.spec), ("conformance", ConformanceCommand.spec),
    ("mcp", MCPCommand.spec), ("ui", UICommand.spec), ("completions", CompletionsCommand.spec),
]
let commands = Dictionary(uniqueKeysWithValues: commandList.map { ($0.name, $0.spec) })

func currentTime() -> Int64 { Int64(time(nil)) }

func runMain() -> Int32 {
    let argv = Array(CommandLine.arguments.dropFirst())
    if argv.first == "--version" {
        Console.out("cookie-proxy \(cookieProxyVersion)")
        return 0
    }
    guard let first = argv.first, first != "--help", first != "-h", first != "help" else {
        Console.out(rootSpec.helpText)
        return argv.isEmpty ? 2 : 0
    }
    guard let spec = commands[first] else {
        let suggestion = CommandSpec.nearest(first, Array(commands.keys))
        Console.err(
            "error: unknown subcommand '\(first)'" + (suggestion.map { "; did you mean '\($0)'?" } ?? "")
                + "\nRun 'cookie-proxy --help' for the list of subcommands.")
        return 2
    }
    do {
        let args = try spec.parse(Array(argv.dropFirst()))
        if args.helpRequested {
            Console.out(spec.helpText)
            return 0
        }
        if args.versionRequested {
            Console.out("cookie-proxy \(cookieProxyVersion)")
            return 0
        }
        if let psl = args.value(OptionSpec.psl) {
            do {
                try PublicSuffixList.use(file: psl)
            } catch {
                Console.err("error: --psl: \(error)")
                return 2
            }
        }
        switch first {
        case "run": return try RunCommand.run(args)
        case "check": return try CheckCommand.run(args)
        case "try": return try TryCommand.run(args, now: currentTime())
        case "audit": return try AuditCommand.run(args, now: currentTime())
        case "ca": return try CACommand.run(args)
        case "parse": return try ParseCommand.run(args, now: currentTime())
        case "conformance": return try ConformanceCommand.run(args)
        case "mcp": return try MCPCommand.run(args)
        case "ui": return try UICommand.run(args)
        case "completions":
            return try CompletionsCommand.run(args, commands: commandList, root: rootSpec)
        default: return 2
        }
    } catch {
        Console.err(
            "error: \(error.message)"
                + (error.showsHelpHint ? "\nRun 'cookie-proxy \(error.command) --help' for usage." : ""))
        return error.exitStatus
    }
}

exit(runMain())
