import ArgumentParsing
import CookieReports
import Foundation
import ProxyApp
import ProxyConsole

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

    static func reportSettings(_ args: ParsedArguments) throws(UsageError) -> RunReports {
        var settings = RunReports()
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
}
