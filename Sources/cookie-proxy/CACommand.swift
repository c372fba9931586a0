import ArgumentParsing
import ProxyApp
import Foundation
import Terminal
import TrustStores

/// `cookie-proxy ca init|path|export|install|uninstall`: the local CA used for https interception.
enum CACommand {
    /// The options of `cookie-proxy ca`, declared once: parsing, `--help` and every read
    /// of a value use these (a misspelt option is a compile error).
    enum Option {
        static let force = OptionSpec(names: ["--force"], value: nil, help: "With init: replace an existing CA.")
        static let format = OptionSpec(
            names: ["--format"], value: "format", help: "With export: pem or der.", defaultValue: "pem",
            choices: ["pem", "der"])
        static let system = OptionSpec(
            names: ["--system"], value: nil,
            help: "The system store: Debian's (update-ca-certificates; root), or macOS's System keychain.")
        static let nss = OptionSpec(
            names: ["--nss"], value: nil,
            help: "NSS databases: Chromium's ~/.pki/nssdb and Firefox profiles' (certutil).")
        static let nssDb = OptionSpec(
            names: ["--nss-db"], value: "dir", help: "This NSS database instead of those.", repeatable: true)
        static let keychain = OptionSpec(
            names: ["--keychain"], value: nil, help: "The macOS login keychain (security add-trusted-cert).")
        static let simulator = OptionSpec(
            names: ["--simulator"], value: nil,
            help: "Booted iOS simulators (xcrun simctl keychain booted add-root-cert).")
    }

    static let spec = CommandSpec(
        name: "ca",
        abstract: "Create, locate, export or trust the local CA used to intercept https.",
        usage:
            "cookie-proxy ca init [--force] | ca path | ca export [--format pem|der] | ca install|uninstall [--system] [--nss] [--keychain] [--simulator]",
        options: [
            Option.force,
            Option.format,
            Option.system,
            Option.nss,
            Option.nssDb,
            Option.keychain,
            Option.simulator,
        ],
        actions: ["init", "path", "export", "install", "uninstall"],
        arguments: """
              init     Create the CA (EC P-256, private key mode 0600) in the configuration folder.
              path     Print the CA certificate's path.
              export   Write the CA certificate to stdout.
              install  Trust the CA in the stores named (default: --nss on Linux, --keychain on macOS); creates the CA
                       first if there is none. Each store is checked first: what is already there is not added again.
              uninstall  Take it out of those stores again.
            """,
        discussion: """
            The configuration folder is $COOKIE_PROXY_HOME, else $XDG_CONFIG_HOME/cookie-proxy, else ~/.config/cookie-proxy.
            'cookie-proxy run' creates the CA on first use when a host is to be intercepted. docs/https.md "Trusting the CA"
            shows how to trust it by hand (iOS simulator, macOS, Debian, Firefox/Chromium, curl, Python). install and
            uninstall exit 0 when they changed something, 1 when every store was already so (nothing done).
            """)

    static func run(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        let directory = ProxyApp.Configuration.defaultHome()
        guard let action = args.positionals.first, args.positionals.count == 1 else {
            throw UsageError(
                message: "say init, path, export, install or uninstall, e.g. cookie-proxy ca init", command: spec.name)
        }
        do {
            switch action {
            case "init":
                let ca = try LocalCA.create(in: directory, force: args.flag(Option.force))
                Console.out(
                    "created the CA in \(directory)\n  certificate: \(ca.certificate)\n  private key: \(ca.key) (mode 0600)"
                )
            case "path":
                guard let path = LocalCA.certificatePath(in: directory) else {
                    Console.err("error: no CA in \(directory) yet; create it with: cookie-proxy ca init")
                    return 1
                }
                Console.out("\(path)")
            case "export":
                let format = try args.choice(Option.format, command: spec.name)
                guard LocalCA.certificatePath(in: directory) != nil else {
                    Console.err("error: no CA in \(directory) yet; create it with: cookie-proxy ca init")
                    return 1
                }
                Console.writeAll(1, try LocalCA.certificate(in: directory, pem: format == "pem"))
            case "install", "uninstall":
                return try trust(action == "install", args, directory: directory)
            default: break  // the parser takes only the declared actions
            }
        } catch let error as UsageError {
            throw error
        } catch {
            Console.err("error: \(error)")
            return 1
        }
        return 0
    }

    /// `ca install` / `ca uninstall`: the stores named (the platform's default when none is).
    static func trust(_ install: Bool, _ args: ParsedArguments, directory: String) throws -> Int32 {
        let named: [CATrust.Store: OptionSpec] = [
            .system: Option.system, .nss: Option.nss, .keychain: Option.keychain, .simulator: Option.simulator,
        ]
        var stores = CATrust.Store.allCases.filter { named[$0].map(args.flag) ?? false }
        if !args.all(Option.nssDb).isEmpty && !stores.contains(.nss) { stores.append(.nss) }
        return try CATrust.change(
            install: install, stores: stores, nssDatabases: args.all(Option.nssDb), system: args.flag(Option.system),
            directory: directory, commonName: CATrust.commonName())
    }
}
