import Foundation
import Locking
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The transformation log through the real binary under load: nothing lost, rotation, keyed redaction, the
/// terminal view.
@Suite(.serialized) struct LogEndToEndTests {
    static let rules = """
        rule "harden" {
            secure
            samesite lax
        }
        """

    static func folder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-log-\(UUID().uuidString.prefix(8))")
            .path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try rules.write(toFile: dir + "/h.rules", atomically: true, encoding: .utf8)
        return dir
    }

    /// `threads` keep-alive clients of `requests` each through the proxy (Fixtures/loadgen.py); the Set-Cookie
    /// lines they received.
    static func load(_ proxy: Proxy, _ upstream: Recorder, threads: Int, requests: Int) throws -> [String] {
        let result = try run(
            Paths.which("python3"),
            [Paths.fixtures + "/loadgen.py", "\(proxy.port)", "\(upstream.port)", "\(threads)", "\(requests)"])
        #expect(result.status == 0, "\(result.stderr)")
        return result.text.split(separator: "\n").map(String.init)
    }

    static func records(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }

    /// Not timed: a fixed number of requests, a log queue of 4 so that the loops wait for the writer again and
    /// again. The log holds exactly one record per rewritten cookie, whose `after` is what the client received.
    @Test func underSaturationEveryRecordIsWrittenAndMatchesWhatTheClientGot() throws {
        let dir = try Self.folder()
        let upstream = try Recorder()
        let proxy = try Proxy([
            "--quiet", "--rules", dir + "/h.rules", "--log", dir + "/log.jsonl", "--log-values", "--log-queue", "4",
        ])
        let received = try Self.load(proxy, upstream, threads: 8, requests: 150)
        #expect(received.count == 8 * 150 * 3)
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let records = try Self.records(dir + "/log.jsonl")
        #expect(records.count == received.count)
        #expect(records.compactMap { $0["after"] as? String }.sorted() == received.sorted())
        #expect(proxy.process.stderr.contains("\(received.count) log records written, 0 dropped"))
        // The keys rules/README.md's table documents, in its order, on every line: each key of a record is
        // documented, and every documented key is there but the three an HTTP/1.1 forward exchange has not.
        let keys = try Self.documentedRecordKeys()
        #expect(keys.count >= 15, "\(keys)")
        for line in try String(contentsOfFile: dir + "/log.jsonl", encoding: .utf8).split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(Set(object.keys).isSubset(of: keys), "undocumented: \(Set(object.keys).subtracting(keys))")
            #expect(Set(keys).subtracting(object.keys) == ["protocol", "upstreamProtocol", "route"], "\(line)")
            let positions = keys.compactMap { line.range(of: "\"\($0)\":")?.lowerBound }
            #expect(positions == positions.sorted(), "\(line)")
        }
    }

    /// The keys of a Set-Cookie record as rules/README.md's table lists them (after "Keys, in order:").
    static func documentedRecordKeys() throws -> [String] {
        let text = try String(contentsOfFile: Paths.root + "/rules/README.md", encoding: .utf8)
        guard let start = text.range(of: "Keys, in order:") else { return [] }
        var keys: [String] = []
        for line in text[start.upperBound...].split(separator: "\n").dropFirst(2) {
            guard line.hasPrefix("| `") else { break }
            keys += line.dropFirst(2).prefix { $0 != "|" }.split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["`"]) }
        }
        return keys
    }

    /// `--log-overflow drop` with room for one record: what is dropped is counted, what is written is whole, and
    /// the two add up to every rewritten cookie (how many are dropped depends on the machine's timing).
    @Test func droppingCountsEveryRecordItDoesNotWrite() throws {
        let dir = try Self.folder()
        let upstream = try Recorder()
        let proxy = try Proxy([
            "--quiet", "--rules", dir + "/h.rules", "--log", dir + "/log.jsonl", "--log-values", "--log-queue", "1",
            "--log-overflow", "drop",
        ])
        let received = try Self.load(proxy, upstream, threads: 8, requests: 150)
        #expect(received.count == 8 * 150 * 3)
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let records = try Self.records(dir + "/log.jsonl")
        let after = records.compactMap { $0["after"] as? String }
        #expect(after.count == records.count)
        #expect(Set(after).isSubset(of: Set(received)))
        let stderr = proxy.process.stderr
        guard let match = stderr.firstMatch(of: /(\d+) log records written, (\d+) dropped/) else {
            Issue.record("no log counts in: \(stderr)")
            return
        }
        #expect(Int(match.1) == records.count)
        #expect(Int(match.1)! + Int(match.2)! == received.count)
    }

    /// logrotate's way: move the file, send SIGUSR1; records before go to the moved file, after to the new one,
    /// none lost or written twice.
    @Test func sigusr1ReopensTheLogFileWithoutLosingOrRepeatingARecord() throws {
        let dir = try Self.folder()
        let upstream = try Recorder()
        let proxy = try Proxy(["--quiet", "--rules", dir + "/h.rules", "--log", dir + "/log.jsonl", "--log-values"])
        let done = DispatchSemaphore(value: 0)
        let box = Box()
        DispatchQueue.global().async {
            box.received = (try? Self.load(proxy, upstream, threads: 4, requests: 1500)) ?? []
            done.signal()
        }
        // The move happens once records are being written, with most of the traffic still to come.
        for _ in 0..<500 {
            var info = stat()
            if stat(dir + "/log.jsonl", &info) == 0 && info.st_size > 0 { break }
            usleep(10_000)
        }
        #expect(rename(dir + "/log.jsonl", dir + "/log.jsonl.1") == 0)
        proxy.process.signal(SIGUSR1)
        done.wait()
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        let before = try Self.records(dir + "/log.jsonl.1")
        let after = try Self.records(dir + "/log.jsonl")
        #expect(!before.isEmpty && !after.isEmpty, "the move fell outside the traffic")
        let all = (before + after).compactMap { $0["after"] as? String }
        #expect(all.count == box.received.count)
        #expect(Set(all).count == all.count)
        #expect(all.sorted() == box.received.sorted())
        var info = stat()
        #expect(stat(dir + "/log.jsonl", &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    final class Box: @unchecked Sendable { var received: [String] = [] }

    /// Of the first `length` bytes of the file at `path`, the share whose pages are in the page cache (mincore).
    static func residentShare(_ path: String, length: Int) throws -> Double {
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let mapped = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
        try #require(mapped != MAP_FAILED)
        defer { munmap(mapped, length) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (length + page - 1) / page)
        try #require(mincore(mapped, length, &vector) == 0)
        return Double(vector.filter { $0 & 1 != 0 }.count) / Double(vector.count)
    }

    /// A busy log does not fill the page cache: the writer lets go of the pages a few MiB behind the end
    /// (LogPageCache). Without that, every page written stays cached while memory is plentiful, as here.
    @Test func theLogFileDoesNotStayInThePageCacheBehindItsEnd() throws {
        let dir = try Self.folder()
        let upstream = try Recorder()
        let log = dir + "/log.jsonl"
        let proxy = try Proxy(["--quiet", "--rules", dir + "/h.rules", "--log", log, "--log-values"])
        var info = stat()
        for _ in 0..<40 where stat(log, &info) != 0 || info.st_size < 16 << 20 {
            _ = try Self.load(proxy, upstream, threads: 8, requests: 500)
        }
        proxy.process.signal(SIGTERM)
        #expect(proxy.process.waitForExit() == 0)
        #expect(stat(log, &info) == 0 && info.st_size >= 16 << 20)
        // The part advised more than once (the writer advises the last 4 steps of 2 MiB at each crossing), with a
        // step's margin: there pages written back before a later crossing are gone.
        let share = try Self.residentShare(log, length: Int(info.st_size) - 10 << 20)
        #expect(share < 0.5, "\(Int(share * 100))% of the log's older pages are still cached")
    }

    /// The same value hashes the same on one installation (across runs) and differently on another; the key is
    /// a file of its own, mode 0600.
    @Test func redactedValuesAreKeyedPerInstallation() throws {
        let dir = try Self.folder()
        let upstream = try Recorder()
        func hashes(home: String, log: String) throws -> [String] {
            let proxy = try Proxy(
                ["--quiet", "--rules", dir + "/h.rules", "--log", log], environment: ["COOKIE_PROXY_HOME": home])
            let result = try curl(["-x", proxy.url, "http://127.0.0.1:\(upstream.port)/cookies/same"])
            #expect(result.text == "ok")
            proxy.process.signal(SIGTERM)
            _ = proxy.process.waitForExit()
            return try Self.records(log).compactMap { $0["before"] as? String }
        }
        let first = try hashes(home: dir + "/home-a", log: dir + "/a1.jsonl")
        let again = try hashes(home: dir + "/home-a", log: dir + "/a2.jsonl")
        let other = try hashes(home: dir + "/home-b", log: dir + "/b.jsonl")
        #expect(first.count == 3)
        #expect(first == again)
        #expect(first != other)
        #expect(!first.joined().contains("ssame") && first[0].hasPrefix("sid=[h:"))
        var info = stat()
        #expect(stat(dir + "/home-a/log-key", &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    /// Proxies started at once on a new installation agree on one key: each makes one under a name of its own
    /// and links it into place, so none reads another's half-written file (they failed with "File exists").
    @Test func proxiesStartedTogetherShareOneKey() throws {
        let dir = try Self.folder()
        let upstream = try Recorder()
        let count = 6
        let started = Locked<[Int: Result<Proxy, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let proxy = Result {
                try Proxy(
                    ["--quiet", "--rules", dir + "/h.rules", "--log", dir + "/together-\(i).jsonl"],
                    environment: ["COOKIE_PROXY_HOME": dir + "/together-home"])
            }
            started.withLock { $0[i] = proxy }
        }
        var hashes: Set<String> = []
        for i in 0..<count {
            let proxy = try #require(try started.withLock { $0[i] }?.get())
            let result = try curl(["-x", proxy.url, "http://127.0.0.1:\(upstream.port)/cookies/same"])
            #expect(result.text == "ok")
            proxy.process.signal(SIGTERM)
            _ = proxy.process.waitForExit()
            let before = try Self.records(dir + "/together-\(i).jsonl").compactMap { $0["before"] as? String }
            #expect(before.count == 3)
            hashes.insert(before.joined(separator: "\n"))
        }
        #expect(hashes.count == 1)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: dir + "/together-home").filter { $0.hasSuffix(".tmp") }
                .isEmpty)
    }

    /// `cookie-proxy run | jq` works: with the log on stdout (the default) stdout holds only the log's JSON Lines,
    /// with or without `--quiet`; the listening line and the banner are on stderr.
    @Test(arguments: [[], ["--quiet"]])
    func stdoutCarriesOnlyTheLog(_ extra: [String]) throws {
        let dir = try Self.folder()
        let upstream = try Recorder()
        let proxy = try Proxy(extra + ["--rules", dir + "/h.rules", "--log-format", "json"])
        let result = try curl(["-x", proxy.url, "http://127.0.0.1:\(upstream.port)/cookies/same"])
        #expect(result.text == "ok")
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit()
        let lines = proxy.process.stdout.split(separator: "\n")
        #expect(lines.count >= 3, "\(proxy.process.stdout)")
        for line in lines {
            #expect(
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "not JSON: \(line)")
        }
        #expect(proxy.process.stderr.hasPrefix("cookie-proxy listening on http://127.0.0.1:\(proxy.port)\n"))
    }

    /// On a terminal the live status line stays the last line: log lines are printed above it (tmux runs the
    /// proxy on a real pseudo-terminal; the pane is read back).
    @Test func onATerminalTheStatusLineStaysBelowTheLogLines() throws {
        let dir = try Self.folder()
        let upstream = try Recorder()
        guard let terminal = try TerminalProxy("--rules \(dir)/h.rules", home: "\(dir)/home") else { return }
        let port = terminal.port
        #expect(port > 0)
        for i in 0..<3 {
            _ = try curl(["-x", "http://127.0.0.1:\(port)", "http://127.0.0.1:\(upstream.port)/cookies/\(i)"])
            usleep(1_200_000)  // the status line is redrawn every second: log lines and redraws interleave
        }
        let pane = try terminal.pane()
        let lines = pane.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        let logLines = lines.filter { $0.contains(" GET http://127.0.0.1:\(upstream.port)/cookies/") }
        #expect(logLines.count == 9, "\(pane)")
        // No log line carries the status text, and the status line is the last line.
        #expect(logLines.allSatisfy { !$0.contains("connections ·") }, "\(pane)")
        #expect(lines.last?.contains("connections ·") == true, "\(pane)")
        #expect(lines.filter { $0.contains("connections ·") }.count == 1, "\(pane)")
    }

    /// The site-context lint does not wait for the lifecycle: with `--lifecycle off`, a cross-site subresource's
    /// `SameSite=Lax` line (refused by every engine there) is `cross-site-samesite` in the log, and
    /// `--fail-on rejects` fails the run on it.
    @Test func theSiteLintRunsWithTheLifecycleOff() throws {
        let upstream = try Upstream()
        defer { upstream.process.signal(SIGTERM) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-sitelint-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "rule \"see all\" {\n    log\n}\n".write(toFile: dir + "/all.rules", atomically: true, encoding: .utf8)
        let proxy = try Proxy(
            [
                "--rules", dir + "/all.rules", "--lifecycle", "off", "--ui", "off", "--log", dir + "/log.jsonl",
                "--report", "junit:\(dir)/report.xml", "--fail-on", "rejects",
            ], environment: ["COOKIE_PROXY_HOME": dir])
        let line = "third=1; Path=/; SameSite=Lax".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        _ = try curl([
            "-s", "-o", "/dev/null", "-x", proxy.url, "-H", "Sec-Fetch-Site: cross-site", "-H", "Sec-Fetch-Dest: image",
            "-H", "Sec-Fetch-Mode: no-cors", "-H", "Referer: https://news.example/",
            "\(upstream.base)/setcookie?c=\(line)",
        ])
        usleep(300_000)
        proxy.process.signal(SIGTERM)
        let status = proxy.process.waitForExit(timeout: 20)
        let log = try String(contentsOfFile: dir + "/log.jsonl", encoding: .utf8)
        #expect(log.contains("\"code\":\"cross-site-samesite\""), "\(log)")
        #expect(status == 1, "\(proxy.process.stderr)")
    }
}
