import ArgumentParsing
import Foundation
import ProxyApp
import SiteAudit

/// `cookie-proxy audit URL --browser chromium`: the options read into ``SiteAuditRun/Options``, the report printed.
extension AuditCommand {
    static func runBrowser(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        guard args.positionals.count == 1 else {
            throw UsageError(
                message: "give one URL, e.g. cookie-proxy audit --browser chromium https://shop.example/",
                command: spec.name)
        }
        let format = try args.choice(Option.format, command: spec.name)
        guard format == "text" || format == "json" else {
            throw UsageError(
                message: "--browser writes text or json (--format \(format) is not yet)", command: spec.name)
        }
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
        o.upstreamCAFile = args.value(Option.upstreamCa)
        o.insecureHosts = Set(args.all(Option.insecureUpstream).map { $0.lowercased() })
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
        let scan: SiteScan
        do {
            scan = try SiteAuditRun.run(o) { Console.err($0) }
            if let out { try SiteAuditRun.writeEvidence(scan, to: out) }
        } catch {
            Console.err("error: \(error.description)")
            return 2
        }
        Console.out(format == "json" ? scan.json.serialized : scan.text)
        guard scan.pages.contains(where: { $0.status != nil }) else {
            Console.err("error: no page could be scanned (each page's problem is in the report)")
            return 2
        }
        let beforeConsent = scan.cookies.contains { $0.findings.contains("set-before-consent") }
        return scan.refused.isEmpty && !beforeConsent ? 0 : 1
    }
}
