import ArgumentParsing
import BuildVersion
import Foundation
import ProxyConsole
import SiteAudit
import SiteAuditRunner
import Terminal

/// `cookie-proxy report diff|merge`: what `audit --browser` wrote, compared or joined without auditing again.
enum ReportCommand {
    enum Option {
        static let format = OptionSpec(
            names: ["--format"], value: "format",
            help: "With diff: text, json, junit (JUnit XML) or sarif (SARIF 2.1.0).",
            defaultValue: "text", choices: ["text", "json", "junit", "sarif"])
        static let failOn = OptionSpec(
            names: ["--fail-on"], value: "kinds",
            help: "With diff: the changes that make the exit status 1, comma-separated: new, changed, gone.",
            defaultValue: "new,changed,gone")
        static let out = OptionSpec(
            names: ["--out"], value: "dir", help: "With merge: the folder to write the merged fleet into (new).")
    }

    static let spec = CommandSpec(
        name: "report",
        abstract: "Compare two site audits, or merge a sharded fleet's folders into one report.",
        usage:
            "cookie-proxy report diff OLD NEW [--format text|json|junit|sarif] [--fail-on new,changed,gone]\n       cookie-proxy report merge DIR... --out MERGED",
        options: [Option.format, Option.failOn, Option.out],
        actions: ["diff", "merge"],
        arguments: """
              diff     OLD and NEW are audit --browser --out folders (a fleet's or one site's), or their fleet.json or
                       report.json: each cookie (site, name, domain, path) is new, changed (each fact before -> after),
                       gone or same, as --baseline reports it.
              merge    The folders of audit --urls --shard K/N runs: one fleet report (fleet.json, fleet.txt,
                       fleet.html, manifest.json) with every site's folder copied into MERGED, as one run of the whole
                       list would have written it.
            """,
        discussion: """
            diff exits 0 when no cookie is of a kind --fail-on names, 1 when one is, 2 when a side cannot be read.
            merge exits with the merged fleet's status (0 every site passed, 1 one failed, 2 one was not audited), 2
            when a folder cannot be read or two hold the same site; it warns about shards of a K/N set left out.
            """)

    static func run(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        switch args.positionals.first {
        case "diff":
            guard args.positionals.count == 3 else {
                throw UsageError(message: "give two folders: cookie-proxy report diff OLD NEW", command: spec.name)
            }
            if args.value(Option.out) != nil {
                throw UsageError(message: "--out is merge's: diff prints its report", command: spec.name)
            }
            var kinds = Set(BaselineComparison.failKinds)
            if let given = args.value(Option.failOn) {
                let read = SiteScan.failKinds(given)
                if let bad = read.kinds.first(where: { !BaselineComparison.failKinds.contains($0) }) {
                    throw UsageError(
                        message: "--fail-on '\(bad)': the kinds are new, changed, gone", command: spec.name)
                }
                kinds = read.kinds
            }
            let format = try args.choice(Option.format, command: spec.name)
            let diff: SnapshotDiff
            do {
                diff = SnapshotDiff(
                    old: try AuditSnapshot.load(args.positionals[1]), new: try AuditSnapshot.load(args.positionals[2]))
            } catch {
                Console.err("error: \(error)")
                return 2
            }
            switch format {
            case "json": Console.document(diff.json.serialized)
            case "junit": Console.document(diff.junit)
            case "sarif":
                Console.document(
                    diff.sarif(toolVersion: cookieProxyBuildVersion, time: Int64(Date().timeIntervalSince1970 * 1000)))
            default: Console.document(diff.text.text)
            }
            return diff.failures(of: kinds).isEmpty ? 0 : 1
        case "merge":
            guard args.positionals.count >= 2 else {
                throw UsageError(
                    message: "give the shards' folders: report merge DIR... --out MERGED", command: spec.name)
            }
            guard let out = args.value(Option.out) else {
                throw UsageError(message: "give the merged fleet's folder: --out MERGED", command: spec.name)
            }
            do {
                let (report, warnings) = try FleetRun.merge(Array(args.positionals.dropFirst()), out: out)
                for w in warnings { Console.err("warning: \(w)") }
                Console.err(
                    "merged \(report.sites.count) site(s) of \(args.positionals.count - 1) folder(s) into \(out)")
                return report.status
            } catch {
                Console.err("error: \(error)")
                return 2
            }
        default:
            throw UsageError(
                message: "say diff or merge, e.g. cookie-proxy report diff last-night/ tonight/", command: spec.name)
        }
    }
}
