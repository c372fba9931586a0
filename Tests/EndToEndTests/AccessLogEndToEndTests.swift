import Foundation
import TestSupport
import Testing

/// `run --access-log -`: the access log on standard output, from the binary as a user starts it.
@Suite struct AccessLogEndToEndTests {
    /// With the transformation log off, `--access-log -` writes a line per request to stdout (here JSON), which a
    /// pipe reads as the requests happen.
    @Test func theAccessLogOnStdoutHasALinePerRequest() throws {
        let upstream = try Upstream()
        defer { upstream.process.signal(SIGTERM) }
        let proxy = try Proxy([
            "--quiet", "--log", "none", "--access-log", "-", "--access-log-format", "json", "--reverse", upstream.base,
        ])
        defer { proxy.process.signal(SIGTERM) }
        let result = try curl(["-o", "/dev/null", "-w", "%{http_code}", proxy.url + "/missing"])
        #expect(result.text == "404")
        let line = try proxy.process.waitForLine(startingWith: "{\"ts\":")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(json["status"] as? Int == 404 && json["ending"] as? String == "relayed", "\(json)")
        #expect((json["request"] as? [String: Any])?["uri"] as? String == "/missing", "\(json)")
    }

    /// Two logs on one stdout would interleave: `--access-log -` with the transformation log on stdout is refused
    /// with what to do, before anything listens.
    @Test func theAccessLogOnStdoutBesideTheLogOnStdoutIsRefused() throws {
        let result = try run(
            Paths.binary, ["run", "--listen", "127.0.0.1:0", "--access-log", "-"],
            environment: ["COOKIE_PROXY_HOME": Proxy.defaultHome], timeout: 30)
        #expect(result.status == 2)
        #expect(result.stderr.contains("--access-log -") && result.stderr.contains("--log"), "\(result.stderr)")
    }
}
