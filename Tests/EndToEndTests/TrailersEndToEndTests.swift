import Foundation
import TestSupport
import Testing

/// Trailers cross the proxy both ways on every pair of protocols (RFC 9110 §6.5, RFC 9112 §7.1.2, RFC 9113 §8.1),
/// through the real binary in reverse mode, with real peers on both sides (Fixtures/trailers_peer.py: raw HTTP/1.1
/// sockets, Python's h2): a request's trailers reach the origin, which echoes them in its body, and the response's
/// trailers (gRPC's `grpc-status` among them) reach the client.
@Suite(.serialized) struct TrailersEndToEndTests {
    /// `/length`: the HTTP/2 origin declares its body's length, and its trailers still arrive (an HTTP/1.1 client
    /// that sent `TE: trailers` gets the body chunked to carry them).
    @Test(arguments: [
        ("h1", "h1", "/t"), ("h1", "h2", "/t"), ("h2", "h1", "/t"), ("h2", "h2", "/t"), ("h1", "h2", "/length"),
        ("h2", "h2", "/length"),
    ])
    func trailersCrossBothWays(_ client: String, _ origin: String, _ path: String) throws {
        let peer = try TestProcess(
            HTTP2EndToEndTests.python, ["-u", Paths.fixtures + "/trailers_peer.py", "origin", origin])
        let port = Int(try peer.waitForLine(startingWith: "PORT ").dropFirst(5))!
        let scheme = origin == "h2" ? "h2c" : "http"
        let proxy = try Proxy(["--quiet", "--reverse", "\(scheme)://127.0.0.1:\(port)"])
        let result = try run(
            HTTP2EndToEndTests.python,
            [Paths.fixtures + "/trailers_peer.py", "client", client, "\(proxy.port)", path], timeout: 30)
        let answer = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] ?? [:]
        #expect(answer["status"] as? Int == 200, "\(result.text) \(result.stderr)")
        #expect(answer["body"] as? String == "x-request-trailer=q1", "the origin saw: \(result.text)")
        #expect(
            answer["trailers"] as? [String: String] == ["x-response-trailer": "r1", "grpc-status": "0"],
            "the client got: \(result.text)")
    }
}
