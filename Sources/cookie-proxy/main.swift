import ArgumentParsing
import BuildVersion
import CookieKit
import ProxyApp
import Terminal

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func currentTime() -> Int64 { Int64(time(nil)) }

/// The subcommands, in the order the root's help lists them (completions and the manual page follow it).
let program = Program(
    name: "cookie-proxy", version: cookieProxyBuild,
    abstract: "A local HTTP/HTTPS proxy that rewrites Set-Cookie headers by declarative rules and logs every change.",
    commands: [
        Subcommand(RunCommand.spec) { args throws(UsageError) in try RunCommand.run(args) },
        Subcommand(CheckCommand.spec) { args throws(UsageError) in try CheckCommand.run(args) },
        Subcommand(TryCommand.spec) { args throws(UsageError) in try TryCommand.run(args, now: currentTime()) },
        Subcommand(CACommand.spec) { args throws(UsageError) in try CACommand.run(args) },
        Subcommand(AuditCommand.spec) { args throws(UsageError) in try AuditCommand.run(args, now: currentTime()) },
        Subcommand(ReportCommand.spec) { args throws(UsageError) in try ReportCommand.run(args) },
        Subcommand(ParseCommand.spec) { args throws(UsageError) in try ParseCommand.run(args, now: currentTime()) },
        Subcommand(ConformanceCommand.spec) { args throws(UsageError) in try ConformanceCommand.run(args) },
        Subcommand(MCPCommand.spec) { args throws(UsageError) in try MCPCommand.run(args) },
        Subcommand(UICommand.spec) { args throws(UsageError) in try UICommand.run(args) },
        Subcommand(CompletionsCommand.spec) { args throws(UsageError) in
            try CompletionsCommand.run(
                args, commands: program.commands.map { ($0.spec.name, $0.spec) }, root: program.root)
        },
    ])

exit(
    program.main(
        Array(CommandLine.arguments.dropFirst()), out: { Console.out(TerminalText(lines: $0)) },
        err: { Console.err(TerminalText(lines: $0)) }
    ) { args in
        // `--psl FILE`, before any subcommand judges a domain.
        guard let psl = args.value(OptionSpec.psl) else { return nil }
        do {
            try PublicSuffixList.use(file: psl)
            return nil
        } catch {
            Console.err("error: --psl: \(error)")
            return 2
        }
    })
