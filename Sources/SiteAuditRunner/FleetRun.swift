import BrowserEngines
import BuildVersion
import CookieReports
import Foundation
import JSONStream
import Locking
import SiteAudit
import Terminal

/// `audit --browser ENGINE --urls FILE`: each site of the list (or of its shard) audited in turn with the same
/// options, as `audit URL --browser ENGINE` would audit it alone; with `--out DIR`, each site's evidence in a folder
/// of its own and the fleet's report beside them (`fleet.json`, `fleet.txt`, `fleet.html`, a manifest over all).
public enum FleetRun {
    public struct Options: Sendable {
        /// The sites to audit (already the shard's, with `--shard`).
        public var sites: [FleetList.Site]
        /// What every site is audited with (its `url` is each site's).
        public var site: SiteAuditRun.Options
        public var out: String?
        /// What a site fails on (`--fail-on`).
        public var failOn: Set<String>
        /// `K/N` with `--shard`.
        public var shard: String?
        /// `--parallel`: how many sites are audited at once, each with its own proxy and browser.
        public var parallel = 1

        public init(sites: [FleetList.Site], site: SiteAuditRun.Options, failOn: Set<String>) {
            (self.sites, self.site, self.failOn) = (sites, site, failOn)
        }
    }

    /// The fleet's report, and each site's scan (in memory, for `--format junit|sarif`).
    public struct Outcome: Sendable {
        public var report: FleetReport
        public var scans: [(site: String, scan: SiteScan)]
        /// A fleet file that could not be written.
        public var errors: [String]

        /// The fleet in `format`: text and json as `fleet.txt` and `fleet.json`; junit and sarif every site's
        /// suites or results in one document.
        public func document(format: String) -> String {
            switch format {
            case "json": return report.json.serialized
            case "junit":
                var junit = JUnitReport()
                for (site, scan) in scans { scan.addJUnit(to: &junit, site: site) }
                return junit.text(name: "cookie-proxy audit --browser \(report.engine) --urls")
            case "sarif":
                var findings = FindingsReport()
                let time = Int64(Date().timeIntervalSince1970 * 1000)
                for (_, scan) in scans { scan.addFindings(to: &findings, time: time) }
                return findings.sarif(toolVersion: cookieProxyBuildVersion)
            default: return report.text.text
            }
        }
    }

    /// Where the fleet is, for the progress bar: the sites done of how many, the pages visited so far over the
    /// fleet, and the sites that failed or could not be audited.
    public struct Status: Sendable {
        /// Sites done, of how many.
        public var done: Int
        public var sites: Int
        public var pages: Int
        public var failing: Int
        public var started: Date

        /// `3/20 sites done · 37 pages, 41.2/min · 1 failing`.
        public var line: String {
            let minutes = max(Date().timeIntervalSince(started) / 60, 1.0 / 60)
            let pace = (Double(pages) / minutes * 10).rounded() / 10
            return "\(done)/\(sites) sites done · \(pages) pages, \(pace)/min · \(failing) failing"
        }
    }

    /// `--parallel`'s default for `engine` on this machine: sites at once, and why. Each site's browser waits far
    /// more than it computes (a page's idle timers: an audit uses about a sixth of the cores it runs on, measured in
    /// docs/benchmarks.md), so two per core; and as many as the memory available holds at the engine's measured
    /// peak (Chromium about 1 GiB, Firefox 1.3 GiB, WebKitGTK 0.7 GiB, each with its proxy) with a quarter left over.
    public static func defaultParallel(_ engine: Browser) -> (sites: Int, why: String) {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let peak: Double =
            switch engine {
            case .chromium: 1.1
            case .firefox: 1.35
            case .webkit: 0.7
            }
        let available = Self.availableMemoryGiB()
        let byMemory = Int(available * 0.75 / peak)
        let sites = max(1, min(2 * cores, byMemory, 16))
        let memory = (available * 10).rounded() / 10
        return (
            sites,
            "\(cores) core(s), \(memory) GiB available, \(engine.title) near \(peak) GiB a browser"
        )
    }

