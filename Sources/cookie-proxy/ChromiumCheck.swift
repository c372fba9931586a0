import CookieKit
import Foundation
import ProxyCore
import ProxyTLS
import Locking
import ProxyServer

/// `parse --browser chromium`: what the machine's own Chromium stores for a Set-Cookie line.
///
/// A headless Chromium with a fresh profile is driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: commands on its fd 3, replies on its fd 4, each message ended by NUL). Every host
/// name resolves to a local server (`--host-resolver-rules`) that answers the navigation to the URL with exactly
/// that one Set-Cookie line, over http or https on one port (a first byte of 0x16 is TLS; the certificate comes
/// from a throwaway CA, and Chromium is told to ignore certificate errors). What Chromium then holds is read
/// back with `Storage.getCookies`; the jar is cleared before each line.
final class ChromiumCheck {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A cookie as Chromium stored it, in the fields `parse` reports.
    struct Stored: Equatable {
        var name: String
        var value: String
        var domain: String
        var hostOnly: Bool
        var path: String
        var secure: Bool
        var httpOnly: Bool
        var sameSite: String
        var persistent: Bool
    }

    static let searched = [
        "/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome",
        "/Applications/Chromium.app/Contents/MacOS/Chromium",
        "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    ]

    /// The browser to run: `COOKIE_PROXY_CHROMIUM`, else the first of ``searched`` that exists.
    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws(Failure) -> String {
        if let given = environment["COOKIE_PROXY_CHROMIUM"] {
            guard FileManager.default.isExecutableFile(atPath: given) else {
                throw Failure(description: "COOKIE_PROXY_CHROMIUM=\(given) is not an executable file")
            }
            return given
        }
        guard let found = searched.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Failure(
                description: "no Chromium found (looked for \(searched.joined(separator: ", "))); install it "
                    + "(Debian: apt-get install chromium) or set COOKIE_PROXY_CHROMIUM to its executable")
        }
        return found
    }

    private let server: LineServer
    private let pid: Int32
    private let commands: Int32
    private let replies: Int32
    private let profile: String
    private var received: [UInt8] = []
    private var nextID = 0
    private var session = ""

