#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small declarative command-line parser in the shape of swift-argument-parser: each command declares
/// its options once; parsing, `--help` text and usage errors all come from that declaration.
public struct OptionSpec: Sendable {
    /// Spellings, long first: `["--url", "-u"]`.
    public var names: [String]
    /// Placeholder for the value (`URL`); nil for a flag.
    public var value: String?
    public var help: String
    /// Shown in `--help`.
    public var defaultValue: String? = nil
    public var repeatable = false
    /// The values it takes, when they are a list (the first is the default where ``ParsedArguments/choice(_:command:)``
    /// reads it): what `--help` names, the parser accepts and the shells' completions offer. A value ending in `:`
    /// (`header:`) is completed and then typed on.
    public var choices: [String] = []

    public init(
        names: [String], value: String?, help: String, defaultValue: String? = nil, repeatable: Bool = false,
        choices: [String] = []
    ) {
        (self.names, self.value, self.help, self.defaultValue) = (names, value, help, defaultValue)
        (self.repeatable, self.choices) = (repeatable, choices)
    }

    public var key: String { names[0] }

    /// The options every command takes besides its own (the parser reads them itself; `--help` and the
    /// completions list them).
    public static let common = [
        OptionSpec(names: ["-h", "--help"], value: nil, help: "Show help information."),
        OptionSpec(names: ["--version"], value: nil, help: "Show the version."),
    ]
}

public struct CommandSpec: Sendable {
    public var name: String
    public var abstract: String
    public var usage: String
    public var options: [OptionSpec]
    /// The actions its first argument names (`ca init|path|…`), offered by the completions.
    public var actions: [String] = []
    /// Help for positional arguments, or nil when none are taken.
    public var arguments: String? = nil
    public var discussion: String? = nil

    public init(
        name: String, abstract: String, usage: String, options: [OptionSpec], actions: [String] = [],
        arguments: String? = nil, discussion: String? = nil
    ) {
        (self.name, self.abstract, self.usage, self.options) = (name, abstract, usage, options)
        (self.actions, self.arguments, self.discussion) = (actions, arguments, discussion)
    }

    public var helpText: String {
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
public struct UsageError: Error {
    public var message: String
    public var command: String
    public var exitStatus: Int32 = 2
    public var kind: Kind = .usage

    public init(message: String, command: String, exitStatus: Int32 = 2, kind: Kind = .usage) {
        (self.message, self.command, self.exitStatus, self.kind) = (message, command, exitStatus, kind)
    }

    public enum Kind: Sendable {
        /// The command line is wrong: the message points at `--help`.
        case usage
        /// What it names is wrong (an invalid rules file): the message says what, and `--help` would not help.
        case input
    }

    public var showsHelpHint: Bool { kind == .usage }
}

public struct ParsedArguments {
    public var values: [String: [String]] = [:]
    public var flags: Set<String> = []
    public var positionals: [String] = []
    public var helpRequested = false
    public var versionRequested = false

    public init() {}

    /// The option's last value, or nil when it was not given.
    public func value(_ option: OptionSpec) -> String? { values[option.key]?.last }
    /// The option's last value, or its declared default (the one `--help` shows).
    public func value(orDefault option: OptionSpec) -> String? { value(option) ?? option.defaultValue }
    public func all(_ option: OptionSpec) -> [String] { values[option.key] ?? [] }
    public func flag(_ option: OptionSpec) -> Bool { flags.contains(option.key) }

    /// The option's value as a whole number in `range`; nil when it is not given (and, with `orDefault`, has no
    /// default).
    public func integer(_ option: OptionSpec, in range: ClosedRange<Int>, orDefault: Bool = false, command: String)
        throws(UsageError) -> Int?
    {
        guard let v = orDefault ? value(orDefault: option) : value(option) else { return nil }
        guard let n = Int(v), range.contains(n) else {
            throw UsageError(
                message: "\(option.key) must be a whole number from \(range.lowerBound) to \(range.upperBound)",
                command: command)
        }
        return n
    }

    /// The option's value as seconds (`30`, `2.5`, `30s`; more than 0, at most a day); nil when it is not given.
    public func seconds(_ option: OptionSpec, orDefault: Bool = false, command: String) throws(UsageError) -> Double? {
        guard let v = orDefault ? value(orDefault: option) : value(option) else { return nil }
        let trimmed = v.hasSuffix("s") ? String(v.dropLast()) : v
        guard let d = Double(trimmed), d > 0, d <= 86_400 else {
            throw UsageError(message: "\(option.key) must be a number of seconds, e.g. 30 or 2.5", command: command)
        }
        return d
    }

    /// The option's value, one of its ``OptionSpec/choices`` (its default, else the first, when it is not given).
    public func choice(_ option: OptionSpec, command: String) throws(UsageError) -> String {
        let choices = option.choices
        let given = value(option) ?? option.defaultValue.flatMap { choices.contains($0) ? $0 : nil } ?? choices[0]
        guard choices.contains(given) else {
            let list =
                choices.count > 2
                ? choices.dropLast().joined(separator: ", ") + " or " + choices.last!
                : choices.joined(separator: " or ")
            throw UsageError(message: "\(option.key) must be \(list), not '\(given)'", command: command)
        }
        return given
    }
}

extension CommandSpec {
    public func parse(_ args: [String]) throws(UsageError) -> ParsedArguments {
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
        // A command of actions takes one of them first (its help and completions name the same list).
        if let action = result.positionals.first, !actions.isEmpty, !actions.contains(action) {
            let hint = Self.nearest(action, actions).map { " (did you mean '\($0)'?)" } ?? ""
            throw UsageError(
                message: "unknown action '\(action)'\(hint); the actions are: \(actions.joined(separator: ", "))",
                command: self.name)
        }
        return result
    }

    /// The closest spelling, for "did you mean" (the same measure the rules errors use).
    public static func nearest(_ word: String, _ candidates: [String]) -> String? {
        CommandHint.nearest(word, candidates)
    }
}
