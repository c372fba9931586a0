import Foundation
import ProxyTLS

/// `cookie-proxy ca init|path|export`: the local CA used for https interception.
enum CACommand {
    static let spec = CommandSpec(
        name: "ca",
        abstract: "Create, locate or export the local CA used to intercept https.",
        usage: "cookie-proxy ca init [--force] | ca path | ca export [--format pem|der]",
        options: [
            OptionSpec(names: ["--force"], value: nil, help: "With init: replace an existing CA."),
            OptionSpec(names: ["--format"], value: "format", help: "With export: pem or der.", defaultValue: "pem"),
        ],
        arguments: """
              init     Create the CA (EC P-256, private key mode 0600) in the configuration folder.
              path     Print the CA certificate's path.
              export   Write the CA certificate to stdout.
            """,
        discussion: """
            The configuration folder is $COOKIE_PROXY_HOME, else $XDG_CONFIG_HOME/cookie-proxy, else ~/.config/cookie-proxy.
            'cookie-proxy run' creates the CA on first use when a host is to be intercepted. README "Trusting the CA"
            shows how to trust it (iOS simulator, macOS, Debian, Firefox/Chromium, curl, Python).
            """)

    static func commonName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, 255)
        let host = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return "cookie-proxy local CA (\(host))"
    }

    static func run(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        let directory = CertificateAuthority.defaultDirectory(environment: ProcessInfo.processInfo.environment)
        guard let action = args.positionals.first, args.positionals.count == 1 else {
            throw UsageError(message: "say init, path or export, e.g. cookie-proxy ca init", command: spec.name)
        }
        do {
            switch action {
            case "init":
                let ca = try CertificateAuthority.create(
                    in: directory, force: args.flag("--force"), commonName: commonName())
                Console.out(
                    "created the CA in \(directory)\n  certificate: \(ca.certificatePath)\n  private key: \(ca.keyPath) (mode 0600)"
                )
            case "path":
                guard CertificateAuthority.exists(in: directory) else {
                    Console.err("error: no CA in \(directory) yet; create it with: cookie-proxy ca init")
                    return 1
                }
                Console.out(directory + "/" + CertificateAuthority.certificateFile)
            case "export":
                let format = args.value("--format") ?? "pem"
                guard format == "pem" || format == "der" else {
                    throw UsageError(message: "--format must be pem or der", command: spec.name)
                }
                guard CertificateAuthority.exists(in: directory) else {
                    Console.err("error: no CA in \(directory) yet; create it with: cookie-proxy ca init")
                    return 1
                }
                let ca = try CertificateAuthority.load(from: directory)
                Console.writeAll(1, format == "pem" ? try ca.certificatePEM() : try ca.certificateDER())
            default:
                let hint =
                    CommandSpec.nearest(action, ["init", "path", "export"]).map { "; did you mean '\($0)'?" } ?? ""
                throw UsageError(
                    message: "unknown action '\(action)'\(hint): say init, path or export", command: spec.name)
            }
        } catch let error as TLSError {
            Console.err("error: \(error)")
            return 1
        } catch let error as UsageError {
            throw error
        } catch {
            Console.err("error: \(error)")
            return 1
        }
        return 0
    }
}
