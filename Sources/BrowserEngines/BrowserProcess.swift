import Foundation
import ProxyPlatform

/// One browser's process and its profile folder, owned together: the folder is made first (mode 0700, where the
/// driver writes the profile's preferences before the start), the process is started once and stopped once (a
/// polite close first, then SIGTERM to it or its group after a second, SIGKILL after five), and the folder goes with
/// the value. Every driver holds one; a driver replaying a transcript holds none.
package final class BrowserProcess {
    /// The profile folder (HOME for the browser too: it writes its own files there, not in the user's).
    package let profile: String
    private var pid: Int32 = 0
    private var group = false
    private var reaped = false
    private var stopped = false

    /// A fresh profile folder for `engine`; nothing runs yet.
    package init(engine: String) throws(BrowserFailure) {
        profile = try Self.makeFolder(engine)
    }

    /// A fresh folder (mode 0700) in the temporary directory, named `cookie-proxy-NAME-PID-RANDOM` (the audit's
    /// cleanup finds a browser left running by it); its owner removes it.
    static func makeFolder(_ name: String, what: String = "a profile folder") throws(BrowserFailure) -> String {
        let path = NSTemporaryDirectory() + "cookie-proxy-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw BrowserFailure("cannot create \(what) \(path): \(error.localizedDescription)")
        }
        return path
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Writes `text` to `name` in the profile (its preferences before the first start).
    package func write(_ name: String, _ text: String) throws(BrowserFailure) {
        let path = profile + "/" + name
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            throw BrowserFailure("cannot write the profile's \(name): \(error.localizedDescription)")
        }
    }

    /// Starts `binary` with HOME at the profile; `descriptors` become the child's 0, 1, 2, … (-1: /dev/null);
    /// `newGroup`: in a process group of its own, stopped as one (a wrapper and the browsers it starts).
    package func start(
        _ binary: String, _ arguments: [String], environment: [String: String], descriptors: [Int32],
        newGroup: Bool
    ) throws(BrowserFailure) {
        var env = environment
        env["HOME"] = profile
        do {
            pid = try ChildProcess.spawn(
                binary, arguments, environment: env, descriptors: descriptors, newGroup: newGroup)
        } catch {
            throw BrowserFailure(error.description)
        }
        group = newGroup
    }

    /// Whether the process has ended (it crashed, or was stopped).
    package var exited: Bool {
        guard pid > 0 else { return true }
        if !reaped, ChildProcess.reap(pid) != nil { reaped = true }
        return reaped
    }

    /// Ends the process, once: `polite` first (the protocol's close command), then signals.
    package func stop(polite: () -> Void = {}) {
        guard !stopped, pid > 0 else { return }
        stopped = true
        if reaped { return }
        polite()
        let target = group ? -pid : pid
        for (wait, signal) in [(50, SIGTERM), (200, SIGKILL)] {
            for _ in 0..<wait {
                if ChildProcess.reap(pid) != nil {
                    reaped = true
                    return
                }
                usleep(20_000)
            }
            kill(target, signal)
        }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        reaped = true
    }
}
