import ProxyApp

/// `cookie-proxy completions bash|zsh|fish` and `cookie-proxy completions man`: shell completions and the manual
/// page, each written from the commands' declarations (``CommandSpec``, ``OptionSpec``), the ones `--help` and
/// the parser read, so none of them can name an option the binary does not take or miss one it does.
enum CompletionsCommand {
    static let spec = CommandSpec(
        name: "completions",
        abstract: "Print shell completions (bash, zsh, fish) or the manual page (man), made from every option.",
        usage: "cookie-proxy completions bash|zsh|fish|man",
        options: [],
        arguments: """
              bash     source it, or put it in /usr/share/bash-completion/completions/cookie-proxy
              zsh      put it in a folder of $fpath as _cookie-proxy
              fish     put it in ~/.config/fish/completions/cookie-proxy.fish
              man      roff for man(1): cookie-proxy completions man > cookie-proxy.1; man ./cookie-proxy.1
            """)

    static func run(_ args: ParsedArguments, commands: [(name: String, spec: CommandSpec)], root: CommandSpec)
        throws(UsageError) -> Int32
    {
        guard args.positionals.count == 1, let kind = args.positionals.first else {
            throw UsageError(message: "name one of bash, zsh, fish or man", command: spec.name)
        }
        switch kind {
        case "bash": Console.out(bash(commands))
        case "zsh": Console.out(zsh(commands))
        case "fish": Console.out(fish(commands))
        case "man": Console.out(man(commands, root: root))
        default: throw UsageError(message: "'\(kind)' is not bash, zsh, fish or man", command: spec.name)
        }
        return 0
    }

    /// Whether an option's value is a path (completed with file names).
    static func takesPath(_ option: OptionSpec) -> Bool {
        ["file", "dir", "path"].contains(option.value ?? "")
    }

    static func bash(_ commands: [(name: String, spec: CommandSpec)]) -> String {
        var out = """
            # bash completion for cookie-proxy (cookie-proxy completions bash)
            _cookie_proxy() {
                local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} opts paths values
                if [ "$COMP_CWORD" -eq 1 ]; then
                    COMPREPLY=($(compgen -W "\(commands.map(\.name).joined(separator: " ")) --help --version" -- "$cur"))
                    return
                fi
                case ${COMP_WORDS[1]} in

            """
        for (name, spec) in commands {
            let options = spec.options + OptionSpec.common
            let paths = options.filter(takesPath).flatMap(\.names)
            let values = options.filter { $0.value != nil && !takesPath($0) }.flatMap(\.names)
            out += "        \(name)) opts=\"\(options.flatMap(\.names).joined(separator: " "))\""
            out += " paths=\"\(paths.joined(separator: " "))\" values=\"\(values.joined(separator: " "))\" ;;\n"
        }
        out += """
                    *) return ;;
                esac
                if [[ " $paths " == *" $prev "* ]]; then COMPREPLY=($(compgen -f -- "$cur")); return; fi
                if [[ " $values " == *" $prev "* ]]; then return; fi
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

    static func zsh(_ commands: [(name: String, spec: CommandSpec)]) -> String {
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
            out += "        \(name)) _arguments -s"
            for option in spec.options + OptionSpec.common {
                let help = zshText(option.help)
                let action = option.value.map { takesPath(option) ? ":\($0):_files" : ":\(zshText($0)):" } ?? ""
                for spelling in option.names {
                    out += " \\\n            '\(option.repeatable ? "*" : "")\(spelling)[\(help)]\(action)'"
                }
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

    static func fish(_ commands: [(name: String, spec: CommandSpec)]) -> String {
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
                if option.value != nil { line += takesPath(option) ? " -r -F" : " -r" }
                out += line + " -d '\(fishText(option.help))'\n"
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

    static func man(_ commands: [(name: String, spec: CommandSpec)], root: CommandSpec) -> String {
        var out = """
            .TH COOKIE\\-PROXY 1 "" "cookie-proxy \(cookieProxyVersion)" "User Commands"
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
        for (_, spec) in commands {
            out += ".SS \(roff(spec.usage))\n\(roff(spec.abstract))\n"
            if let arguments = spec.arguments { out += ".PP\n.nf\n\(roff(arguments))\n.fi\n" }
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
