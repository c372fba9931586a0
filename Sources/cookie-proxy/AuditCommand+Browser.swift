import ArgumentParsing
import Locking
import ProxyPlatform
import BrowserEngines
import CookieKit
import Foundation
import ProxyApp
import SiteAudit

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
        o.upstreamCAFile = args.value(Option.upstreamCa)
        o.insecureHosts = Set(args.all(Option.insecureUpstream).map { $0.lowercased() })
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
                let text = try String(contentsOfFile: path, encoding: .utf8)
                o.policy = try CookiePolicy(text: text, file: path)
            } catch let error as PolicyError {
                Console.err("\(error)")
                return 2
            } catch {
                Console.err("error: cannot read \(path): \(error.localizedDescription)")
                return 2
            }
        }
        var failOn: Set<String> = o.policy == nil ? kinds.defaults : kinds.defaults.union(["undeclared", "violations"])
        if let given = args.value(Option.failOn) {
            failOn = Set(given.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
            if let unknown = failOn.first(where: { !kinds.all.contains($0) }) {
                throw UsageError(
                    message: "--fail-on '\(unknown)': the kinds are \(kinds.all.joined(separator: ", "))",
                    command: spec.name)
            }
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
        // The audit runs on a thread of its own; this one waits for it or for SIGINT/SIGTERM, which stop it after
        // the page in hand: the browsers and the proxy are stopped, and what was visited is reported.
        var signals = BlockedSignals([SIGINT, SIGTERM])
        let stop = Locked(false)
        let done = Locked<(scans: [SiteScan], failed: Bool)?>(nil)
        o.cancelled = { stop.withLock { $0 } }
        let bar = ProgressBar(terminal: isatty(2) == 1)
        let options = o
        let worker = Thread {
            var scans: [SiteScan] = []
            var failed = false
            for engine in engines where !options.cancelled() {
                var one = options
                one.engine = engine
                if let out, engines.count > 1 {
                    // Each engine's evidence in a folder of its own.
                    one.screenshots = "\(out)/\(engine.rawValue)"
                    try? FileManager.default.createDirectory(
                        atPath: one.screenshots!, withIntermediateDirectories: true)
                }
                do {
                    let scan = try SiteAuditRun.run(one) { step in
                        bar.show(step, engine: engines.count > 1 ? engine.rawValue : nil)
                    }
                    if let folder = one.screenshots { try SiteAuditRun.writeEvidence(scan, to: folder) }
                    scans.append(scan)
                } catch {
                    Console.err("error: \(engine.title): \(error)")
                    failed = true
                }
            }
            done.withLock { $0 = (scans, failed) }
        }
        worker.start()
        var interrupted = false
        while done.withLock({ $0 == nil }) {
            if signals.wait(milliseconds: 100) != 0, !interrupted {
                interrupted = true
                stop.withLock { $0 = true }
                Console.err("interrupted: stopping after the page in hand; the pages visited are reported")
            }
        }
        bar.finish()
        let (scans, errored) = done.withLock { $0! }
        if errored && engines.count == 1 { return 2 }
        guard let scan = scans.first else { return 2 }
        if scans.count > 1 {
            let sideBySide = EngineComparison(scans)
            if format == "json" {
                Console.out(
                    JSONValue.object([
                        ("engines", .object(scans.map { ($0.engine, $0.json) })), ("sideBySide", sideBySide.json),
                    ]).serialized)
            } else {
                Console.out(scans.map(\.text).joined(separator: "\n") + "\n" + sideBySide.text)
            }
        } else {
            switch format {
            case "json": Console.out(scan.json.serialized)
            case "junit": Console.out(scan.junit)
            case "sarif":
                Console.out(
                    scan.sarif(toolVersion: cookieProxyVersion, time: Int64(Date().timeIntervalSince1970 * 1000)))
            default: Console.out(scan.text)
            }
        }
        if interrupted { return 130 }
        guard scans.contains(where: { $0.pages.contains(where: \.reached) }) else {
            Console.err("error: no page could be scanned (each page's problem is in the report)")
            return 2
        }
        var failed = false
        for s in scans {
            for line in s.failures(of: failOn) {
                Console.err(scans.count > 1 ? "fails (\(s.engine)): \(line)" : "fails: \(line)")
                failed = true
            }
        }
        return failed ? 1 : 0
    }

    /// `--fail-on`'s kinds, and those that fail a run without it.
    static let kinds = (
        all: ["undeclared", "violations", "rejects", "set-before-consent"],
        defaults: Set(["rejects", "set-before-consent"])
    )
}

/// `audit --browser`'s progress on stderr: a line per page, or on a terminal one line redrawn in place with a bar.
final class ProgressBar: @unchecked Sendable {
    private let terminal: Bool
    private let drawn = Locked(false)

    init(terminal: Bool) { self.terminal = terminal }

    func show(_ step: SiteAuditRun.Progress, engine: String?) {
        let who = engine.map { "\($0) " } ?? ""
        guard terminal, step.message == nil else {
            finish()
            Console.err(who + step.line)
            return
        }
        let width = 20
        let done = step.pages > 0 ? min(width, step.page * width / step.pages) : 0
        let bar = String(repeating: "#", count: done) + String(repeating: "-", count: width - done)
        let tag = "\(step.pass.isEmpty ? "" : step.pass + "-")\(step.state.rawValue)"
        let text = "\(who)[\(tag)] [\(bar)] \(step.page)/\(step.pages) \(step.url)"
        // Carriage return and erase-line: the line is redrawn, not added to.
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + String(text.prefix(160))).utf8))
        drawn.withLock { $0 = true }
    }

    /// Ends the redrawn line, if one was drawn.
    func finish() {
        if drawn.withLock({
            let was = $0; $0 = false; return was
        }) {
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }
}
