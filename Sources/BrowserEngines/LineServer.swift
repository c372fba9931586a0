import CookieKit
import Foundation
import HTTPGrammar
import HTTPHeads
import Locking
import ProxyPlatform
import ProxyTLS

/// The local server behind every host name: answers a request for the current host with the current line (and
/// anything else without it), then closes. http and https on one port, reached directly (an engine whose resolver
/// maps every name here) or as the engine's proxy: a `CONNECT` is answered 200 and the tunnel is this server's own
/// TLS, an absolute-form request is answered as any other (the Host field names the host either way).
final class LineServer: Sendable {
    let port: Int
    private let listener: Int32
    /// The same port on ::1 when it is free there (so that a URL of `[::1]` reaches the server too).
    private let ipv6Listener: Int32?
    private let tls: TLSServerContext
    private let current = Locked<(line: String, host: String, path: String)>(("", "", "/"))
    private let stopped = AtomicCounter()
    /// The throwaway CA's folder, removed by ``stop()``.
    private let folder: String

    init() throws(BrowserFailure) {
        folder = try BrowserProcess.makeFolder("lines", what: "the line server's folder")
        do {
            let ca = try CertificateAuthority.create(
                in: folder + "/ca", force: true, commonName: "cookie-proxy parse --browser (throwaway)")
            tls = try TLSServerContext(leaves: try LeafCache(ca: ca))
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            throw BrowserFailure("cannot make the local certificate: \(error)")
        }
        switch Descriptors.listen(host: "127.0.0.1", port: 0) {
        case .success(let bound): (listener, port) = bound
        case .failure(let error):
            try? FileManager.default.removeItem(atPath: folder)
            throw BrowserFailure("cannot listen on 127.0.0.1: \(error)")
        }
        if case .success(let bound) = Descriptors.listen(host: "::1", port: port) {
            ipv6Listener = bound.fd
        } else {
            ipv6Listener = nil
        }
        for fd in [listener] + (ipv6Listener.map { [$0] } ?? []) {
            let thread = Thread { [self] in self.acceptLoop(fd) }
            thread.start()
        }
    }

    /// The line for requests to `host` and `path`, compared as the Host field and the request-target's path are read
    /// (``serve(_:)``): an engine's other requests (a favicon, its own background traffic) get no cookie, so the one
    /// stored is the navigation's.
    func set(line: String, host: String, path: String) {
        let path = path.isEmpty ? "/" : path
        current.withLock { $0 = (line, Self.normalised(host), path.removingPercentEncoding ?? path) }
    }

    /// `url` as an engine that reaches the server directly must ask it: a loopback host bypasses resolver rules and
    /// proxies, so the URL names the server's port (cookies do not depend on the port).
    func reachable(_ url: RequestURL) -> RequestURL {
        var target = url
        if HostName.isLoopback(url.host) { target.port = port }
        return target
    }

    /// The path of a request-target in origin or absolute form (without its query), percent-decoded: an engine
    /// escapes what the URL left bare (a space, UTF-8).
    static func path(_ target: String) -> String {
        let path =
            target.contains("://")
            ? RequestURL(target)?.path ?? "" : String(target.prefix { $0 != "?" && $0 != "#" })
        return path.isEmpty ? "/" : path.removingPercentEncoding ?? path
    }

    /// A host as the proxy reads an authority: lowercased, without brackets or a trailing root dot.
    static func normalised(_ host: String) -> String {
        Authority.parse(host[...], defaultPort: 80)?.host ?? host.lowercased()
    }

    /// Stops listening and removes the CA's folder (once).
    func stop() {
        guard stopped.add(1) == 1 else { return }
        close(listener)
        if let ipv6Listener { close(ipv6Listener) }
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func acceptLoop(_ listener: Int32) {
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
        guard var first = readSome(fd) else { return }
        if first.starts(with: Array("CONNECT ".utf8)) {
            // A tunnel through the proxy setting: its head is read whole (nothing follows it before the answer),
            // then the client's TLS begins.
            var head = first
            while !head.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
                guard let more = readSome(fd) else { return }
                head += more
            }
            sendAll(fd, Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8))
            guard let hello = readSome(fd) else { return }
            first = hello
        }
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
        let (line, wanted, path) = current.withLock { $0 }
        let target = request.map { Self.path($0.target) } ?? ""
        let cookie = host == wanted && target == path ? "Set-Cookie: \(line)\r\n" : ""
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
