import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Real processes for end-to-end tests: the built cookie-proxy, a Python upstream, curl, openssl.
/// Everything listens on 127.0.0.1 with a port the kernel picks, and is killed when the test ends.
final class TestProcess: @unchecked Sendable {
    let process: Subprocess

    /// Standard input stays open (a pipe nobody writes to) for the life of the process.
    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        let env = environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } }
        process = try Subprocess(executable, arguments, environment: env, stdin: .open)
    }

    var stdout: String { String(decoding: process.standardOutput, as: UTF8.self) }
    var stderr: String { String(decoding: process.standardError, as: UTF8.self) }
    var pid: Int32 { process.pid }

    /// Waits until stdout (or stderr) contains a line starting with `prefix`; returns that line.
    func waitForLine(startingWith prefix: String, onStderr: Bool = false, timeout: Double = 20) throws -> String {
        try process.waitForLine(startingWith: prefix, onStderr: onStderr, timeout: timeout)
    }

    func signal(_ sig: Int32) { process.signal(sig) }

    func waitForExit(timeout: Double = 20) -> Int32? { process.wait(timeout: timeout) }

    /// Resident memory high-water mark (VmHWM) in KiB.
    var peakRSSKiB: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        }
        return nil
    }

    var residentKiB: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        }
        return nil
    }

    deinit { if process.isRunning { process.terminate() } }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

enum Paths {
    static let root = BuiltBinary.repositoryRoot
    static let fixtures = root + "/Tests/EndToEndTests/Fixtures"
    static let binary = BuiltBinary.cookieProxy

    static func which(_ tool: String) -> String {
        for dir in ["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/sbin"]
        where FileManager.default.isExecutableFile(atPath: "\(dir)/\(tool)") {
            return "\(dir)/\(tool)"
        }
        return "/usr/bin/\(tool)"
    }
}

/// The Python upstream of Fixtures/upstream.py.
final class Upstream: Sendable {
    let process: TestProcess
    let port: Int
    let scheme: String
    /// Plain http, or https with this certificate and key.
    /// `environment`: UPSTREAM_BIND (another address), UPSTREAM_LOG=1 (a "REQ method target" line per request).
    init(tls: (cert: String, key: String)? = nil, environment: [String: String]? = nil) throws {
        let extra = tls.map { [$0.cert, $0.key] } ?? []
        process = try TestProcess(
            Paths.which("python3"), ["-u", Paths.fixtures + "/upstream.py", "0"] + extra, environment: environment)
        let line = try process.waitForLine(startingWith: "PORT ")
        port = Int(line.dropFirst(5))!
        scheme = tls == nil ? "http" : "https"
    }
    var base: String { "\(scheme)://127.0.0.1:\(port)" }
}

/// A throwaway CA and a leaf for localhost/127.0.0.1 signed by it, made with the openssl command.
struct TestCA {
    let dir: String
    var caCert: String { dir + "/ca.pem" }
    var cert: String { dir + "/leaf.pem" }
    var key: String { dir + "/leaf.key" }

    /// `names`: more DNS names in the leaf, besides localhost.
    init(names: [String] = []) throws {
        dir =
            FileManager.default.temporaryDirectory.appendingPathComponent(
                "cp-ca-\(getpid())-\(UUID().uuidString.prefix(6))"
            ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let openssl = Paths.which("openssl")
        try TestCA.check(
            run(
                openssl,
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-subj", "/CN=cookie-proxy test CA", "-keyout", dir + "/ca.key", "-out",
                    dir + "/ca.pem",
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                ]))
        try TestCA.check(
            run(
                openssl,
                [
                    "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-subj", "/CN=localhost", "-keyout", dir + "/leaf.key", "-out", dir + "/leaf.csr",
                ]))
        let alternatives = (["localhost"] + names).map { "DNS:\($0)" }.joined(separator: ",")
        try "subjectAltName=\(alternatives),IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: dir + "/ext.cnf", atomically: true, encoding: .utf8)
        try TestCA.check(
            run(
                openssl,
                [
                    "x509", "-req", "-in", dir + "/leaf.csr", "-CA", dir + "/ca.pem", "-CAkey",
                    dir + "/ca.key", "-CAcreateserial", "-days", "2", "-extfile", dir + "/ext.cnf", "-out",
                    dir + "/leaf.pem",
                ]))
    }

    static func check(_ r: CommandResult) throws {
        if r.status != 0 { throw HarnessError("openssl failed: \(r.stderr)") }
    }
}

/// The real cookie-proxy binary, `run` on a free loopback port.
final class Proxy: Sendable {
    let process: TestProcess
    let port: Int
    init(
        _ extra: [String] = [], threads: Int = 2, listen: String = "127.0.0.1:0",
        environment: [String: String]? = ["COOKIE_PROXY_HOME": Proxy.defaultHome]
    ) throws {
        process = try TestProcess(
            Paths.binary, ["run", "--listen", listen, "--threads", "\(threads)"] + extra,
            environment: environment)
        // The banner is on stderr (stdout is the log's): its first line, then (tests read it) its last.
        let line = try process.waitForLine(startingWith: "cookie-proxy listening on ", onStderr: true)
        port = Int(line.split(separator: ":").last!)!
        if !extra.contains("--quiet") { _ = try process.waitForLine(startingWith: "  stop:", onStderr: true) }
    }
    var url: String { "http://127.0.0.1:\(port)" }

    /// A configuration folder of the test run's own, so tests never touch the user's CA.
    static let defaultHome: String = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-home-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }()
}

