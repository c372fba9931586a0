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
        let urls = args.value(Option.urls)
        if urls != nil, !args.positionals.isEmpty {
            throw UsageError(
                message: "give the sites either in --urls FILE or as one URL, not both", command: spec.name)
        }
        guard urls != nil || args.positionals.count == 1 else {
            throw UsageError(
                message:
                    "give one URL, e.g. cookie-proxy audit --browser chromium https://shop.example/, or --urls FILE",
                command: spec.name)
        }
        if urls == nil, args.value(Option.shard) != nil {
            throw UsageError(message: "--shard splits a --urls list: give --urls FILE", command: spec.name)
        }
        let format = try args.choice(Option.format, command: spec.name)
        var o = SiteAuditRun.Options(url: args.positionals.first ?? "")

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
        o.sitemap = args.flag(Option.sitemap)
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
        if let path = args.value(Option.baseline) {
            do {
                o.baseline = try AuditSnapshot.load(path)
            } catch {
                Console.err("error: --baseline: \(error)")
                return 2
            }
        } else if let kind = BaselineComparison.failKinds.first(where: failOn.contains) {
            throw UsageError(
                message: "--fail-on \(kind) compares with an earlier run: give --baseline PATH", command: spec.name)
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
        if let urls {
            guard engines.count == 1 else {
                throw UsageError(
                    message: "--urls audits with one engine: run it once per engine (--browser all is one site's)",
                    command: spec.name)
            }
            o.engine = engines[0]
            return try runFleet(urls, o, failOn: failOn, out: out, format: format, args)
        }
        // One site: its consent states at once (a browser and a proxy each), as many as the machine allows.
        if let n = try args.integer(Option.parallel, in: 1...64, orDefault: false, command: spec.name) {
            o.parallel = n
        } else if o.states.count > 1 {
            let chosen = FleetRun.defaultParallel(o.engine)
            o.parallel = min(chosen.sites, o.states.count)
            Console.err(
                "\(o.parallel) consent state(s) at once: \(chosen.why) (--parallel N to choose)")
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

    /// `--urls FILE` (and `--shard K/N`): the fleet audited site by site, its report printed in `format`.
    static func runFleet(
        _ file: String, _ o: SiteAuditRun.Options, failOn: Set<String>, out: String?, format: String,
        _ args: ParsedArguments
    ) throws(UsageError) -> Int32 {
        let parallel = try args.integer(Option.parallel, in: 1...64, orDefault: false, command: spec.name)
        let list: FleetList
        do {
            list = try FleetList(text: try String(contentsOfFile: file, encoding: .utf8), file: file)
        } catch let error as FleetList.Failure {
            Console.err("error: --urls: \(error)")
            return 2
        } catch {
            Console.err("error: --urls: cannot read \(file): \(error.localizedDescription)")
            return 2
        }
        var fleet = FleetRun.Options(sites: list.sites, site: o, failOn: failOn)
        fleet.out = out
        if let shard = args.value(Option.shard) {
            let (k, n): (Int, Int)
            do {
                (k, n) = try FleetList.shard(shard, environment: ProcessInfo.processInfo.environment)
            } catch {
                throw UsageError(message: error.description, command: spec.name)
            }
            fleet.sites = list.shard(k, of: n)
            fleet.shard = "\(k)/\(n)"
            Console.err("shard \(k)/\(n): \(fleet.sites.count) of the \(list.sites.count) site(s) in \(file)")
        }
        if let n = parallel {
            fleet.parallel = n
        } else {
            let chosen = FleetRun.defaultParallel(o.engine)
            fleet.parallel = chosen.sites
            Console.err("\(chosen.sites) site(s) at once: \(chosen.why) (--parallel N to choose)")
        }
        let (outcome, interrupted) = FleetRun.runInForeground(fleet, terminal: isatty(2) == 1)
        for error in outcome.errors { Console.err("error: \(error)") }
        Console.document(outcome.document(format: format))
        if interrupted { return 130 }
        for site in outcome.report.sites {
            if let error = site.error { Console.err("error: \(site.site): \(error)") }
            for line in site.failures { Console.err("fails: \(site.site): \(line)") }
        }
        // An empty shard has nothing to fail on.
        if fleet.sites.isEmpty { return 0 }
        return outcome.errors.isEmpty ? outcome.report.status : 2
    }
}