    /// The memory available to new processes (Linux: /proc/meminfo's MemAvailable), else the physical memory.
    static func availableMemoryGiB() -> Double {
        if let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("MemAvailable:") }),
            let kiB = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        {
            return kiB / 1_048_576
        }
        return Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824
    }

    /// Runs the fleet in the foreground (SIGINT or SIGTERM stop it after the page in hand: the sites done are
    /// reported, the rest named as not visited), its progress on standard error.
    public static func runInForeground(_ o: Options, terminal: Bool) -> (outcome: Outcome, interrupted: Bool) {
        SiteAuditRun.inForeground(o.site, terminal: terminal) { site, bar in
            var o = o
            o.site = site
            return run(o, bar: bar)
        }
    }

    static func run(_ o: Options, bar: ProgressBar) -> Outcome {
        let count = o.sites.count
        // Each site's outcome in its list position: the report is the same whichever site ended first.
        let results = Locked<[(record: FleetSite, scan: SiteScan?)?]>(Array(repeating: nil, count: count))
        let status = Locked(Status(done: 0, sites: count, pages: 0, failing: 0, started: Date()))
        let next = Locked(0)
        let label = o.parallel > 1
        // `parallel` workers take the next site of the list until none is left (or the run is cancelled).
        let work: @Sendable () -> Void = {
            while !o.site.cancelled() {
                let i = next.withLock { n in
                    defer { n += 1 }
                    return n
                }
                guard i < count else { return }
                let site = o.sites[i]
                bar.fleet(status.withLock { $0.line })
                bar.say("site \(i + 1)/\(count): \(site.url)")
                let (record, scan) = audit(site, o) { step in
                    let line = status.withLock { s in
                        if step.message == nil { s.pages += 1 }
                        return s.line
                    }
                    bar.fleet(line)
                    bar.show(step, who: label ? site.folder : nil)
                }
                bar.fleet(
                    status.withLock { s in
                        if record.status != 0 { s.failing += 1 }
                        s.done += 1
                        return s.line
                    })
                bar.say(
                    "site \(i + 1)/\(count): \(site.site): \(record.pagesReached)/\(record.pagesVisited) pages"
                        + " reached, \(record.cookies.count) cookie(s)"
                        + (record.status == 0 ? "" : record.status == 1 ? ", fails" : ", not audited"))
                // A site the interrupt came to before its first page was not visited (it is named so).
                if o.site.cancelled(), record.pagesVisited == 0 { return }
                results.withLock { $0[i] = (record, scan) }
            }
        }
        together(max(1, min(o.parallel, count))) { _ in work() }
        bar.fleet(nil)
        let held = results.withLock { $0 }
        var sites: [FleetSite] = []
        var scans: [(String, SiteScan)] = []
        var notVisited: [String] = []
        for (i, result) in held.enumerated() {
            guard let result else {
                notVisited.append(o.sites[i].site)
                continue
            }
            sites.append(result.record)
            if let scan = result.scan { scans.append((o.sites[i].site, scan)) }
        }
        let report = FleetReport(
            engine: o.site.engine.rawValue, sites: sites, shards: o.shard.map { [$0] } ?? [], notVisited: notVisited)
        var errors: [String] = []
        if let out = o.out {
            do {
                try write(report, to: out)
            } catch {
                errors.append(error.description)
            }
        }
        return Outcome(report: report, scans: scans, errors: errors)
    }

    /// One site audited as `audit URL --browser` would alone, its evidence in its folder under `out`: its fleet row
    /// and its scan (nil when it could not be audited).
    static func audit(
        _ site: FleetList.Site, _ o: Options, progress: @escaping @Sendable (SiteAuditRun.Progress) -> Void
    ) -> (
        FleetSite, SiteScan?
    ) {
        var one = o.site
        one.url = site.url
        if let out = o.out {
            let folder = "\(out)/\(site.folder)"
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                let why = "cannot create \(folder): \(error.localizedDescription)"
                return (FleetSite(site, engine: one.engine.rawValue, error: why), nil)
            }
            one.screenshots = folder
        }
        do {
            let scan = try SiteAuditRun.run(one, progress: progress)
            let failures = scan.failures(of: o.failOn)
            if let folder = one.screenshots { try SiteAuditRun.writeEvidence(scan, to: folder) }
            return (FleetSite(site, scan: scan, failures: failures), scan)
        } catch {
            return (FleetSite(site, engine: one.engine.rawValue, error: error.description), nil)
        }
    }

    /// `fleet.json`, `fleet.txt`, `fleet.html` in `folder`, and `manifest.json` over every file in it and its
    /// sites' folders.
    public static func write(_ report: FleetReport, to folder: String) throws(SiteAuditRun.Failure) {
        do {
            try SiteAuditRun.write(
                [("fleet.json", report.json.serialized), ("fleet.txt", report.text.text), ("fleet.html", report.html)],
                in: folder, recursive: true)
        } catch {
            throw SiteAuditRun.Failure(
                description: "cannot write the fleet's report in \(folder): \(error.localizedDescription)")
        }
    }

    /// `report merge DIR… --out MERGED`: the shards' fleets as one, each site's folder copied into `out`. A site
    /// in two of them is refused, as are fleets of different engines. The merged report, and what is worth a
    /// warning (shards missing from a `K/N` set).
    public static func merge(_ folders: [String], out: String) throws(SiteAuditRun.Failure) -> (
        report: FleetReport, warnings: [String]
    ) {
        var engine: String? = nil
        var sites: [FleetSite] = []
        var from: [String: String] = [:]
        var shards: [String] = []
        var notVisited: [String] = []
        for folder in folders {
            let fleet: FleetReport
            do {
                let file = "\(folder)/fleet.json"
                fleet = try FleetReport(text: try String(contentsOfFile: file, encoding: .utf8), file: file)
            } catch let error as ReportReadFailure {
                throw SiteAuditRun.Failure(description: error.description)
            } catch {
                throw SiteAuditRun.Failure(description: "cannot read \(folder)/fleet.json: \(error)")
            }
            if let engine, engine != fleet.engine {
                throw SiteAuditRun.Failure(
                    description: "\(folder) is a \(fleet.engine) fleet, the others \(engine): merge one engine's shards"
                )
            }
            engine = fleet.engine
            for site in fleet.sites {
                if let other = from[site.site] {
                    throw SiteAuditRun.Failure(description: "\(site.site) is in both \(other) and \(folder)")
                }
                from[site.site] = folder
                sites.append(site)
            }
            shards += fleet.shards
            notVisited += fleet.notVisited
        }
        guard let engine else { throw SiteAuditRun.Failure(description: "no folder to merge") }
        var warnings: [String] = []
        let counts = Set(shards.compactMap { $0.split(separator: "/").last.flatMap { Int($0) } })
        if counts.count > 1 {
            warnings.append("the shards are of different splits (\(shards.joined(separator: ", ")))")
        } else if let n = counts.first {
            let missing = (1...n).map { "\($0)/\(n)" }.filter { !shards.contains($0) }
            if !missing.isEmpty { warnings.append("shard(s) \(missing.joined(separator: ", ")) not merged") }
        }
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            for site in sites {
                let target = "\(out)/\(site.folder)"
                let source = "\(from[site.site]!)/\(site.folder)"
                guard FileManager.default.fileExists(atPath: source) else { continue }
                if FileManager.default.fileExists(atPath: target) {
                    throw SiteAuditRun.Failure(description: "\(target) exists: merge into a new folder")
                }
                try FileManager.default.copyItem(atPath: source, toPath: target)
            }
        } catch let error as SiteAuditRun.Failure {
            throw error
        } catch {
            throw SiteAuditRun.Failure(description: "cannot copy the sites into \(out): \(error.localizedDescription)")
        }
        let report = FleetReport(engine: engine, sites: sites, shards: shards, notVisited: notVisited)
        try write(report, to: out)
        return (report, warnings)
    }
}

extension AuditSnapshot {
    /// `--baseline PATH` and `report diff`'s sides: a folder (its `fleet.json`, else its `report.json`), or the
    /// file itself.
    public static func load(_ path: String) throws(ReportReadFailure) -> AuditSnapshot {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ReportReadFailure(description: "\(path): no such file or folder")
        }
        var file = path
        if isDirectory.boolValue {
            file =
                ["fleet.json", "report.json"].map { "\(path)/\($0)" }.first {
                    FileManager.default.fileExists(atPath: $0)
                } ?? ""
            guard !file.isEmpty else {
                throw ReportReadFailure(
                    description: "\(path) has neither a fleet.json nor a report.json (an --out folder)")
            }
        }
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ReportReadFailure(description: "cannot read \(file): \(error.localizedDescription)")
        }
        return try AuditSnapshot(text: text, file: file, path: path)
    }
}
