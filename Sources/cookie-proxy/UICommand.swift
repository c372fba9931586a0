import ArgumentParsing
import Foundation
import ProxyApp
import Terminal

/// `cookie-proxy ui url`: the inspector's URL with this installation's token, as `run`'s banner prints it, for a
/// proxy started with `--quiet` or in another terminal.
enum UICommand {
    enum Option {
        static let ui = OptionSpec(
            names: ["--ui"], value: "host:port", help: "The inspector's address, as given to 'run --ui'.",
            defaultValue: "the running proxy's, else 127.0.0.1:8081")
    }

    static let spec = CommandSpec(
        name: "ui",
        abstract: "Print the inspector's URL with this installation's token.",
        usage: "cookie-proxy ui [url] [--ui HOST:PORT]",
        options: [Option.ui],
        actions: ["url"],
        arguments: """
              url      http://HOST:PORT/?token=… (the token is in inspector-token in the configuration folder, mode 0600);
                       the action when none is given
            """,
        discussion:
            "A taken default port makes 'run' pick another: the running proxy records its address (inspector-address"
            + " in the configuration folder), which 'ui' and 'mcp' read; --ui names another.")

    static func run(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        let directory = ProxyApp.Configuration.defaultHome()
        let base: String
        if let address = args.value(Option.ui) {
            guard let (host, port) = RunCommand.parseHostPort(address), port > 0 else {
                throw UsageError(
                    message: "--ui '\(address)' must be HOST:PORT, e.g. 127.0.0.1:8081", command: spec.name)
            }
            base = ProxyApp.Configuration.serviceURL(host: host, port: port)
        } else {
            base = InspectorAddress.recorded(directory: directory) ?? "http://127.0.0.1:8081"
        }
        do {
            let token = try LogKey.inspectorToken(directory: directory)
            Console.out("\(base)/?token=\(token)")
            return 0
        } catch {
            Console.err("error: cannot read or make the inspector token in \(directory): \(error)")
            return 1
        }
    }
}
