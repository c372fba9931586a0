import Foundation
import HTTPGrammar
import HTTPHeads
import Locking
import ProxyCore
import ProxyPlatform
import ProxyServer

/// `run --metrics HOST:PORT`: `GET /metrics` in the Prometheus text format (``Metrics``), on a listener and a
/// thread of its own, one request per connection, so that a scrape never waits on the proxy's event loops nor they
/// on it. Like every local page of the proxy it needs the installation's token (`Authorization: Bearer`, what
/// Prometheus sends with `authorization: {credentials_file: …/inspector-token}`); the request head is read with the
/// proxy's own strict parser, within 8 KiB and 5 seconds.
final class MetricsServer: Sendable {
    let port: Int
    private let listener: Int32
    private let token: String
    private let stopped = AtomicCounter()
    private let snapshot: @Sendable () -> Metrics

    init(host: String, port: Int, token: String, snapshot: @escaping @Sendable () -> Metrics)
        throws(SocketError)
    {
        let (fd, bound) = try Descriptors.listen(host: host, port: port).get()
        (self.listener, self.port, self.token, self.snapshot) = (fd, bound, token, snapshot)
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    /// Stops accepting (within 200 ms) and closes the listener.
    func stop() { stopped.add(1) }

    private func acceptLoop() {
        while stopped.load() == 0 {
            guard Descriptors.waitReadable(listener, milliseconds: 200), let connection = Descriptors.accept(listener)
            else { continue }
            Descriptors.sendAll(connection, answer(readHead(connection)))
            close(connection)
        }
        close(listener)
    }

    /// The request head, whole, or nil (closed, over 8 KiB, or 5 seconds without it).
    private func readHead(_ fd: Int32) -> [UInt8]? {
        var bytes: [UInt8] = []
        while bytes.count <= 8192 {
            guard Descriptors.waitReadable(fd, milliseconds: 5000), case .bytes(let more) = Descriptors.receive(fd)
            else { return nil }
            bytes += more
            if let end = bytes.firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A]) { return Array(bytes[..<end.upperBound]) }
        }
        return nil
    }

    /// The response to `head` (nil: none came whole).
    func answer(_ head: [UInt8]?) -> [UInt8] {
        guard let head, let request = try? HTTPHeadParser().parseRequest(head) else {
            return Self.response(400, "text/plain", "cookie-proxy: not an HTTP/1.1 request head within 8 KiB\n")
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            return Self.response(405, "text/plain", "cookie-proxy: metrics are read with GET\n", allow: true)
        }
        let path = request.target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        guard path == "/metrics" else {
            return Self.response(404, "text/plain", "cookie-proxy: the metrics are at /metrics\n")
        }
        let presented = request.head.values("authorization").first.flatMap { value -> String? in
            let parts = value.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
            return parts[1].trimmingCharacters(in: .whitespaces)
        }
        guard let presented, InspectorService.constantTimeEqual(presented, token) else {
            return Self.response(
                401, "text/plain",
                "cookie-proxy: send the installation's token (inspector-token next to the CA) as Authorization: Bearer\n"
            )
        }
        let body = snapshot().text
        return Self.response(
            200, "text/plain; version=0.0.4; charset=utf-8", request.method == "HEAD" ? nil : body,
            length: body.utf8.count)
    }

    static func response(
        _ status: Int, _ type: String, _ body: String?, length: Int? = nil, allow: Bool = false
    ) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(ProxyAnswer.reasonPhrase(status))\r\nContent-Type: \(type)\r\n"
        text += "Content-Length: \(length ?? body?.utf8.count ?? 0)\r\nCache-Control: no-store\r\n"
        if allow { text += "Allow: GET, HEAD\r\n" }
        if status == 401 { text += "WWW-Authenticate: Bearer\r\n" }
        text += "Connection: close\r\n\r\n" + (body ?? "")
        return Array(text.utf8)
    }
}
