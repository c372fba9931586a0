import Foundation

/// Shell completions (bash, zsh, fish) and the manual page, each written from the commands' declarations
/// (``CommandSpec``, ``OptionSpec``), the ones `--help` and the parser read, so none of them can name an option the
/// binary does not take or miss one it does: subcommands, their options, their actions and options' values.
public enum Completions {
    /// Whether an option's value is a path (completed with file names).
    static func takesPath(_ option: OptionSpec) -> Bool {
        ["file", "dir", "path"].contains(option.value ?? "")
    }

    public static func bash(_ commands: [(name: String, spec: CommandSpec)]) -> String {
        var out = """
            # bash completion for cookie-proxy (cookie-proxy completions bash)
            _cookie_proxy() {
                local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} opts paths values actions=""
                if [ "$COMP_CWORD" -eq 1 ]; then
                    COMPREPLY=($(compgen -W "\(commands.map(\.name).joined(separator: " ")) --help --version" -- "$cur"))
                    return
                fi
                case ${COMP_WORDS[1]} in

            """
        var choices = ""
        for (name, spec) in commands {
            let options = spec.options + OptionSpec.common
            let paths = options.filter(takesPath).flatMap(\.names)
            let values = options.filter { $0.value != nil && !takesPath($0) }.flatMap(\.names)
            out += "        \(name)) opts=\"\(options.flatMap(\.names).joined(separator: " "))\""
            out += " paths=\"\(paths.joined(separator: " "))\" values=\"\(values.joined(separator: " "))\""
            if !spec.actions.isEmpty { out += " actions=\"\(spec.actions.joined(separator: " "))\"" }
            out += " ;;\n"
            for option in options where !option.choices.isEmpty {
                let patterns = option.names.map { "\"\(name) \($0)\"" }.joined(separator: "|")
                choices += "        \(patterns)) words=\"\(option.choices.joined(separator: " "))\" ;;\n"
            }
        }
        // A value like `header:` is typed on after it: no space, and bash's word breaks at `:` are undone.
        out += """
                    *) return ;;
                esac
                local words=""
                case "${COMP_WORDS[1]} $prev" in

            """
        out += choices
        out += """
                esac
                if [ -n "$words" ]; then
                    COMPREPLY=($(compgen -W "$words" -- "$cur"))
                    [[ ${COMPREPLY[0]} == *: ]] && compopt -o nospace 2>/dev/null
                    return
                fi
                if [[ " $paths " == *" $prev "* ]]; then COMPREPLY=($(compgen -f -- "$cur")); return; fi
                if [[ " $values " == *" $prev "* ]]; then return; fi
                if [[ $cur != -* && -n $actions && $COMP_CWORD -eq 2 ]]; then
                    COMPREPLY=($(compgen -W "$actions" -- "$cur"))
                    return
                fi
                COMPREPLY=($(compgen -W "$opts" -- "$cur"))
                if [[ $cur != -* ]]; then COMPREPLY+=($(compgen -f -- "$cur")); fi
            }
            complete -F _cookie_proxy cookie-proxy
            """
        return out
    }

