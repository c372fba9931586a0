import ArgumentParsing
import CookieMCP
import Foundation
import ProxyApp
import Terminal

/// `cookie-proxy mcp`: the same data for agents, as a Model Context Protocol server over stdio (JSON-RPC 2.0, one
/// message per line). Its tools run this binary's own subcommands (parse, try, check, audit), so an agent gets
/// exactly what a person at the terminal gets, and read a running proxy's inspector API.
enum MCPCommand {
    /// The options of `cookie-proxy mcp`, declared once: parsing, `--help` and every read
    /// of a value use these (a misspelt option is a compile error).
    enum Option {
        static let inspector = OptionSpec(
            names: ["--inspector"], value: "url",
            help: "A running proxy's inspector, for the tools that read it (token from the configuration folder).",
            defaultValue: "$COOKIE_PROXY_INSPECTOR, else the running proxy's, else http://127.0.0.1:8081")
    }

    static let spec = CommandSpec(
        name: "mcp",
        abstract: "Serve cookie-proxy's tools to agents over the Model Context Protocol (stdio).",
        usage: "cookie-proxy mcp [--inspector URL]",
        options: [
            Option.inspector
        ],
        discussion: """
            Tools: parse_set_cookie, try_rules, check_rules, audit_url, recent_exchanges, exchange_detail,
            browser_jar. Configure it in an MCP client as the command 'cookie-proxy mcp'.
            """)

    static func run(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let configuration = ProxyApp.Configuration.defaultHome(environment: environment)
        let inspector =
            args.value(Option.inspector) ?? environment["COOKIE_PROXY_INSPECTOR"]
            ?? InspectorAddress.recorded(directory: configuration) ?? "http://127.0.0.1:8081"
        let server = MCPServer(
            inspector: inspector, configuration: configuration,
            executable: Bundle.main.executablePath ?? CommandLine.arguments[0])
        while let line = readLine(strippingNewline: true) {
            guard !line.isEmpty else { continue }
            if let reply = server.handle(line) {
                Console.document(reply)
            }
        }
        return 0
    }
}