/// A JUnit XML file as junitparser (the CI tool, in the tests' Python environment) reads it: each case's suite name,
/// case name and the types of its results (failures), sorted.
func junitCases(_ path: String) throws -> [[Any]] {
    let read = try run(
        Paths.root + "/.build/test-python/bin/python",
        [
            "-c",
            """
            import json, sys
            from junitparser import JUnitXml
            print(json.dumps(sorted([s.name, c.name, [r.type for r in c.result]] for s in JUnitXml.fromfile(sys.argv[1]) for c in s)))
            """, path,
        ])
    guard let cases = try JSONSerialization.jsonObject(with: read.stdout) as? [[Any]] else {
        throw HarnessError("junitparser could not read \(path): \(read.stderr)")
    }
    return cases
}

func curl(_ arguments: [String]) throws -> CommandResult {
    try run(Paths.which("curl"), ["-sS", "--max-time", "30"] + arguments)
}

/// Waits until something accepts TCP connections on 127.0.0.1:`port` (a server started by the test, which says
/// nothing when it is ready); false after `timeout` seconds.
func waitUntilListening(port: Int, timeout: Double = 20) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        if connectLoopback(fd, port: port) { return true }
        usleep(20_000)
    }
    return false
}

/// Connects a TCP socket to 127.0.0.1:`port`.
func connectLoopback(_ fd: Int32, port: Int) -> Bool {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// A TCP socket connected to 127.0.0.1:`port` whose reads give up after `timeout` seconds (the caller closes it).
func connectedLoopbackSocket(port: Int, timeout: Int = 10) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket failed") }
    var tv = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    guard connectLoopback(fd, port: port) else {
        close(fd)
        throw HarnessError("connect failed")
    }
    return fd
}

/// Writes all of `bytes` to `fd` (loopback sockets take a test's requests whole).
func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
}

/// Reads from `fd` until `done` says the bytes so far are complete, the peer closes or a read times out.
func receive(_ fd: Int32, until done: ([UInt8]) -> Bool) -> [UInt8] {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while !done(received) {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        received += buffer[0..<n]
    }
    return received
}

/// A raw TCP client: sends bytes, reads until the peer closes (or `until` says the reply is complete).
enum RawClient {
    static func exchange(
        port: Int, send chunks: [[UInt8]], pause: UInt32 = 0, timeout: Int = 10, until: (([UInt8]) -> Bool)? = nil
    ) throws -> [UInt8] {
        let fd = try connectedLoopbackSocket(port: port, timeout: timeout)
        defer { close(fd) }
        for chunk in chunks {
            sendAll(fd, chunk)
            if pause > 0 { usleep(pause) }
        }
        return receive(fd) { until?($0) ?? false }
    }

    static func exchange(port: Int, _ text: String, until: (([UInt8]) -> Bool)? = nil) throws -> String {
        String(decoding: try exchange(port: port, send: [Array(text.utf8)], until: until), as: UTF8.self)
    }
}

extension Array where Element == UInt8 {
    /// The Set-Cookie and other header lines of a raw response, as bytes.
    func headerLines() -> [[UInt8]] {
        guard let end = firstRange(of: [13, 10, 13, 10]) else { return [] }
        return self[0..<end.lowerBound].split(separator: 10).map { Array($0.last == 13 ? $0.dropLast() : $0) }
    }

    func firstRange(of needle: [UInt8]) -> Range<Int>? {
        guard count >= needle.count else { return nil }
        for i in 0...(count - needle.count) where self[i..<(i + needle.count)].elementsEqual(needle) {
            return i..<(i + needle.count)
        }
        return nil
    }
}

/// The real binary's `run` on a real pseudo-terminal: tmux runs it in a detached session of its own, its pane read
/// back as a person would see it. Nil (with an issue recorded) when tmux is missing.
final class TerminalProxy {
    let tmux = Paths.which("tmux")
    let session = "cp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    private(set) var port = 0

    /// `arguments`: `run`'s, after `--listen 127.0.0.1:0 --threads 1`; `home`: its COOKIE_PROXY_HOME.
    init?(_ arguments: String, home: String) throws {
        guard FileManager.default.isExecutableFile(atPath: tmux) else {
            Issue.record("tmux is not installed (scripts/setup.sh installs it)")
            return nil
        }
        let command =
            "COOKIE_PROXY_HOME=\(home) \(Paths.binary) run --listen 127.0.0.1:0 --threads 1 \(arguments)"
        // The tmux server keeps the standard streams it was started with: they go to /dev/null, not to a pipe
        // this test would wait on.
        _ = try run(
            "/bin/sh",
            ["-c", "exec \(tmux) new-session -d -s \(session) -x 220 -y 50 '\(command)' </dev/null >/dev/null 2>&1"])
        for _ in 0..<100 where port == 0 {
            usleep(100_000)
            if let line = try pane().split(separator: "\n").first(where: { $0.hasPrefix("cookie-proxy listening on ") })
            {
                port = Int(line.split(separator: ":").last!) ?? 0
            }
        }
    }

    /// What the pane shows now.
    func pane() throws -> String { try run(tmux, ["capture-pane", "-p", "-t", session]).text }

    /// The pane's title (what an OSC 0 or 2 sequence would set).
    func title() throws -> String { try run(tmux, ["display-message", "-p", "-t", session, "#{pane_title}"]).text }

    /// The pane's proxy is stopped first: killing the session only hangs up its terminal, and SIGHUP makes the proxy
    /// reload its rules, not exit (it would outlive the test).
    deinit {
        _ = try? run(
            "/bin/sh",
            [
                "-c",
                "kill -TERM $(\(tmux) list-panes -t \(session) -F '#{pane_pid}'); sleep 0.5; "
                    + "\(tmux) kill-session -t \(session) </dev/null >/dev/null 2>&1",
            ])
    }
}
