import ArgumentParsing
import CookieReports
import Foundation
import ProxyApp

/// `run --report FORMAT:FILE` and `--fail-on`: what the run found, for a CI system, written at exit and on
/// SIGUSR1; the exit status says whether it met a `--fail-on` condition.
extension RunCommand {
    enum ReportOption {
        static let report = OptionSpec(
            names: ["--report"], value: "junit:FILE|sarif:FILE",
            help:
                "Write what the run found (cookie lines browsers reject or warn about, lifecycle verdicts other than"
                + " sent-as-expected, by host and cookie) as JUnit XML or SARIF 2.1.0, at exit and on SIGUSR1.",
            repeatable: true,
            choices: ["junit:", "sarif:"])
        static let failOn = OptionSpec(
            names: ["--fail-on"], value: "rejects|warnings|verdicts",
            help:
                "Exit 1 when the run saw a cookie line browsers reject (rejects), that or a warning (warnings), or a"
                + " cookie not sent as expected (verdicts).",
            repeatable: true,
            choices: ["rejects", "warnings", "verdicts"])
    }

    /// The reports asked for and the conditions that fail the run.
    struct ReportSettings {
        var files: [(format: String, path: String)] = []
        var failOn: Set<FindingsReport.FailOn> = []
        var isEmpty: Bool { files.isEmpty && failOn.isEmpty }
    }

    static func reportSettings(_ args: ParsedArguments) throws(UsageError) -> ReportSettings {
        var settings = ReportSettings()
        for text in args.all(ReportOption.report) {
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2, ["junit", "sarif"].contains(parts[0]), !parts[1].isEmpty else {
                throw UsageError(message: "--report '\(text)' must be junit:FILE or sarif:FILE", command: spec.name)
            }
            // Written at exit: a file that cannot be written is said now, not after the run.
            let directory = (parts[1] as NSString).deletingLastPathComponent
            guard FileManager.default.isWritableFile(atPath: directory.isEmpty ? "." : directory) else {
                throw UsageError(
                    message: "--report \(parts[0]):\(parts[1]): the folder \(directory) is not writable",
                    command: spec.name)
            }
            settings.files.append((parts[0], parts[1]))
        }
        for text in args.all(ReportOption.failOn) {
            guard let condition = FindingsReport.FailOn(rawValue: text) else {
                throw UsageError(message: "--fail-on must be rejects, warnings or verdicts", command: spec.name)
            }
            settings.failOn.insert(condition)
        }
        return settings
    }

    /// Writes each report (atomically: a reader never sees half of one); failures are said on stderr.
    static func writeReports(_ snapshot: FindingsReport?, _ settings: ReportSettings) {
        guard let snapshot, !settings.files.isEmpty else { return }
        for (format, path) in settings.files {
            let text =
                format == "junit"
                ? snapshot.junit(name: "cookie-proxy run") + "\n"
                : snapshot.sarif(toolVersion: cookieProxyVersion) + "\n"
            do {
                try text.write(toFile: path, atomically: true, encoding: .utf8)
            } catch {
                Console.err("cookie-proxy: --report \(format):\(path): \(error.localizedDescription)")
            }
        }
    }

    /// The exit status the report gives: 1 when it meets a `--fail-on` condition (said on stderr), else 0.
    static func reportStatus(_ snapshot: FindingsReport?, _ settings: ReportSettings) -> Int32 {
        guard let snapshot, !settings.failOn.isEmpty else { return 0 }
        guard snapshot.fails(settings.failOn) else { return 0 }
        let counts = Dictionary(grouping: snapshot.entries, by: \.level).mapValues { $0.count }
        Console.err(
            "cookie-proxy: --fail-on \(settings.failOn.map(\.rawValue).sorted().joined(separator: ",")): "
                + "\(counts[.rejects] ?? 0) rejected, \(counts[.warning] ?? 0) warned, \(counts[.verdict] ?? 0) verdicts"
                + " (by host and cookie)")
        return 1
    }
}