    /// Text inside zsh's `'…[help]…'` specs: brackets and colons escaped, single quotes closed and reopened.
    static func zshText(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "[", "]", ":", "\\": out += "\\\(c)"
            case "'": out += "'\\''"
            default: out.append(c)
            }
        }
        return out
    }

    public static func zsh(_ commands: [(name: String, spec: CommandSpec)]) -> String {
        var out = """
            #compdef cookie-proxy
            # zsh completion for cookie-proxy (cookie-proxy completions zsh)
            _cookie_proxy() {
                local -a commands
                commands=(

            """
        for (name, spec) in commands { out += "        '\(name):\(zshText(spec.abstract))'\n" }
        out += """
                )
                if (( CURRENT == 2 )); then
                    _describe 'subcommand' commands
                    return
                fi
                case $words[2] in

            """
        for (name, spec) in commands {
            // The subcommand's own words: `_arguments` reads the first as the command's name.
            out += "        \(name)) shift words; (( CURRENT-- )); _arguments -s"
            for option in spec.options + OptionSpec.common {
                let help = zshText(option.help)
                let action =
                    option.value.map { value in
                        takesPath(option)
                            ? ":\(value):_files"
                            : option.choices.isEmpty
                                ? ":\(zshText(value)):"
                                : ":\(zshText(value)):(\(option.choices.map(zshText).joined(separator: " ")))"
                    } ?? ""
                for spelling in option.names {
                    out += " \\\n            '\(option.repeatable ? "*" : "")\(spelling)[\(help)]\(action)'"
                }
            }
            if !spec.actions.isEmpty {
                out += " \\\n            '1:action:(\(spec.actions.joined(separator: " ")))'"
            }
            out += " \\\n            '*:argument:_files' ;;\n"
        }
        out += """
                esac
            }
            _cookie_proxy "$@"
            """
        return out
    }

    /// Text inside fish's single quotes.
    static func fishText(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
    }

    public static func fish(_ commands: [(name: String, spec: CommandSpec)]) -> String {
        let names = commands.map(\.name).joined(separator: " ")
        var out = "# fish completion for cookie-proxy (cookie-proxy completions fish)\n"
        out += "complete -c cookie-proxy -f\n"
        for (name, spec) in commands {
            out += "complete -c cookie-proxy -n 'not __fish_seen_subcommand_from \(names)' -a \(name)"
            out += " -d '\(fishText(spec.abstract))'\n"
        }
        for (name, spec) in commands {
            for option in spec.options + OptionSpec.common {
                var line = "complete -c cookie-proxy -n '__fish_seen_subcommand_from \(name)'"
                for spelling in option.names {
                    line += spelling.hasPrefix("--") ? " -l \(spelling.dropFirst(2))" : " -s \(spelling.dropFirst())"
                }
                if !option.choices.isEmpty {
                    line += " -x -a '\(option.choices.map(fishText).joined(separator: " "))'"
                } else if option.value != nil {
                    line += takesPath(option) ? " -r -F" : " -r"
                }
                out += line + " -d '\(fishText(option.help))'\n"
            }
            if !spec.actions.isEmpty {
                let actions = spec.actions.joined(separator: " ")
                out +=
                    "complete -c cookie-proxy -n '__fish_seen_subcommand_from \(name); and not __fish_seen_subcommand_from"
                out += " \(actions)' -a '\(actions)'\n"
            }
        }
        return out
    }

    /// Text for roff: a backslash as `\e`, a hyphen as `\-` (a minus: options stay searchable and copyable), a
    /// character outside ASCII as `\[uXXXX]` (groff_char(7)), a leading dot or quote made literal.
    static func roff(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var escaped = ""
            for scalar in line.unicodeScalars {
                switch scalar {
                case "\\": escaped += "\\e"
                case "-": escaped += "\\-"
                case _ where scalar.value > 0x7F:
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    escaped += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
                default: escaped.unicodeScalars.append(scalar)
                }
            }
            return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
        }.joined(separator: "\n")
    }

    /// The ARGUMENTS text of `--help` as (name, help) pairs: a line indented by at most four spaces names an
    /// argument, a line indented further goes on with the one before.
    static func arguments(_ text: String) -> [(String, String)] {
        var result: [(String, String)] = []
        for line in text.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            let words = line.dropFirst(indent)
            if indent <= 4, let space = words.firstIndex(of: " ") {
                result.append((String(words[..<space]), String(words[space...].drop { $0 == " " })))
            } else if indent <= 4 {
                result.append((String(words), ""))
            } else if !result.isEmpty {
                result[result.count - 1].1 += " " + words
            }
        }
        return result
    }

    public static func man(_ commands: [(name: String, spec: CommandSpec)], root: CommandSpec, version: String)
        -> String
    {
        var out = """
            .TH COOKIE\\-PROXY 1 "" "cookie-proxy \(version)" "User Commands"
            .SH NAME
            cookie\\-proxy \\- \(roff(root.abstract))
            .SH SYNOPSIS
            .B cookie\\-proxy
            .I subcommand
            [\\fIoptions\\fR]
            .SH DESCRIPTION
            A local HTTP/HTTPS proxy that parses every Set\\-Cookie header in transit, rewrites cookies by declarative
            rules, and logs each change and why. Every subcommand takes \\fB\\-\\-help\\fR and \\fB\\-\\-version\\fR.
            .SH COMMANDS

            """
        for (name, spec) in commands {
            // Each usage line a synopsis of its own (`.SY`: wrapped with a hanging indent, never run into the next
            // line or the description), then the description, then each argument as a tagged paragraph.
            out += ".SS \(roff(name))\n"
            for line in spec.usage.split(separator: "\n") {
                let words = line.split(separator: " ", maxSplits: 2)
                let (command, rest) =
                    words.count >= 2 && words[0] == "cookie-proxy" && words[1] == name
                    ? ("cookie-proxy \(name)", words.count > 2 ? String(words[2]) : "")
                    : (
                        "cookie-proxy",
                        String(line.drop { $0 == " " }.dropFirst("cookie-proxy".count).drop { $0 == " " })
                    )
                out += ".SY \"\(roff(command))\"\n"
                if !rest.isEmpty { out += roff(rest) + "\n" }
                out += ".YS\n"
            }
            out += ".PP\n\(roff(spec.abstract))\n"
            for (argument, help) in arguments(spec.arguments ?? "") {
                out += ".TP\n.B \(roff(argument))\n\(roff(help))\n"
            }
            for option in spec.options {
                let spellings = option.names.map { "\\fB\(roff($0))\\fR" }.joined(separator: ", ")
                out += ".TP\n\(spellings)\(option.value.map { " \\fI\(roff($0))\\fR" } ?? "")\n"
                var help = option.help
                if let d = option.defaultValue { help += " (default: \(d))" }
                if option.repeatable { help += " (repeatable)" }
                out += roff(help) + "\n"
            }
            if let discussion = spec.discussion { out += ".PP\n\(roff(discussion))\n" }
        }
        out += """
            .SH FILES
            The configuration folder: $COOKIE_PROXY_HOME, else $XDG_CONFIG_HOME/cookie\\-proxy, else
            ~/.config/cookie\\-proxy (the local CA, the log key and the inspector token, mode 0600).
            .SH SEE ALSO
            The README and docs/ of the source repository; rules/README.md for the rules language.
            """
        return out
    }
}
