import Foundation
import TestSupport
import Testing

/// Faults said when they happen and no record torn: a full disk under each log (a small tmpfs the test mounts).
@Suite(.serialized) struct FaultEndToEndTests {
    /// Mounts a tmpfs of `kilobytes` at a new folder (root only); nil when this machine cannot.
    static func smallDisk(kilobytes: Int) throws -> String? {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cp-full-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let mounted = try run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", dir])
        if mounted.status != 0 {
            try? FileManager.default.removeItem(atPath: dir)
            return nil
        }
        return dir
    }

    /// Fills `dir` until a write fails (the disk is full).
    static func fill(_ dir: String) {
        let fd = open(dir + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        let block = [UInt8](repeating: 0x78, count: 512)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// `--log` and `--access-log` on a disk that fills up: the first failed write is said on stderr at once, the
    /// records lost are counted, the first write after space returns says so (stderr) and writes a gap record,
    /// and every line of both files reads back whole (jq for the JSON log, GoAccess for the combined access log).
    @Test func aFullDiskIsSaidWhenItHappensAndNoRecordIsTorn() throws {
        guard getuid() == 0 else {
            Issue.record("mounting a tmpfs needs root (CI runs as root)")
            return
        }
        guard let disk = try Self.smallDisk(kilobytes: 256) else {
            Issue.record("cannot mount a tmpfs here")
            return
        }
        defer {
            _ = try? run("/bin/umount", [disk])
            try? FileManager.default.removeItem(atPath: disk)
        }
        let upstream = try Upstream()
        defer { upstream.process.signal(SIGTERM) }
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("cp-full-\(getpid()).rules").path
        try "rule \"see all\" {\n    log\n}\n".write(toFile: rules, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let proxy = try Proxy([
            "--rules", rules, "--log", disk + "/cookies.jsonl", "--access-log", disk + "/access.log", "--ui", "off",
        ])
        func requests(_ n: Int) throws {
            for i in 0..<n {
                _ = try curl(["-s", "-o", "/dev/null", "-x", proxy.url, "\(upstream.base)/cookies/\(i)"])
            }
        }
        try requests(5)
        usleep(300_000)
        Self.fill(disk)
        // Each request's records no longer fit: said at once, not at exit.
        try requests(60)
        let failed = try proxy.process.waitForLine(startingWith: "cookie-proxy: cannot write the log ", onStderr: true)
        #expect(failed.contains("No space left on device (ENOSPC, errno 28)"), "\(failed)")
        _ = try proxy.process.waitForLine(startingWith: "cookie-proxy: cannot write the access log ", onStderr: true)
        try FileManager.default.removeItem(atPath: disk + "/filler")
        try requests(5)
        let back = try proxy.process.waitForLine(startingWith: "cookie-proxy: the log ", onStderr: true)
        #expect(back.contains("is written again;") && back.contains("lost while it could not be"), "\(back)")
        _ = try proxy.process.waitForLine(startingWith: "cookie-proxy: the access log ", onStderr: true)
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit(timeout: 20)

        // Every line of the log is a whole JSON object; the gap record says how many were lost.
        let log = try String(contentsOfFile: disk + "/cookies.jsonl", encoding: .utf8)
        let jq = try run("/usr/bin/jq", ["-c", "select(.event == \"log-gap\")", disk + "/cookies.jsonl"])
        #expect(jq.status == 0, "jq could not read every line: \(jq.stderr)\n\(log.suffix(2000))")
        let gap = try #require(
            try JSONSerialization.jsonObject(
                with: Data(jq.text.split(separator: "\n").first.map(String.init)?.utf8 ?? "".utf8))
                as? [String: Any], "no gap record in \(log.suffix(2000))")
        #expect((gap["lost"] as? Int ?? 0) > 0 && (gap["reason"] as? String)?.contains("ENOSPC") == true, "\(gap)")
        #expect(log.hasSuffix("\n"))
        // Records before and after the gap are there (the last requests' cookies).
        #expect(
            log.contains("/cookies/4\"") && log.contains("/cookies/0\"") && log.components(separatedBy: "\n").count > 10
        )

        // Every line of the access log is one GoAccess reads as valid; one says what was lost.
        let access = try String(contentsOfFile: disk + "/access.log", encoding: .utf8)
        let lines = access.split(separator: "\n")
        #expect(lines.contains { $0.contains("\"LOG-GAP /lost/") }, "\(access.suffix(2000))")
        let report = disk + "/report.json"
        let goaccess = try run(
            "/usr/bin/goaccess", [disk + "/access.log", "--log-format=COMBINED", "-o", report], timeout: 60)
        #expect(goaccess.status == 0, "\(goaccess.stderr)")
        let general =
            (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])?[
                "general"] as? [String: Any]
        #expect(general?["failed_requests"] as? Int == 0, "\(String(describing: general))")
        #expect(general?["total_requests"] as? Int == lines.count, "\(String(describing: general))")
        // The exit summary counts what was lost.
        #expect(proxy.process.stderr.contains("not written: cannot write the log "), "\(proxy.process.stderr)")
    }

    /// A body cut short by either side is said when it happens (stderr), is an event in the log, and is counted at
    /// exit: the upstream ending before its declared length, and a client that goes away mid-response.
    @Test(arguments: ["upstream", "client"])
    func aBodyCutShortIsSaidLoggedAndCounted(_ side: String) throws {
        let upstream = try Upstream()
        defer { upstream.process.signal(SIGTERM) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-cut-\(getpid())-\(side)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let proxy = try Proxy(["--log", dir + "/log.jsonl", "--ui", "off"])
        let said: String
        if side == "upstream" {
            _ = try curl(["-s", "-o", "/dev/null", "-x", proxy.url, "\(upstream.base)/truncated"])
            said = try proxy.process.waitForLine(startingWith: "cookie-proxy: body cut short: ", onStderr: true)
            #expect(said.contains("GET \(upstream.base)/truncated (client 127.0.0.1)"), "\(said)")
            #expect(said.contains("closed the connection before its response body ended (10 bytes relayed)"), "\(said)")
        } else {
            let fd = try connectedLoopbackSocket(port: proxy.port)
            sendAll(fd, Array("GET \(upstream.base)/large=50000000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            _ = receive(fd) { $0.count > 100_000 }
            close(fd)
            said = try proxy.process.waitForLine(startingWith: "cookie-proxy: body cut short: ", onStderr: true)
            #expect(said.contains("the client's connection"), "\(said)")
        }
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit(timeout: 20)
        let log = try String(contentsOfFile: dir + "/log.jsonl", encoding: .utf8)
        #expect(log.contains("\"event\":\"body-cut\""), "\(log)")
        #expect(
            proxy.process.stderr.contains("cookie-proxy: 1 exchange was cut short by a side"), "\(proxy.process.stderr)"
        )
    }
}
