import CookieKit
import CookieRules

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small declarative command-line parser in the shape of swift-argument-parser: each command declares
/// its options once; parsing, `--help` text and usage errors all come from that declaration.
struct OptionSpec: Sendable {
    /// Spellings, long first: `["--url", "-u"]`.
    var names: [String]
    /// Placeholder for the value (`URL`); nil for a flag.
    var value: String?
    var help: String
    /// Shown in `--help`.
    var defaultValue: String? = nil
    var repeatable = false
    /// The values it takes, when they are a list (the first is the default where ``ParsedArguments/choice(_:command:)``
    /// reads it): what `--help` names, the parser accepts and the shells' completions offer. A value ending in `:`
    /// (`header:`) is completed and then typed on.
    var choices: [String] = []

    var key: String { names[0] }

    /// `--psl FILE`, for every command that judges domains (main.swift reads it before the command runs).
    /// The options every command takes besides its own (the parser reads them itself; `--help` and the
    /// completions list them).
    static let common = [
        OptionSpec(names: ["-h", "--help"], value: nil, help: "Show help information."),
        OptionSpec(names: ["--version"], value: nil, help: "Show the version."),
    ]

    static let psl = OptionSpec(
        names: ["--psl"], value: "file",
        help: "Public Suffix List to use (default: Debian's or Homebrew's, else the copy built in).")
}

struct CommandSpec: Sendable {
    var name: String
    var abstract: String
    var usage: String
    var options: [OptionSpec]
    /// The actions its first argument names (`ca init|path|…`), offered by the completions.
    var actions: [String] = []
    /// Help for positional arguments, or nil when none are taken.
    var arguments: String? = nil
    var discussion: String? = nil

    var helpText: String {
        var out = "OVERVIEW: \(abstract)\n\nUSAGE: \(usage)\n"
        if let arguments { out += "\nARGUMENTS:\n\(arguments)\n" }
        out += "\nOPTIONS:\n"
        let rows: [(String, String)] = (options + OptionSpec.common).map { option in
            let left = option.names.joined(separator: ", ") + (option.value.map { " <\($0)>" } ?? "")
            var right = option.help
            if let d = option.defaultValue { right += " (default: \(d))" }
            if option.repeatable { right += " (repeatable)" }
            return (left, right)
        }
        let width = min(30, rows.map(\.0.count).max() ?? 0)
        for (left, right) in rows {
            if left.count > width {
                out += "  \(left)\n" + String(repeating: " ", count: width + 4) + right + "\n"
            } else {
                out += "  \(left)" + String(repeating: " ", count: width - left.count + 2) + right + "\n"
            }
        }
        if let discussion { out += "\n\(discussion)\n" }
        return out
    }
}

/// A usage error: what was wrong and what to do.
struct UsageError: Error {
    var message: String
    var command: String
    var exitStatus: Int32 = 2
    var kind: Kind = .usage

    enum Kind: Sendable {
        /// The command line is wrong: the message points at `--help`.
        case usage
        /// What it names is wrong (an invalid rules file): the message says what, and `--help` would not help.
        case input
    }

    var showsHelpHint: Bool { kind == .usage }
}

struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []
    var helpRequested = false
    var versionRequested = false

    /// The option's last value, or nil when it was not given.
    func value(_ option: OptionSpec) -> String? { values[option.key]?.last }
    /// The option's last value, or its declared default (the one `--help` shows).
    func value(orDefault option: OptionSpec) -> String? { value(option) ?? option.defaultValue }
    func all(_ option: OptionSpec) -> [String] { values[option.key] ?? [] }
    func flag(_ option: OptionSpec) -> Bool { flags.contains(option.key) }

    /// The value of an option that must be one of `choices` (a `--format`); the first choice when absent.
    /// The option's value, one of its ``OptionSpec/choices`` (the first when it is not given).
    func choice(_ option: OptionSpec, command: String) throws(UsageError) -> String {
        let choices = option.choices
        let given = value(option) ?? choices[0]
        guard choices.contains(given) else {
            throw UsageError(
                message: "\(option.key) must be \(choices.joined(separator: " or ")), not '\(given)'", command: command)
        }
        return given
    }

    /// `text`, given with `key`, as the absolute URL cookies are judged against.
    static func requestURL(_ text: String, key: String, command: String) throws(UsageError) -> RequestURL {
        guard let url = RequestURL(text) else {
            throw UsageError(
                message: "\(key) '\(text)' is not an absolute URL such as https://app.example.com/", command: command)
        }
        return url
    }
}

extension CommandSpec {
    func parse(_ args: [String]) throws(UsageError) -> ParsedArguments {
        var result = ParsedArguments()
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                result.positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            if arg == "-h" || arg == "--help" {
                result.helpRequested = true
                continue
            }
            if arg == "--version" {
                result.versionRequested = true
                continue
            }
            var name = arg
            var inline: String? = nil
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                name = String(arg[..<eq])
                inline = String(arg[arg.index(after: eq)...])
            }
            guard let option = options.first(where: { $0.names.contains(name) }) else {
                let suggestion = Self.nearest(
                    name, (options + OptionSpec.common).flatMap(\.names).filter { $0 != "-h" })
                throw UsageError(
                    message: "unknown option '\(name)'" + (suggestion.map { "; did you mean '\($0)'?" } ?? ""),
                    command: self.name)
            }
            if option.value == nil {
                if inline != nil {
                    throw UsageError(message: "option '\(name)' takes no value", command: self.name)
                }
                result.flags.insert(option.key)
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard i < args.count else {
                    throw UsageError(message: "option '\(name)' needs a value <\(option.value!)>", command: self.name)
                }
                value = args[i]
                i += 1
            }
            if !option.repeatable, result.values[option.key] != nil {
                throw UsageError(message: "option '\(name)' given more than once", command: self.name)
            }
            result.values[option.key, default: []].append(value)
        }
        if arguments == nil, let first = result.positionals.first {
            throw UsageError(message: "unexpected argument '\(first)'", command: self.name)
        }
        return result
    }

    /// The closest spelling, for "did you mean" (the same measure the rules errors use).
    static func nearest(_ word: String, _ candidates: [String]) -> String? {
        CommandHint.nearest(word, candidates)
    }
}
