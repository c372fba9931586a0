import CProxyShims
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Text appended from several threads (process output read on handler threads).
public final class LockedText: Sendable {
    private let text = Mutex<String>("")
    public init() {}
    public func append(_ s: String) { text.withLock { $0 += s } }
    public var value: String { text.withLock { $0 } }
}

public struct CommandResult {
    public var status: Int32
    public var stdout: Data
    public var stderr: String
    public var text: String { String(decoding: stdout, as: UTF8.self) }
    public init(status: Int32, stdout: Data, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

public struct SubprocessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A child process with its standard output and error read into memory by a thread of its own.
///
/// Every wait has a deadline, so a child that hangs fails its test instead of the whole run: the child runs in a
/// process group of its own and `kill` reaches its helpers too (a browser's zygote and renderers). Output is
/// read until end of file, but not past a moment after the child has exited: a daemon it started (tmux's
/// server) may hold the pipe open for ever.
public final class Subprocess: @unchecked Sendable {
    public let pid: pid_t
    private struct State {
        var stdout = Data()
        var stderr = Data()
        /// As Foundation's `terminationStatus`: the exit code, or the number of the signal that ended it.
        var status: Int32?
        var readerDone = false
    }
    private let state = Mutex(State())
    /// The write end of the child's standard input while it is kept open (`stdin: .open`).
    private let input = Mutex<Int32>(-1)

    public enum Input {
        /// Standard input is a pipe kept open until `closeInput()` or the end of the child.
        case open
        /// These bytes, then end of file.
        case bytes(Data)
    }

    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Input)
        throws
    {
        Self.ignoreSIGPIPE
        var inPipe: [Int32] = [-1, -1]
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard CProxy_pipe(&inPipe) == 0, CProxy_pipe(&outPipe) == 0, CProxy_pipe(&errPipe) == 0
        else {
            let e = errno
            for fd in inPipe + outPipe + errPipe where fd >= 0 { close(fd) }
            throw SubprocessError("pipe: \(String(cString: strerror(e)))")
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        let envStrings = environment.map { env in env.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for p in envStrings ?? [] { free(p) } }
        var child: pid_t = 0
        // Its own process group: `terminate` reaches the helpers it starts too.
        let fds = [inPipe[0], outPipe[1], errPipe[1]]
        let rc = argv.withUnsafeBufferPointer { a in
            if let envStrings {
                return envStrings.withUnsafeBufferPointer { e in
                    CProxy_spawn(&child, executable, a.baseAddress, e.baseAddress, fds, 3, 1)
                }
            }
            return CProxy_spawn(&child, executable, a.baseAddress, nil, fds, 3, 1)
        }
        close(inPipe[0])
        close(outPipe[1])
        close(errPipe[1])
        guard rc == 0 else {
            close(inPipe[1])
            close(outPipe[0])
            close(errPipe[0])
            throw SubprocessError("cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        pid = child
        switch stdin {
        case .open:
            input.withLock { $0 = inPipe[1] }
        case .bytes(let data):
            data.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(inPipe[1], raw.baseAddress! + offset, raw.count - offset)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }  // the child closed its input (EPIPE): what it read is what it gets
                    offset += n
                }
            }
            close(inPipe[1])
        }
        let out = outPipe[0]
        let err = errPipe[0]
        let thread = Thread { [self] in self.readAndReap(out: out, err: err) }
        thread.start()
    }

    private static let ignoreSIGPIPE: Void = { _ = Glibc.signal(SIGPIPE, SIG_IGN) }()

    /// Reads both pipes until end of file and reaps the child; stops reading one second after the exit.
    private func readAndReap(out: Int32, err: Int32) {
        var fds = [
            pollfd(fd: out, events: Int16(POLLIN), revents: 0), pollfd(fd: err, events: Int16(POLLIN), revents: 0),
        ]
        var buffer = [UInt8](repeating: 0, count: 65536)
        var exitedAt: Date?
        while fds.contains(where: { $0.fd >= 0 }) {
            if let exitedAt, Date().timeIntervalSince(exitedAt) > 1 { break }
            let ready = poll(&fds, nfds_t(fds.count), 50)
            if ready > 0 {
                for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
                    let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 {
                        close(fds[i].fd)
                        fds[i].fd = -1
                        continue
                    }
                    let chunk = Data(buffer[0..<n])
                    state.withLock { if i == 0 { $0.stdout.append(chunk) } else { $0.stderr.append(chunk) } }
                }
            }
            if exitedAt == nil, reap(blocking: false) { exitedAt = Date() }
        }
        for f in fds where f.fd >= 0 { close(f.fd) }
        if exitedAt == nil { _ = reap(blocking: true) }
        state.withLock { $0.readerDone = true }
    }

