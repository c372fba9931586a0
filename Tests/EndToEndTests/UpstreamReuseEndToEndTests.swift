import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Which upstream connection carries each request: a client's requests to one origin share one, an upstream the
/// server closed while idle is replaced, a closing client leaves its upstream to the pool. The upstream answers
/// `/conn` with the port of the proxy's end of the connection it arrived on.
@Suite(.serialized) struct UpstreamReuseEndToEndTests {
    /// One client connection to the proxy, kept open; requests written and answered one at a time.
    final class KeepAliveClient {
        let fd: Int32
        init(port: Int) throws { fd = try connectedLoopbackSocket(port: port) }
        deinit { close(fd) }

        /// GET `url` through the proxy; the status line and the body (the responses here have a Content-Length).
        func get(_ url: String, host: String) throws -> (status: String, body: String) {
            try exchange("GET \(url) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        }

        /// Writes `text`; reads one response (a head, then as many body bytes as its Content-Length says).
        func exchange(_ text: String) throws -> (status: String, body: String) {
            sendAll(fd, Array(text.utf8))
            let received = receive(fd) { Self.response(in: $0) != nil }
            guard let response = Self.response(in: received) else {
                throw HarnessError("the proxy closed the connection after \(received.count) bytes")
            }
            return response
        }

        /// The status line and body of the response at the start of `bytes`, nil while it is incomplete.
        static func response(in bytes: [UInt8]) -> (status: String, body: String)? {
            guard let end = bytes.firstRange(of: [13, 10, 13, 10]) else { return nil }
            let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            guard bytes.count >= end.upperBound + length else { return nil }
            return (
                String(head.split(separator: "\r\n")[0]),
                String(decoding: bytes[end.upperBound..<(end.upperBound + length)], as: UTF8.self)
            )
        }
    }

    /// A request of the scenarios below: which upstream (0 or 1), which path, and a pause before it.
    struct Step: Sendable, CustomStringConvertible {
        var upstream: Int
        var path: String
        var pauseBefore: Double = 0
        var description: String { "\(upstream)\(path)" }
    }

    /// Scenarios on one client connection: the steps, and which of their answers must come over the same
    /// upstream connection (indices into the steps) and which over different ones.
    struct Scenario: Sendable, CustomStringConvertible {
        var name: String
        var steps: [Step]
        var same: [[Int]]
        var different: [[Int]]
        var description: String { name }
    }

    @Test(arguments: [
        Scenario(
            name: "one origin: every request over the same upstream connection",
            steps: [
                Step(upstream: 0, path: "/conn"), Step(upstream: 0, path: "/conn"), Step(upstream: 0, path: "/conn"),
            ],
            same: [[0, 1, 2]], different: []),
        Scenario(
            name: "the server closes the kept upstream: the next request gets a new one",
            steps: [Step(upstream: 0, path: "/conn-close"), Step(upstream: 0, path: "/conn", pauseBefore: 0.3)],
            same: [], different: [[0, 1]]),
        Scenario(
            name: "the server closes it just as the next request comes: the request is retried on a new one",
            steps: [Step(upstream: 0, path: "/conn-close"), Step(upstream: 0, path: "/conn")],
            same: [], different: [[0, 1]]),
        Scenario(
            name: "two origins in turn: each keeps its own upstream connection (through the pool)",
            steps: [
                Step(upstream: 0, path: "/conn"), Step(upstream: 1, path: "/conn"), Step(upstream: 0, path: "/conn"),
                Step(upstream: 1, path: "/conn"),
            ],
            same: [[0, 2], [1, 3]], different: []),
    ])
    func requestsOfOneClientUseTheRightUpstreamConnection(_ scenario: Scenario) throws {
        let upstreams = [try Upstream(), try Upstream()]
        let proxy = try Proxy()
        let client = try KeepAliveClient(port: proxy.port)
        var ports: [String] = []
        for step in scenario.steps {
            if step.pauseBefore > 0 { usleep(UInt32(step.pauseBefore * 1_000_000)) }
            let upstream = upstreams[step.upstream]
            let (status, body) = try client.get(upstream.base + step.path, host: "127.0.0.1:\(upstream.port)")
            #expect(status == "HTTP/1.1 200 OK", "\(step) \(body)")
            ports.append(body)
        }
        for group in scenario.same { #expect(Set(group.map { ports[$0] }).count == 1, "\(group): \(ports)") }
        for group in scenario.different {
            #expect(Set(group.map { ports[$0] }).count == group.count, "\(group): \(ports)")
        }
    }

    @Test func aTunnelGetsAConnectionOfItsOwnNotTheClientsKeptOne() throws {
        let upstream = try Upstream()
        let proxy = try Proxy()
        let client = try KeepAliveClient(port: proxy.port)
        let host = "127.0.0.1:\(upstream.port)"
        let first = try client.get(upstream.base + "/conn", host: host)
        // The same client now asks for a tunnel to the same host and port, and speaks HTTP through it.
        let tunnel = try client.exchange("CONNECT \(host) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        #expect(tunnel.status.hasPrefix("HTTP/1.1 200"))
        let inside = try client.exchange("GET /conn HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        #expect(inside.status == "HTTP/1.1 200 OK")
        #expect(Int(first.body) != nil && Int(inside.body) != nil)
        #expect(first.body != inside.body, "the tunnel went over the kept keep-alive connection")
    }

    @Test func aClosingClientLeavesItsUpstreamToTheNextClient() throws {
        let upstream = try Upstream()
        let proxy = try Proxy(threads: 1)
        var ports: [String] = []
        for _ in 0..<3 {
            usleep(100_000)
            let client = try KeepAliveClient(port: proxy.port)
            ports.append(try client.get(upstream.base + "/conn", host: "127.0.0.1:\(upstream.port)").body)
            // The client goes away (its socket closed at the end of this iteration); its upstream goes back to
            // the (one) loop's pool.
            withExtendedLifetime(client) {}
        }
        #expect(ports.allSatisfy { Int($0) != nil })
        #expect(Set(ports).count == 1, "\(ports)")
    }
}
