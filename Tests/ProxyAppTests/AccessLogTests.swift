import ExchangeFacts
import Foundation
import ProxyApp
import ProxyCore
import TestSupport
import Testing

/// `run --access-log`: a line per exchange in the combined log format, whatever became of the exchange.
@Suite(.serialized) struct AccessLogTests {
    static let time: Int64 = 1_796_544_907_000  // 2026-12-06 08:15:07 UTC

    static func context(
        _ method: String, scheme: String = "http", host: String = "example.com", port: Int = 80, target: String,
        status: Int?, client: HTTPProtocol = .http1, route: RouteFacts? = nil
    ) -> ExchangeContext {
        ExchangeContext(
            requestID: 1, clientAddress: "127.0.0.1", method: method, scheme: scheme, host: host, port: port,
            target: target, status: status, clientSide: client, route: route)
    }

    /// The request as the client wrote it (a forward proxy's absolute URL; a route's or an https origin's target),
    /// the protocol the client spoke, the status it got, the bytes after the head (`-` for none), and the quoted
    /// fields escaped so that a line has one reading (nginx's `\xNN`).
    @Test(arguments: [
        (
            context("GET", target: "/a?b=1", status: 200), 12, "-", "curl/8.1",
            #"127.0.0.1 - - [06/Dec/2026:08:15:07 +0000] "GET http://example.com/a?b=1 HTTP/1.1" 200 12 "-" "curl/8.1""#
        ),
        (
            context("GET", target: "/api/me", status: 404, route: RouteFacts(name: "/api/", upstreamHost: "api")), 0,
            "http://app.localhost/", "Mozilla/5.0",
            #"127.0.0.1 - - [06/Dec/2026:08:15:07 +0000] "GET /api/me HTTP/1.1" 404 - "http://app.localhost/" "Mozilla/5.0""#
        ),
        (
            context("POST", scheme: "https", port: 443, target: "/rpc", status: 502, client: .http2), 40, "-",
            "a \"quoted\"\nagent\\",
            #"127.0.0.1 - - [06/Dec/2026:08:15:07 +0000] "POST /rpc HTTP/2" 502 40 "-" "a \x22quoted\x22\x0Aagent\x5C""#
        ),
        (
            context("-", host: "", port: 0, target: "-", status: 400), 23, "-", "-",
            #"127.0.0.1 - - [06/Dec/2026:08:15:07 +0000] "-" 400 23 "-" "-""#
        ),
        (
            context("GET", target: "/old", status: 200), 5, "-", "HTTP/1.0 client",
            #"127.0.0.1 - - [06/Dec/2026:08:15:07 +0000] "GET http://example.com/old HTTP/1.0" 200 5 "-" "HTTP/1.0 client""#
        ),
    ])
    func aLineIsTheCombinedLogFormatOfWhatTheClientSentAndGot(
        _ context: ExchangeContext, _ bytes: Int, _ referer: String, _ agent: String, _ expected: String
    ) {
        let line = AccessLog.line(
            context, bodyBytes: bytes, time: Self.time, referer: referer, agent: agent,
            http10: agent.hasPrefix("HTTP/1.0"))
        #expect(line == expected)
    }