    init(binary: String) throws(Failure) {
        profile = NSTemporaryDirectory() + "cookie-proxy-chromium-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(
                atPath: profile, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw Failure(description: "cannot create a profile folder \(profile): \(error.localizedDescription)")
        }
        server = try LineServer(directory: profile)
        let toBrowser: (read: Int32, write: Int32)
        let fromBrowser: (read: Int32, write: Int32)
        do {
            toBrowser = try ChildProcess.pipe()
            fromBrowser = try ChildProcess.pipe()
        } catch {
            throw Failure(description: error.description)
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
            throw Failure(description: error.description)
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
        _ = try? send("Browser.close", [:])
        var exited = false
        for _ in 0..<100 where !exited {
            exited = ChildProcess.reap(pid) != nil
            if !exited { usleep(20_000) }
        }
        if !exited {
            var status: Int32 = 0
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
        }
        close(commands)
        close(replies)
        server.stop()
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// What Chromium stores when `url` answers with `Set-Cookie: line`: nil if it stores nothing for that host.
    func check(_ line: String, url: RequestURL) throws(Failure) -> Stored? {
        _ = try call("Storage.clearCookies", [:])
        server.set(line: line, host: url.host)
        // Loopback hosts do not go through the resolver rules: the URL then names the server's port (cookies
        // do not depend on the port).
        var target = url
        if Host.isLoopback(url.host) { target.port = server.port }
        _ = try call("Page.navigate", ["url": target.description])
        let deadline = Date().addingTimeInterval(15)
        var loaded = false
        while !loaded, Date() < deadline {
            let message = try receive(until: deadline)
            loaded = (message["method"] as? String) == "Page.loadEventFired"
        }
        let cookies = try call("Storage.getCookies", [:])["cookies"] as? [[String: Any]] ?? []
        // Only a cookie for the URL's host counts (Chromium's own background requests reach the server too, but
        // are never answered with the line).
        let host = LineServer.normalised(url.host)
        guard
            let c = cookies.first(where: { c in
                let d = (c["domain"] as? String ?? "").lowercased()
                let bare = d.hasPrefix(".") ? String(d.dropFirst()) : d
                return host == bare || host.hasSuffix("." + bare)
            })
        else { return nil }
        let domain = c["domain"] as? String ?? ""
        let sameSite = c["sameSite"] as? String ?? ""
        return Stored(
            name: c["name"] as? String ?? "", value: c["value"] as? String ?? "",
            domain: domain.hasPrefix(".") ? String(domain.dropFirst()) : domain, hostOnly: !domain.hasPrefix("."),
            path: c["path"] as? String ?? "", secure: c["secure"] as? Bool ?? false,
            httpOnly: c["httpOnly"] as? Bool ?? false,
            sameSite: ["Strict", "Lax", "None"].contains(sameSite) ? sameSite : "Default",
            persistent: !(c["session"] as? Bool ?? true))
    }

    // MARK: The DevTools protocol

    private func send(_ method: String, _ params: [String: Any]) throws(Failure) -> Int {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": params]
        // Page commands go to the attached page; Target, Storage and Browser commands to the browser.
        if !session.isEmpty, method.hasPrefix("Page.") { message["sessionId"] = session }
        guard var bytes = try? JSONSerialization.data(withJSONObject: message) else {
            throw Failure(description: "cannot encode \(method)")
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
        if failed { throw Failure(description: "Chromium closed its DevTools pipe") }
        return nextID
    }

    private func receive(until deadline: Date) throws(Failure) -> [String: Any] {
        while true {
            if let end = received.firstIndex(of: 0) {
                let message = Data(received[..<end])
                received.removeSubrange(...end)
                if let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any] { return object }
                continue
            }
            let left = Int(deadline.timeIntervalSinceNow * 1000)
            guard left > 0, Descriptors.waitReadable(replies, milliseconds: left) else {
                throw Failure(description: "Chromium did not answer in time")
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(replies, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure(description: "Chromium closed its DevTools pipe") }
            received += chunk[0..<n]
        }
    }

    private func call(_ method: String, _ params: [String: Any]) throws(Failure) -> [String: Any] {
        let id = try send(method, params)
        let deadline = Date().addingTimeInterval(20)
        while true {
            let message = try receive(until: deadline)
            guard message["id"] as? Int == id else { continue }
            if let error = message["error"] as? [String: Any] {
                throw Failure(description: "Chromium refused \(method): \(error["message"] as? String ?? "\(error)")")
            }
            return message["result"] as? [String: Any] ?? [:]
        }
    }
}

/// The local server behind every host name: answers a request for the current host with the current line (and
/// anything else without it), then closes. http and https on one port.
fileprivate final class LineServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let tls: TLSServerContext
    private let current = Locked<(line: String, host: String)>(("", ""))
    private let stopped = AtomicCounter()

    init(directory: String) throws(ChromiumCheck.Failure) {
        do {
            let ca = try CertificateAuthority.create(
                in: directory + "/ca", force: true, commonName: "cookie-proxy parse --browser (throwaway)")
            tls = try TLSServerContext(leaves: try LeafCache(ca: ca))
        } catch {
            throw ChromiumCheck.Failure(description: "cannot make the local certificate: \(error)")
        }
        switch Descriptors.listen(host: "127.0.0.1", port: 0) {
        case .success(let bound): (listener, port) = bound
        case .failure(let error):
            throw ChromiumCheck.Failure(description: "cannot listen on 127.0.0.1: \(error)")
        }
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    /// The line for requests to `host`, compared as the Host field is read (``serve(_:)``).
    func set(line: String, host: String) {
        current.withLock { $0 = (line, Self.normalised(host)) }
    }

    /// A host as the proxy reads an authority: lowercased, without brackets or a trailing root dot.
    static func normalised(_ host: String) -> String {
        Authority.parse(host[...], defaultPort: 80)?.host ?? host.lowercased()
    }

    func stop() {
        stopped.store(1)
        close(listener)
    }

    private func acceptLoop() {
        while stopped.load() == 0 {
            guard Descriptors.waitReadable(listener, milliseconds: 200), let conn = Descriptors.accept(listener) else {
                continue
            }
            let thread = Thread { [self] in
                self.serve(conn)
                close(conn)
            }
            thread.start()
        }
    }

    /// Reads what is there within five seconds (nil: closed or timed out).
    private func readSome(_ fd: Int32) -> [UInt8]? {
        guard Descriptors.waitReadable(fd, milliseconds: 5000), case .bytes(let bytes) = Descriptors.receive(fd) else {
            return nil
        }
        return bytes
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) { Descriptors.sendAll(fd, bytes) }

    private func serve(_ fd: Int32) {
        guard let first = readSome(fd) else { return }
        var engine: TLSEngine? = nil
        var plain: [UInt8] = []
        if first.first == 0x16 {
            guard let e = try? TLSEngine(server: tls, connectHost: "localhost") else { return }
            engine = e
            var incoming = first
            while true {
                e.feed(incoming[...])
                guard e.handshake() == .ok else { return }
                var out: [UInt8] = []
                e.drainCiphertext(into: &out)
                sendAll(fd, out)
                if e.handshakeComplete { break }
                guard let more = readSome(fd) else { return }
                incoming = more
            }
            _ = e.readPlaintext(into: &plain)
        } else {
            plain = first
        }
        var parser = HTTPHeadParser()
        var length: Int? = nil
        while length == nil {
            do { length = try parser.headLength(plain[...]) } catch { return }
            if length != nil { break }
            guard let more = readSome(fd) else { return }
            if let e = engine {
                e.feed(more[...])
                _ = e.readPlaintext(into: &plain)
            } else {
                plain += more
            }
        }
        // The Host field's host, as the proxy reads it (lowercased, without port or brackets).
        let request = try? parser.parseRequest(Array(plain[..<(length ?? plain.count)]))
        let host = request?.head.values(.host).first.flatMap { Authority.parse($0[...], defaultPort: 80)?.host } ?? ""
        let (line, wanted) = current.withLock { $0 }
        let cookie = host == wanted ? "Set-Cookie: \(line)\r\n" : ""
        let response = Array(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\(cookie)Content-Length: 2\r\nConnection: close\r\n\r\nok"
                .utf8)
        if let e = engine {
            _ = e.write(response[...])
            e.close()
            var out: [UInt8] = []
            e.drainCiphertext(into: &out)
            sendAll(fd, out)
        } else {
            sendAll(fd, response)
        }
    }
}
