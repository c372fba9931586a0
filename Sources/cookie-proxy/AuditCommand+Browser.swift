import ArgumentParsing
import BrowserEngines
import Foundation
import ProxyApp
import ProxyConsole
import SiteAudit
import SiteAuditRunner
import Terminal

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `cookie-proxy audit URL --browser chromium`: the options read into ``SiteAuditRun/Options``, the report printed.
extension AuditCommand {
    static func runBrowser(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        guard args.positionals.count == 1 else {
            throw UsageError(
                message: "give one URL, e.g. cookie-proxy audit --browser chromium https://shop.example/",
                command: spec.name)
        }
        let format = try args.choice(Option.format, command: spec.name)
        var o = SiteAuditRun.Options(url: args.positionals[0])

        o.pages = try args.integer(Option.pages, in: 1...10_000, orDefault: true, command: spec.name) ?? 10
        if let seed = args.value(Option.seed) {
            guard let n = UInt64(seed) else {
                throw UsageError(message: "--seed '\(seed)' must be a whole number", command: spec.name)
            }
            o.seed = n
        }
        o.wait = try args.seconds(Option.wait, orDefault: true, command: spec.name) ?? 10
        let consent = try args.choice(Option.consent, command: spec.name)
        o.states = consent == "all" ? ConsentState.allCases : [ConsentState(rawValue: consent)!]
        o.acceptSelector = args.value(Option.accept)
        o.rejectSelector = args.value(Option.reject)
        for entry in args.all(Option.resolve) {
            let (host, address) = try RunCommand.resolveEntry(entry, command: spec.name)
            o.resolve[host.lowercased()] = address
        }
        o.upstreamCAFile = args.value(RuntimeOptions.Option.upstreamCa)
        o.insecureHosts = Set(args.all(RuntimeOptions.Option.insecureUpstream).map { $0.lowercased() })
        let engineName = try args.choice(Option.browser, command: spec.name)
        // `all`: every engine the audit drives, one after the other, on the same pages.
        let engines: [Browser] = engineName == "all" ? Browser.allCases : [Browser(rawValue: engineName)!]
        if engines.count > 1, format == "junit" || format == "sarif" {
            throw UsageError(
                message: "--format \(format) takes one engine: run --browser with each engine in turn",
                command: spec.name)
        }
        o.thirdParty = ThirdPartyCookies(rawValue: try args.choice(Option.thirdParty, command: spec.name))!
        if let path = args.value(Option.policy) {
            do {
                o.policy = try SiteAuditRun.policy(file: path)
            } catch {
                Console.err("\(error)")
                return 2
            }
        }
        var failOn = SiteScan.defaultFailKinds(policy: o.policy != nil)
        if let given = args.value(Option.failOn) {
            let read = SiteScan.failKinds(given)
            if let unknown = read.unknown {
                throw UsageError(
                    message: "--fail-on '\(unknown)': the kinds are \(SiteScan.failKinds.joined(separator: ", "))",
                    command: spec.name)
            }
            failOn = read.kinds
        }
        if let path = args.value(Option.rules) {
            do {
                o.rules = (path, try RulesFiles.load(path))
            } catch {
                Console.err("\(error)")
                return 2
            }
        }
        let out = args.value(Option.out)
        if let out {
            do {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            } catch {
                Console.err("error: cannot create \(out): \(error.localizedDescription)")
                return 2
            }
            o.screenshots = out
        }
        let (outcome, interrupted) = SiteAuditRun.runInForeground(
            engines: engines, o, out: out, terminal: isatty(2) == 1)
        for error in outcome.errors { Console.err("error: \(error)") }
        if !outcome.errors.isEmpty && engines.count == 1 { return 2 }
        guard !outcome.scans.isEmpty else { return 2 }
        Console.document(outcome.report(format: format))
        if interrupted { return 130 }
        guard outcome.reachedAny else {
            Console.err("error: no page could be scanned (each page's problem is in the report)")
            return 2
        }
        let failures = outcome.failures(of: failOn)
        for line in failures { Console.err("fails: \(line)") }
        return failures.isEmpty ? 0 : 1
    }
}
