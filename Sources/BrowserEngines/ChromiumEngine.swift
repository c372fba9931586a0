import CookieKit
import Foundation
import ProxyCore
import ProxyPlatform
import ProxyTLS
import Locking

/// `parse --browser chromium`: what the machine's own Chromium stores for a Set-Cookie line.
///
/// A headless Chromium with a fresh profile is driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: commands on its fd 3, replies on its fd 4, each message ended by NUL). Every host
/// name resolves to a local server (`--host-resolver-rules`) that answers the navigation to the URL with exactly
/// that one Set-Cookie line, over http or https on one port (a first byte of 0x16 is TLS; the certificate comes
/// from a throwaway CA, and Chromium is told to ignore certificate errors). What Chromium then holds is read
/// back with `Storage.getCookies`; the jar is cleared before each line.
final class ChromiumEngine: BrowserEngine {
    private let server: LineServer
    private let pid: Int32
    private let commands: Int32
    private let replies: Int32
    private let profile: String
    private var received: [UInt8] = []
    private var nextID = 0
    private var session = ""

    init(binary: String) throws(BrowserFailure) {
        profile = try makeProfile("chromium")
        server = try LineServer(directory: profile)
        let toBrowser: (read: Int32, write: Int32)
        let fromBrowser: (read: Int32, write: Int32)
        do {
            toBrowser = try ChildProcess.pipe()
            fromBrowser = try ChildProcess.pipe()
        } catch {
            throw BrowserFailure(error.description)
        }
        let arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--ignore-certificate-errors",
            "--disable-features=OptimizationHints,MediaRouter,AutofillServerCommunication",
            "--user-data-dir=\(profile)", "--remote-debugging-pipe",
            "--host-resolver-rules=MAP * 127.0.0.1:\(server.port)", "about:blank",
        ]
        // HOME in the profile: Chromium writes its own files there, not in the user's.
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = profile
        let child: Int32
        do {
            // Standard streams to /dev/null; the DevTools pipe on its fds 3 (commands) and 4 (replies).
            child = try ChildProcess.spawn(
                binary, arguments, environment: env, descriptors: [-1, -1, -1, toBrowser.read, fromBrowser.write])
        } catch {
            for fd in [toBrowser.read, toBrowser.write, fromBrowser.read, fromBrowser.write] { close(fd) }
            throw BrowserFailure(error.description)
        }
        close(toBrowser.read)
        close(fromBrowser.write)
        (pid, commands, replies) = (child, toBrowser.write, fromBrowser.read)
        let target = try call("Target.createTarget", ["url": "about:blank"])["targetId"] as? String ?? ""
        session =
            try call("Target.attachToTarget", ["targetId": target, "flatten": true])["sessionId"] as? String ?? ""
        _ = try call("Page.enable", [:])
    }

    deinit {
        stopChild(pid, group: false) { _ = try? send("Browser.close", [:]) }
        close(commands)
        close(replies)
        server.stop()
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// What Chromium stores when `url` answers with `Set-Cookie: line`: nil if it stores nothing for that host.
    func check(_ line: String, url: RequestURL, readAt: String?) throws(BrowserFailure) -> BrowserCookie? {
        _ = try call("Storage.clearCookies", [:])
        server.set(line: line, host: url.host, path: url.path)
        // Loopback hosts do not go through the resolver rules.
        _ = try call("Page.navigate", ["url": server.reachable(url).description])
        let deadline = Date().addingTimeInterval(15)
        var loaded = false
        while !loaded, Date() < deadline {
            let message = try receive(until: deadline)
            loaded = (message["method"] as? String) == "Page.loadEventFired"
        }
        let cookies = try call("Storage.getCookies", [:])["cookies"] as? [[String: Any]] ?? []
        // Only a cookie for the URL's host counts (Chromium's own background requests reach the server too, but
        // are never answered with the line).
        guard let c = BrowserCookie.first(of: cookies, for: LineServer.normalised(url.host)) else { return nil }
        let sameSite = c["sameSite"] as? String ?? ""
        return BrowserCookie(
            reported: c, name: c["name"] as? String ?? "", value: c["value"] as? String ?? "",
            sameSite: ["Strict", "Lax", "None"].contains(sameSite) ? sameSite : "Default",
            persistent: !(c["session"] as? Bool ?? true))
    }

    // MARK: The DevTools protocol

    private func send(_ method: String, _ params: [String: Any]) throws(BrowserFailure) -> Int {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": params]
        // Page commands go to the attached page; Target, Storage and Browser commands to the browser.
        if !session.isEmpty, method.hasPrefix("Page.") { message["sessionId"] = session }
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
        if failed { throw BrowserFailure("Chromium closed its DevTools pipe") }
        return nextID
    }

    private func receive(until deadline: Date) throws(BrowserFailure) -> [String: Any] {
        while true {
            if let end = received.firstIndex(of: 0) {
                let message = Data(received[..<end])
                received.removeSubrange(...end)
                if let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any] { return object }
                continue
            }
            let left = Int(deadline.timeIntervalSinceNow * 1000)
            guard left > 0, Descriptors.waitReadable(replies, milliseconds: left) else {
                throw BrowserFailure("Chromium did not answer in time")
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(replies, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw BrowserFailure("Chromium closed its DevTools pipe") }
            received += chunk[0..<n]
        }
    }

    private func call(_ method: String, _ params: [String: Any]) throws(BrowserFailure) -> [String: Any] {
        let id = try send(method, params)
        let deadline = Date().addingTimeInterval(20)
        while true {
            let message = try receive(until: deadline)
            guard message["id"] as? Int == id else { continue }
            if let error = message["error"] as? [String: Any] {
                throw BrowserFailure("Chromium refused \(method): \(error["message"] as? String ?? "\(error)")")
            }
            return message["result"] as? [String: Any] ?? [:]
        }
    }
}