    /// Collects the child's exit status; true once it is known.
    private func reap(blocking: Bool) -> Bool {
        var status: Int32 = 0
        let r = waitpid(pid, &status, blocking ? 0 : WNOHANG)
        guard r == pid else { return false }
        let signalled = status & 0x7f
        let code = signalled == 0 ? (status >> 8) & 0xff : signalled
        state.withLock { $0.status = code }
        closeInput()
        return true
    }

    public func closeInput() {
        input.withLock {
            if $0 >= 0 { close($0) }
            $0 = -1
        }
    }

    public var isRunning: Bool { state.withLock { $0.status == nil } }
    public var terminationStatus: Int32? { state.withLock { $0.status } }
    public var standardOutput: Data { state.withLock { $0.stdout } }
    public var standardError: Data { state.withLock { $0.stderr } }

    /// Waits until stdout (or stderr) has a whole line starting with `prefix` (a fixture's `PORT n`); returns that
    /// line. Throws when the child exits first or `timeout` seconds pass, with what it printed.
    public func waitForLine(startingWith prefix: String, onStderr: Bool = false, timeout: Double = 20) throws -> String
    {
        let deadline = Date().addingTimeInterval(timeout)
        func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }
        while Date() < deadline {
            // Only complete lines: output can arrive in pieces ("PORT " now, the number a moment later).
            let printed = text(onStderr ? standardError : standardOutput)
            let complete =
                printed.hasSuffix("\n")
                ? Substring(printed) : printed[..<(printed.lastIndex(of: "\n") ?? printed.startIndex)]
            if let line = complete.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) { return String(line) }
            if !isRunning { break }
            usleep(20_000)
        }
        throw SubprocessError(
            "no line starting with '\(prefix)'; stdout: \(text(standardOutput)) stderr: \(text(standardError))")
    }

    /// Sends `sig` to the child, or to its whole process group.
    public func signal(_ sig: Int32, group: Bool = false) {
        guard isRunning else { return }
        kill(group ? -pid : pid, sig)
    }

    /// Waits until the child has exited and its output is read; its status, or nil after `timeout` seconds.
    public func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let (done, status) = state.withLock { ($0.readerDone, $0.status) }
            if done { return status }
            usleep(5_000)
        }
        return nil
    }

    /// Kills the whole group and waits for the reader to finish (a killed child always exits).
    public func terminate() {
        signal(SIGKILL, group: true)
        while !state.withLock({ $0.readerDone }) { usleep(5_000) }
    }

    deinit {
        if isRunning { kill(-pid, SIGKILL) }
        closeInput()
    }
}

/// Runs a command to completion, at most `timeout` seconds: then it and its process group are killed and the
/// call throws, with what the command printed so far.
public func run(
    _ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
    timeout: Double = 120
) throws -> CommandResult {
    let env = environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } }
    let child = try Subprocess(executable, arguments, environment: env, stdin: .bytes(stdin ?? Data()))
    guard let status = child.wait(timeout: timeout) else {
        child.terminate()
        throw SubprocessError(
            "\(executable) \(arguments.joined(separator: " ")) did not finish in \(Int(timeout)) s and was killed;"
                + " stdout: \(String(decoding: child.standardOutput.suffix(2000), as: UTF8.self))"
                + " stderr: \(String(decoding: child.standardError.suffix(2000), as: UTF8.self))")
    }
    return CommandResult(
        status: status, stdout: child.standardOutput, stderr: String(decoding: child.standardError, as: UTF8.self))
}