    /// The common log format's time in UTC, made from the day number (no time zone work), is the calendar's: leap
    /// days, the turn of a century, the epoch, and today.
    @Test(arguments: [Int64(0), 951_782_400_000, 1_709_164_800_000, 1_796_544_907_999, 4_102_444_799_000])
    func theTimestampIsTheCalendarsInUTC(_ milliseconds: Int64) {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "dd/MMM/yyyy:HH:mm:ss"
        let expected = formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds / 1000))) + " +0000"
        var out: [UInt8] = []
        AccessLog.writeTimestamp(milliseconds, into: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    /// Through a started proxy with routes: a relayed 200 (its Referer and User-Agent on the line), the upstream's
    /// 404, the proxy's own 502 for a route whose upstream is down, its 400 for a malformed request and an HTTP/2
    /// client's request each leave one line, in order, and GoAccess reads every one of them as a valid request.
    @Test func everyExchangeLeavesALineGoAccessReads() throws {
        let home = try temporaryHome("cp-access")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let origin = try TestOrigin()
        defer { origin.stop() }
        let originPort = origin.port

        var configuration = ProxyApp.Configuration(home: home)
        configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
        configuration.routes = [
            try ReverseRoute.parse("/down/=http://127.0.0.1:9").get(),
            try ReverseRoute.parse("/=http://127.0.0.1:\(originPort)").get(),
        ]
        configuration.accessLog = home + "/access.log"
        configuration.http2 = .on
        let proxy = try ProxyApp.start(configuration)
        let port = try #require(proxy.listenerPorts.first)
        func get(_ path: String, _ extra: [String] = []) throws -> String { try curlStatus(port: port, path, extra) }
        #expect(try get("/setcookie", ["-A", "tester/1", "-e", "http://app.localhost/"]) == "200")
        #expect(try get("/missing") == "404")
        #expect(try get("/down/x") == "502")
        #expect(try malformedRequestStatus(port: port) == "400")
        #expect(try get("/missing", ["--http2-prior-knowledge"]) == "404")
        proxy.stop(drain: 1)

        let path = home + "/access.log"
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(lines)")
        let statuses = lines.map { $0.split(separator: "\"")[2].split(separator: " ").first.map(String.init) ?? "" }
        #expect(statuses == ["200", "404", "502", "400", "404"], "\(lines)")
        #expect(lines.first?.contains(#""GET /setcookie HTTP/1.1" 200"#) == true, "\(lines)")
        #expect(lines.first?.hasSuffix(#""http://app.localhost/" "tester/1""#) == true, "\(lines)")
        #expect(lines.last?.contains(#""GET /missing HTTP/2" 404"#) == true, "\(lines)")

        let report = home + "/report.json"
        let goaccess = try run("/usr/bin/goaccess", [path, "--log-format=COMBINED", "-o", report], timeout: 60)
        #expect(goaccess.status == 0, "\(goaccess.stderr)")
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any]
        let general = try #require(json?["general"] as? [String: Any])
        #expect(general["total_requests"] as? Int == 5, "\(general)")
        #expect(general["valid_requests"] as? Int == 5, "\(general)")
    }

    /// logrotate moves the file and sends SIGUSR1 (``RunningProxy/reopenLog()``): the line before is in the moved
    /// file, the line after in a new one at the path, none lost.
    @Test func reopeningAfterLogrotateLosesNoLine() throws {
        let home = try temporaryHome("cp-access")
        defer { try? FileManager.default.removeItem(atPath: home) }
        var configuration = ProxyApp.Configuration(home: home)
        configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
        configuration.routes = [try ReverseRoute.parse("/=http://127.0.0.1:9").get()]
        configuration.accessLog = home + "/access.log"
        let proxy = try ProxyApp.start(configuration)
        let port = try #require(proxy.listenerPorts.first)
        func get(_ path: String) throws {
            _ = try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "http://127.0.0.1:\(port)\(path)"], timeout: 20)
        }
        try get("/before")
        try FileManager.default.moveItem(atPath: home + "/access.log", toPath: home + "/access.log.1")
        proxy.reopenLog()
        try get("/after")
        proxy.stop(drain: 1)
        let moved = try String(contentsOfFile: home + "/access.log.1", encoding: .utf8)
        let fresh = try String(contentsOfFile: home + "/access.log", encoding: .utf8)
        #expect(moved.contains("\"GET /before HTTP/1.1\" 502") && !moved.contains("/after"), "\(moved)")
        #expect(fresh.contains("\"GET /after HTTP/1.1\" 502") && !fresh.contains("/before"), "\(fresh)")
    }

    /// Requests whose exchanges the stage never hears end (a bug: every exchange's end is told, a stream its client
    /// reset and a connection a deadline closed included) do not hold their fields for ever: each loop's table
    /// stays within its limit.
    @Test func fieldsOfExchangesThatNeverEndAreLetGo() throws {
        let home = try temporaryHome("cp-access")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let log = try AccessLog(path: home + "/access.log")
        let part = try #require(log.makeLoopObserver() as? AccessLog.Part)
        for id in 1...UInt64(3 * AccessLog.pendingLimit) { part.note(id, agent: Array("t/1".utf8)) }
        #expect(part.pendingCount <= AccessLog.pendingLimit + 1)
        #expect(part.pendingCount > 0)
    }
}
