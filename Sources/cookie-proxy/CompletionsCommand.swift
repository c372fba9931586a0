import ArgumentParsing
import BuildVersion
import ProxyApp
import Terminal

/// `cookie-proxy completions bash|zsh|fish` and `cookie-proxy completions man`: shell completions and the manual
/// page, each written from the commands' declarations (``CommandSpec``, ``OptionSpec``), the ones `--help` and
/// the parser read, so none of them can name an option the binary does not take or miss one it does.
enum CompletionsCommand {
    static let spec = CommandSpec(
        name: "completions",
        abstract: "Print shell completions (bash, zsh, fish) or the manual page (man), made from every option.",
        usage: "cookie-proxy completions bash|zsh|fish|man",
        options: [],
        actions: ["bash", "zsh", "fish", "man"],
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
        case "bash": Console.document(Completions.bash(commands))
        case "zsh": Console.document(Completions.zsh(commands))
        case "fish": Console.document(Completions.fish(commands))
        case "man": Console.document(Completions.man(commands, root: root, version: cookieProxyVersion))
        default: break  // the parser takes only the declared actions
        }
        return 0
    }
}
