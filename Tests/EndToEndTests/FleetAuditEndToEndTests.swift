import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `audit --browser chromium --urls FILE` on a local fleet (Fixtures/fleet_sites.py: five https sites on one port,
/// told apart by Host, with a CA of the test's own), served in two versions: the fleet's report against the sites'
/// own table, the second version against the first as a baseline, `report diff`, and three shards merged against
/// the whole list run at once. Real Chromium through the proxy each site's audit starts.
@Suite(.serialized) struct FleetAuditEndToEndTests {
    static let names = ["alpha", "beta", "gamma", "delta", "epsilon"]

    final class Fleet: Sendable {
        let process: TestProcess
        let port: Int
        let ca: TestCA
        let versionFile: String
        let list: String
        init() throws {
            ca = try TestCA(names: FleetAuditEndToEndTests.names.map { "\($0).test" })
            versionFile = ca.dir + "/version"
            try "1".write(toFile: versionFile, atomically: true, encoding: .utf8)
            process = try TestProcess(
                Paths.which("python3"), ["-u", Paths.fixtures + "/fleet_sites.py", ca.cert, ca.key, versionFile])
            port = Int(try process.waitForLine(startingWith: "PORT ").dropFirst(5))!
            list = ca.dir + "/sites.txt"
            let lines = FleetAuditEndToEndTests.names.map { "https://\($0).test:\(port)/" }
            try ("# the fleet\n" + lines.joined(separator: "\n") + "\n").write(
                toFile: list, atomically: true, encoding: .utf8)
        }
        func serve(version: Int) throws {
            try "\(version)".write(toFile: versionFile, atomically: true, encoding: .utf8)
        }
        func folder(_ name: String) -> String { ca.dir + "/" + name }
        func audit(_ extra: [String]) throws -> CommandResult {
            try run(
                Paths.binary,
                [
                    "audit", "--browser", "chromium", "--consent", "none", "--pages", "3", "--wait", "8", "--urls",
                    list,
                    "--upstream-ca", ca.caCert,
                ]
                    + FleetAuditEndToEndTests.names.flatMap { ["--resolve", "\($0).test:127.0.0.1"] } + extra,
                timeout: 600)
        }
        func site(_ name: String) -> String { "https://\(name).test:\(port)" }
    }

    static func object(_ path: String) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    static func sites(_ fleet: [String: Any]) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for s in fleet["sites"] as? [[String: Any]] ?? [] { out[s["site"] as? String ?? ""] = s }
        return out
    }

    /// Each site's cookies by name, `setBy/category` each.
    static let table: [String: [String: String]] = [
        "alpha": ["sid": "http/unknown", "_ga": "script/analytics"],
        "beta": ["sid": "http/unknown", "_fbp": "http/marketing"],
        "gamma": ["sid": "http/unknown", "lang": "http/functional"],
        "delta": ["sid": "http/unknown", "tmp": "http/unknown"],
        "epsilon": ["sid": "http/unknown"],
    ]

    /// A fleet.json without what differs between two runs of the same sites: the shards it holds, and each
    /// cookie's lifetime to the hour (counted from when the store was read).
    static func comparable(_ fleet: [String: Any]) throws -> String {
        var fleet = fleet
        var head = fleet["fleet"] as? [String: Any] ?? [:]
        head["shards"] = nil
        fleet["fleet"] = head
        fleet["sites"] = (fleet["sites"] as? [[String: Any]] ?? []).map { site in
            var site = site
            site["cookieList"] = (site["cookieList"] as? [[String: Any]] ?? []).map { c in
                var c = c
                if let seconds = c["lifetime"] as? Int { c["lifetime"] = (seconds + 1800) / 3600 }
                return c
            }
            return site
        }
        return String(
            decoding: try JSONSerialization.data(withJSONObject: fleet, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test func aFleetIsAuditedComparedWithItsBaselineDiffedAndShardedIntoTheSameReport() throws {
        let fleet = try Fleet()

        // 1. The whole fleet, version 1: a folder per site, the fleet's report, status 1 (alpha's _ga and beta's _fbp before consent).
        // Three sites at once here; the shards below one at a time: the merge compared with this run is also
        // parallel against serial.
        let first = try fleet.audit(["--out", fleet.folder("v1"), "--format", "json", "--parallel", "3"])
        #expect(first.status == 1, "\(first.stderr)")
        #expect(first.stderr.contains("site 5/5: https://epsilon.test:\(fleet.port)/"), "\(first.stderr)")
        #expect(
            first.stderr.contains("fails: \(fleet.site("beta")): _fbp (beta.test): set-before-consent"),
            "\(first.stderr)")
        let v1 = try Self.object(fleet.folder("v1") + "/fleet.json")
        let written = try String(contentsOfFile: fleet.folder("v1") + "/fleet.json", encoding: .utf8)
        #expect(first.text.trimmingCharacters(in: .newlines) == written.trimmingCharacters(in: .newlines))
        let sites = Self.sites(v1)
        #expect(sites.count == 5)
        for name in Self.names {
            let site = try #require(sites[fleet.site(name)], "\(name) missing: \(sites.keys)")
            let cookies = site["cookieList"] as? [[String: Any]] ?? []
            var seen: [String: String] = [:]
            for c in cookies {
                seen[c["name"] as? String ?? ""] = "\(c["setBy"] as? String ?? "")/\(c["category"] as? String ?? "")"
            }
            #expect(seen == Self.table[name], "\(name)")
            #expect((site["pages"] as? [String: Any])?["reached"] as? Int == 3, "\(name): \(site)")
            // alpha's _ga and beta's _fbp are there before any consent.
            #expect(
                site["status"] as? Int == (name == "alpha" || name == "beta" ? 1 : 0),
                "\(name): \(site["failures"] ?? "")")
            let folder = fleet.folder("v1") + "/" + (site["folder"] as? String ?? "")
            #expect(FileManager.default.fileExists(atPath: folder + "/report.json"), "\(folder)")
            #expect(FileManager.default.fileExists(atPath: folder + "/report.html"), "\(folder)")
        }
        let names = v1["cookies"] as? [[String: Any]] ?? []
        #expect(names.first?["name"] as? String == "sid")
        #expect((names.first?["sites"] as? [String])?.count == 5)
        // fleet.html in Chromium at 1024 and 1920 px: no horizontal scrolling, a row per name in the table by name.
        let layout = try run(
            Paths.root + "/.build/test-python/bin/python",
            [Paths.fixtures + "/report_layout.py", fleet.folder("v1") + "/fleet.html", "1024", "1920"])
        #expect(layout.status == 0, "\(layout.stderr)")
        let widths = try #require(try JSONSerialization.jsonObject(with: layout.stdout) as? [String: [String: Any]])
        for width in ["1024", "1920"] {
            let facts = try #require(widths[width], "\(layout.text)")
            #expect(facts["scrollWidth"] as? Int ?? .max <= facts["innerWidth"] as? Int ?? 0, "\(width) px: \(facts)")
            #expect(facts["cookieRows"] as? Int == names.count, "\(width) px: \(facts)")
        }
        let manifest = try Self.object(fleet.folder("v1") + "/manifest.json")["files"] as? [String: Any] ?? [:]
        #expect(manifest["fleet.html"] != nil && manifest["alpha.test-\(fleet.port)/report.json"] != nil)

        // 2. Version 2 with version 1 as the baseline: exactly the changes the fixture made.
        try fleet.serve(version: 2)
        let second = try fleet.audit([
            "--out", fleet.folder("v2"), "--baseline", fleet.folder("v1"), "--fail-on", "new,changed",
        ])
        #expect(second.status == 1, "\(second.stderr)")
        let v2 = try Self.object(fleet.folder("v2") + "/fleet.json")
        var changes: [String] = []
        for (site, row) in Self.sites(v2).sorted(by: { $0.key < $1.key }) {
            let baseline = row["baseline"] as? [String: Any] ?? [:]
            for c in baseline["cookies"] as? [[String: Any]] ?? [] where c["change"] as? String != "same" {
                // A lifetime is read from when the store was (`about 24 hours` or `1 day`): its fact's name only.
                let facts = (c["facts"] as? [[String: Any]] ?? []).map {
                    $0["fact"] as? String == "lifetime"
                        ? "lifetime" : "\($0["fact"] ?? ""):\($0["before"] ?? "")>\($0["after"] ?? "")"
                }
                changes.append(
                    "\(site.dropFirst(8).prefix { $0 != "." }) \(c["change"] ?? "") \(c["name"] ?? "") \(facts.joined(separator: ","))"
                )
            }
        }
        let expected = [
            "alpha new promo ", "delta gone tmp ", "gamma changed lang sameSite:Default>Strict,lifetime",
        ]
        #expect(changes == expected)
        #expect(
            ((v2["fleet"] as? [String: Any])?["changes"] as? [String: Int]) == [
                "new": 1, "changed": 1, "gone": 1, "same": 7,
            ])
        #expect(second.stderr.contains("fails: \(fleet.site("alpha")): new: promo"), "\(second.stderr)")
        let text = try String(contentsOfFile: fleet.folder("v2") + "/fleet.txt", encoding: .utf8)
        #expect(text.contains("since the baseline: 1 new, 1 changed, 1 gone, 7 same"), "\(text)")

        // 3. report diff says the same of the two folders, without auditing.
        let diff = try run(
            Paths.binary, ["report", "diff", fleet.folder("v1"), fleet.folder("v2"), "--format", "json"])
        #expect(diff.status == 1, "\(diff.stderr)")
        let diffed = try #require(try JSONSerialization.jsonObject(with: diff.stdout) as? [String: Any])
        #expect((diffed["counts"] as? [String: Int]) == ["new": 1, "changed": 1, "gone": 1, "same": 7])
        let same = try run(Paths.binary, ["report", "diff", fleet.folder("v1"), fleet.folder("v1")])
        #expect(same.status == 0, "\(same.text)")
        #expect(same.text.contains("0 new, 0 changed, 0 gone, 9 same"), "\(same.text)")

        // 4. Version 1 again in three shards, merged: the same report as the whole list run at once.
        try fleet.serve(version: 1)
        var shardSites = 0
        for k in 1...3 {
            let shard = try fleet.audit(
                ["--shard", "\(k)/3", "--parallel", "1", "--out", fleet.folder("shard\(k)"), "--format", "json"])
            #expect(shard.status <= 1, "\(shard.stderr)")
            shardSites += Self.sites(try Self.object(fleet.folder("shard\(k)") + "/fleet.json")).count
        }
        #expect(shardSites == 5)
        let merged = try run(
            Paths.binary,
            ["report", "merge", fleet.folder("shard1"), fleet.folder("shard2"), fleet.folder("shard3"), "--out"]
                + [fleet.folder("merged")])
        #expect(merged.status == 1, "\(merged.stderr)")
        #expect(!merged.stderr.contains("warning"), "\(merged.stderr)")
        let whole = try Self.object(fleet.folder("merged") + "/fleet.json")
        #expect((whole["fleet"] as? [String: Any])?["shards"] as? [String] == ["1/3", "2/3", "3/3"])
        #expect(try Self.comparable(whole) == Self.comparable(v1))
        for name in Self.names {
            #expect(
                FileManager.default.fileExists(
                    atPath: fleet.folder("merged") + "/\(name).test-\(fleet.port)/report.json"))
        }
        // Two runs of the unchanged fleet (the first, and the shards merged) compare as all the same.
        let unchanged = try run(Paths.binary, ["report", "diff", fleet.folder("v1"), fleet.folder("merged")])
        #expect(unchanged.status == 0, "\(unchanged.text)")
        #expect(unchanged.text.contains("0 new, 0 changed, 0 gone, 9 same"), "\(unchanged.text)")
        // Two shards only: merged, with a warning naming the one left out.
        let partial = try run(
            Paths.binary,
            ["report", "merge", fleet.folder("shard1"), fleet.folder("shard2"), "--out", fleet.folder("partial")])
        #expect(partial.stderr.contains("warning: shard(s) 3/3 not merged"), "\(partial.stderr)")
    }

    /// `--sitemap`: the pages are the sitemaps' — gamma's robots.txt names an index whose sitemap lists /secret,
    /// epsilon's /sitemap.xml lists /hidden (no link leads to either) — and a site without one says so and follows
    /// its links.
    @Test func theSitemapsPagesAreVisitedInsteadOfTheLinks() throws {
        let fleet = try Fleet()
        let list = fleet.folder("sitemap-sites.txt")
        try ["gamma", "epsilon", "alpha"].map { fleet.site($0) + "/" }.joined(separator: "\n").write(
            toFile: list, atomically: true, encoding: .utf8)
        let result = try run(
            Paths.binary,
            ["audit", "--browser", "chromium", "--consent", "none", "--pages", "5", "--wait", "8", "--sitemap"]
                + ["--urls", list, "--upstream-ca", fleet.ca.caCert, "--out", fleet.folder("maps")]
                + Self.names.flatMap { ["--resolve", "\($0).test:127.0.0.1"] },
            timeout: 300)
        #expect(result.status == 1, "\(result.stderr)")  // alpha's _ga before consent
        let expected: [String: (pages: [String], note: String)] = [
            "gamma": (
                ["/", "/p/1", "/secret"], "pages from the sitemaps: 2 URL(s) in 2 sitemap(s) (robots.txt named 1)"
            ),
            "epsilon": (
                ["/", "/hidden", "/p/2"], "pages from the sitemaps: 2 URL(s) in 1 sitemap(s) (robots.txt named none)"
            ),
            "alpha": (
                ["/", "/p/1", "/p/2"], "--sitemap: no sitemap found (robots.txt named none; /sitemap.xml is not one)"
            ),
        ]
        for (name, want) in expected {
            let report = try Self.object(fleet.folder("maps") + "/\(name).test-\(fleet.port)/report.json")
            let pages = (report["pages"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }
            #expect(Set(pages) == Set(want.pages.map { fleet.site(name) + $0 }), "\(name): \(pages)")
            let notes = report["notes"] as? [String] ?? []
            #expect(notes.contains { $0.hasPrefix(want.note) }, "\(name): \(notes)")
        }
        let gamma = try Self.object(fleet.folder("maps") + "/gamma.test-\(fleet.port)/report.json")
        #expect((gamma["cookies"] as? [[String: Any]] ?? []).contains { $0["name"] as? String == "secret" })
    }

    /// Ctrl-C in a fleet stops after the pages in hand: the sites done are in the fleet's report, the rest named as
    /// not visited, exit 130, and no browser left running.
    @Test func anInterruptedFleetReportsTheSitesDoneAndNamesTheRest() throws {
        let fleet = try Fleet()
        let audit = try TestProcess(
            Paths.binary,
            ["audit", "--browser", "chromium", "--consent", "none", "--pages", "3", "--parallel", "1", "--urls"]
                + [fleet.list, "--upstream-ca", fleet.ca.caCert, "--out", fleet.folder("cut"), "--format", "json"]
                + Self.names.flatMap { ["--resolve", "\($0).test:127.0.0.1"] })
        _ = try audit.waitForLine(startingWith: "[none] page 1/3: https://beta", onStderr: true, timeout: 60)
        audit.signal(SIGINT)
        #expect(audit.waitForExit(timeout: 60) == 130, "\(audit.stderr)")
        let report = try Self.object(fleet.folder("cut") + "/fleet.json")
        let done = Self.sites(report).keys.sorted()
        let left = (report["fleet"] as? [String: Any])?["notVisited"] as? [String] ?? []
        // alpha whole, beta cut short (its pages in hand), the others not visited.
        #expect(done == [fleet.site("alpha"), fleet.site("beta")], "\(done)")
        #expect(left == ["delta", "epsilon", "gamma"].map(fleet.site), "\(left)")
        let stdout = try #require(try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [String: Any])
        #expect(Self.sites(stdout).count == 2)
        let running = try run(Paths.which("pgrep"), ["-f", "cookie-proxy-chromium-\(audit.pid)-"])
        #expect(running.text.isEmpty, "left running: \(running.text)")
    }
}
