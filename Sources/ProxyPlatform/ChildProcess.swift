internal import CProxyShims
import Foundation

/// Other programs the commands drive (a trust store's tool, a browser): spawned with exactly the descriptors given,
/// reaped without blocking. The one place besides the proxy's shell that spawns (`CProxy_spawn`: posix_spawn).
public enum ChildProcess {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A pipe whose ends close on exec.
    public static func pipe() throws(Failure) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        let rc = CProxy_pipe(&fds)
        guard rc == 0 else { throw Failure(description: "cannot make a pipe: \(String(cString: strerror(-rc)))") }
        return (fds[0], fds[1])
    }

    /// Starts `path` with `arguments` (after `path` as argv[0]) and `environment` (nil: this process's). The child's
    /// descriptor i is `descriptors[i]` (-1: /dev/null); it inherits no other. With `newGroup`, it leads a process
    /// group of its own (so that one signal to `-pid` reaches what it starts too). Its pid.
    public static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, descriptors: [Int32],
        newGroup: Bool = false
    ) throws(Failure) -> Int32 {
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for p in envp ?? [] { free(p) } }
        var child: Int32 = 0
        let rc = argv.withUnsafeBufferPointer { a in
            if let envp {
                return envp.withUnsafeBufferPointer { e in
                    CProxy_spawn(
                        &child, path, a.baseAddress, e.baseAddress, descriptors, Int32(descriptors.count),
                        newGroup ? 1 : 0)
                }
            }
            return CProxy_spawn(
                &child, path, a.baseAddress, nil, descriptors, Int32(descriptors.count), newGroup ? 1 : 0)
        }
        guard rc == 0 else { throw Failure(description: "cannot start \(path): \(String(cString: strerror(rc)))") }
        return child
    }

    /// The child's wait status once it has ended; nil while it runs (does not block).
    public static func reap(_ pid: Int32) -> Int32? {
        var status: Int32 = 0
        return CProxy_reap(pid, &status) > 0 ? status : nil
    }

    /// Runs `path` to completion: its exit status (128 + the signal that ended it) and what it printed, standard
    /// output and error together.
    public static func run(_ path: String, _ arguments: [String]) throws(Failure) -> (status: Int32, output: String) {
        let (readEnd, writeEnd) = try pipe()
        let child: Int32
        do {
            child = try spawn(path, arguments, descriptors: [-1, writeEnd, writeEnd])
        } catch {
            close(readEnd)
            close(writeEnd)
            throw error
        }
        close(writeEnd)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if n > 0 {
                output += buffer[0..<n]
            } else if n == 0 || errno != EINTR {
                break
            }
        }
        close(readEnd)
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS by hand (they are macros).
        let exited = status & 0x7F == 0
        return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), String(decoding: output, as: UTF8.self))
    }
}
