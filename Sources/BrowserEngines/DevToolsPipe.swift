import Foundation
import ProxyPlatform

/// A Chromium started with `--remote-debugging-pipe` and spoken to over the DevTools protocol: commands on its
/// fd 3, replies and events on its fd 4, each message one JSON object ended by NUL. Events that arrive while a
/// reply is awaited are kept in order for ``nextEvent(until:)`` (a page's network events come between the replies
/// of the commands that drive it). Owns the process and its profile folder: both go when the value is released.
public final class DevToolsPipe {
    private let pid: Int32
    private let commands: Int32
    private let replies: Int32
    /// The profile folder, removed with the value.
    public let profile: String
    private var received: [UInt8] = []
    private var nextID = 0
    private var events: [[String: Any]] = []
    /// The pipe is closed (the browser ended, crashed or was told to close).
    private var closed = false
    /// The process was waited for (its pid may be another's now).
    private var reaped = false

    /// Starts `binary` headless with a fresh profile (mode 0700, HOME pointed at it: Chromium writes its own files
    /// there, not in the user's), `arguments` added to the flags every run needs; `preferences`, when given, is the
    /// profile's `Default/Preferences` (JSON) before the first start.
    public init(binary: String, arguments: [String], preferences: String? = nil) throws(BrowserFailure) {
        // A browser that crashes closes the pipe's reading end: the next command must fail with EPIPE (handled in
        // `send`), not end this process with SIGPIPE. (Its children get the default back: spawn resets it.)
        signal(SIGPIPE, SIG_IGN)
        profile = try makeProfile("chromium")
        if let preferences {
            do {
                try FileManager.default.createDirectory(
                    atPath: profile + "/Default", withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
                try Data(preferences.utf8).write(to: URL(fileURLWithPath: profile + "/Default/Preferences"))
            } catch {
                try? FileManager.default.removeItem(atPath: profile)
                throw BrowserFailure("cannot write the profile's preferences: \(error.localizedDescription)")
            }
        }
        let toBrowser: (read: Int32, write: Int32)
        let fromBrowser: (read: Int32, write: Int32)
        do {
            toBrowser = try ChildProcess.pipe()
            fromBrowser = try ChildProcess.pipe()
        } catch {
            throw BrowserFailure(error.description)
        }
        let flags =
            [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--user-data-dir=\(profile)", "--remote-debugging-pipe",
            ] + arguments + ["about:blank"]
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = profile
        let child: Int32
        do {
            // Standard streams to /dev/null; the DevTools pipe on its fds 3 (commands) and 4 (replies).
            child = try ChildProcess.spawn(
                binary, flags, environment: env, descriptors: [-1, -1, -1, toBrowser.read, fromBrowser.write])
        } catch {
            for fd in [toBrowser.read, toBrowser.write, fromBrowser.read, fromBrowser.write] { close(fd) }
            try? FileManager.default.removeItem(atPath: profile)
            throw BrowserFailure(error.description)
        }
        close(toBrowser.read)
        close(fromBrowser.write)
        (pid, commands, replies) = (child, toBrowser.write, fromBrowser.read)
    }

    deinit {
        if !reaped { stopChild(pid, group: false) { if !closed { _ = try? send("Browser.close", [:], session: nil) } } }
        close(commands)
        close(replies)
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Whether the browser process has ended (crashed or closed), or its pipe has (a browser that closed it is
    /// ending, even before it can be waited for).
    public var exited: Bool {
        if !reaped, ChildProcess.reap(pid) != nil { (reaped, closed) = (true, true) }
        return reaped || closed
    }

    /// A new blank page, attached in flat mode with its Page domain enabled: its session, for ``call``.
    public func openPage() throws(BrowserFailure) -> String {
        let target = try call("Target.createTarget", ["url": "about:blank"])["targetId"] as? String ?? ""
        let session =
            try call("Target.attachToTarget", ["targetId": target, "flatten": true])["sessionId"] as? String ?? ""
        try call("Page.enable", session: session)
        return session
    }

    /// Sends a command (to `session`, a page's, or to the browser) and waits at most `seconds` for its reply;
    /// its `result`, or the browser's error as a ``BrowserFailure``.
    @discardableResult
    public func call(_ method: String, _ params: [String: Any] = [:], session: String? = nil, seconds: Double = 20)
        throws(BrowserFailure) -> [String: Any]
    {
        let id = try send(method, params, session: session)
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let message = try receive(until: deadline, what: method)
            guard let replyID = message["id"] as? Int else {
                events.append(message)
                continue
            }
            guard replyID == id else { continue }
            if let error = message["error"] as? [String: Any] {
                throw BrowserFailure("Chromium refused \(method): \(error["message"] as? String ?? "\(error)")")
            }
            return message["result"] as? [String: Any] ?? [:]
        }
    }

    /// The next event (a message with a `method` and no `id`), kept or read; nil when none came by `deadline`.
    public func nextEvent(until deadline: Date) throws(BrowserFailure) -> [String: Any]? {
        while true {
            if !events.isEmpty { return events.removeFirst() }
            guard deadline > Date() else { return nil }
            let message: [String: Any]
            do {
                message = try receive(until: deadline, what: "an event")
            } catch  where !exited {
                return nil
            }
            if message["id"] == nil { return message }
        }
    }

    private func send(_ method: String, _ params: [String: Any], session: String?) throws(BrowserFailure) -> Int {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        guard var bytes = try? JSONSerialization.data(withJSONObject: message) else {
            throw BrowserFailure("cannot encode \(method)")
        }
        bytes.append(0)
        let failed = bytes.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = write(commands, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return true }
                offset += n
            }
            return false
        }
        if failed {
            closed = true
            throw BrowserFailure("Chromium closed its DevTools pipe (it ended or crashed)")
        }
        return nextID
    }

    private func receive(until deadline: Date, what: String) throws(BrowserFailure) -> [String: Any] {
        while true {
            if let end = received.firstIndex(of: 0) {
                let message = Data(received[..<end])
                received.removeSubrange(...end)
                if let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any] { return object }
                continue
            }
            let left = Int(deadline.timeIntervalSinceNow * 1000)
            guard left > 0, Descriptors.waitReadable(replies, milliseconds: left) else {
                throw BrowserFailure("Chromium did not answer \(what) in time")
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(replies, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                closed = true
                throw BrowserFailure("Chromium closed its DevTools pipe (it ended or crashed)")
            }
            received += chunk[0..<n]
        }
    }
}
