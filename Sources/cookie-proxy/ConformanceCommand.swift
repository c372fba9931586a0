import ArgumentParsing
import Foundation
import ProxyApp
import CookieConformance
import CookieKit
import Terminal

/// `cookie-proxy conformance`: runs scenario corpora (the format of the repository's conformance/) against the jar.
enum ConformanceCommand {
    /// The options of `cookie-proxy conformance`, declared once: parsing, `--help` and every read
    /// of a value use these (a misspelt option is a compile error).
    enum Option {
        static let quiet = OptionSpec(
            names: ["--quiet", "-q"], value: nil, help: "Print only the per-suite lines and the total.")
    }

    static let spec = CommandSpec(
        name: "conformance",
        abstract: "Run cookie conformance corpora against cookie-proxy's jar.",
        usage: "cookie-proxy conformance [FILE...]",
        options: [
            Option.quiet
        ] + [.psl],
        arguments: """
              FILE     A corpus in the format of conformance/README.md. Default: the corpora the repository
                       carries (conformance/ here, in the binary's checkout, or PREFIX/share/cookie-proxy).
            """,
        discussion: "Counted cases decide the exit status (0 all pass, 1 some fail); informative ones are reported.")

    static func run(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        var files = args.positionals
        if files.isEmpty {
            guard let folder = defaultFolder() else {
                throw UsageError(
                    message:
                        "no conformance/ folder here or above the binary; give corpus files, e.g. conformance/wpt.json",
                    command: spec.name)
            }
            files = ["http-state.json", "wpt.json"].map { "\(folder)/\($0)" }
        }
        if PublicSuffixList.current.source == .shipped {
            Console.err("note: no Public Suffix List on this machine; using \(PublicSuffixList.current.source)")
        }
        var suites: [ConformanceSuite] = []
        for file in files {
            do { suites.append(try ConformanceSuite(contentsOf: file)) } catch {
                Console.err("error: \(error)")
                return 2
            }
        }
        let report = ConformanceReport(suites, quiet: args.flag(Option.quiet))
        Console.out(report.text)
        return report.failed == 0 ? 0 : 1
    }

    /// The repository's `conformance/` folder: under the current folder (a checkout), else in the first folder above
    /// the binary that has one (`.build/release/cookie-proxy` → the checkout it was built in) or that has
    /// `share/cookie-proxy/conformance` (`PREFIX/bin/cookie-proxy`, as scripts/install.sh puts it).
    static func defaultFolder() -> String? {
        let files = FileManager.default
        let holds = { (folder: String) in files.fileExists(atPath: folder + "/wpt.json") }
        if holds(files.currentDirectoryPath + "/conformance") { return files.currentDirectoryPath + "/conformance" }
        let binary = (try? files.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var folder = URL(fileURLWithPath: binary).standardizedFileURL.deletingLastPathComponent()
        while folder.path != "/" {
            for candidate in [folder.path + "/conformance", folder.path + "/share/cookie-proxy/conformance"]
            where holds(candidate) {
                return candidate
            }
            folder.deleteLastPathComponent()
        }
        return nil
    }
}
