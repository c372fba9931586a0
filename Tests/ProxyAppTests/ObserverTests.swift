import CookieRules
import ExchangeFacts
import Foundation
import Locking
import ProxyApp
import ProxyCore
import TestSupport
import Testing

/// What is told every exchange (``ExchangeObserver``): an observer of one's own added through the configuration, and
/// the JSON access log, itself an observer.
@Suite(.serialized) struct ObserverTests {
    /// Every event of every exchange, as a plain record.
    final class Recording: ExchangeObserver {
        struct Exchange {
            var id: UInt64
            var sentTarget = ""
            var sentHost = ""
            var lines: [(received: String, forwarded: String?)] = []
            var responseStatus: Int?
            var finishedStatus: Int?
            var bodyBytes = -1
            var ending: ExchangeEnding?
            var clientSide: HTTPProtocol?
            var times = ExchangeTimes()
            var order: [String] = []
        }
        /// Shared by every loop's part, so behind a lock.
        private let table = Locked<[UInt64: Exchange]>([:])
        var exchanges: [Exchange] { table.withLock { $0.values.sorted { $0.id < $1.id } } }

        func makeLoopObserver() -> (any LoopObserver)? { Part(table: table) }

        /// One loop's part: told that loop's exchanges, on its thread.
        final class Part: LoopObserver {
            let table: Locked<[UInt64: Exchange]>
            init(table: Locked<[UInt64: Exchange]>) { self.table = table }

            private func update(_ id: UInt64, _ event: String, _ body: (inout Exchange) -> Void) {
                table.withLock { table in
                    var e = table[id] ?? Exchange(id: id)
                    e.order.append(event)
                    body(&e)
                    table[id] = e
                }
            }

            func didForwardRequest(_ request: borrowing ForwardedRequest) {
                let (target, host) = (
                    request.target,
                    request.sent.indices(of: .host).first.map {
                        String(decoding: request.sent.valueBytes(at: $0), as: UTF8.self)
                    }
                        ?? ""
                )
                update(request.context.requestID, "request") { ($0.sentTarget, $0.sentHost) = (target, host) }
            }

            func didDecideLine(_ line: borrowing SetCookieLine) {
                let seen = (
                    String(decoding: line.received, as: UTF8.self),
                    line.forwarded.map { String(decoding: $0, as: UTF8.self) }
                )
                update(line.context.requestID, "line") { $0.lines.append(seen) }
            }

            func didForwardResponse(_ response: borrowing ForwardedResponse) {
                let status = response.context.status
                update(response.context.requestID, "response") { $0.responseStatus = status }
            }

            func exchangeEnded(_ exchange: borrowing EndedExchange) {
                let (status, bytes, ending, side, times) = (
                    exchange.context.status, exchange.bodyBytes, exchange.ending, exchange.context.clientSide,
                    exchange.times
                )
                update(exchange.context.requestID, "finished") {
                    ($0.finishedStatus, $0.bodyBytes, $0.ending, $0.clientSide, $0.times) = (
                        status, bytes, ending, side, times
                    )
                }
            }
        }
    }

    static func lines(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// An observer given in `Configuration.observers`, with no other change, is told all four events of an HTTP/1.1
    /// and an HTTP/2 exchange, in order, and what it is told is what the transformation log and the access log wrote:
    /// the lines as forwarded, the status, the bytes, the target and Host sent upstream.
    @Test func anObserverAddedByConfigurationIsToldEveryEventAsTheLogsWroteThem() throws {
        let home = try temporaryHome("cp-observer")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let origin = try TestOrigin()
        defer { origin.stop() }
        let recording = Recording()
        var configuration = ProxyApp.Configuration(home: home)
        configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
        configuration.routes = [try ReverseRoute.parse("/app/=http://127.0.0.1:\(origin.port)/").get()]
        configuration.rules = RuleSet(
            rules: try RulesParser.parse("rule \"harden\" {\n    cookie sid\n    secure\n}\n", file: "t.rules"),
            files: ["t.rules"])
        configuration.log = .init(destination: .file(home + "/log.jsonl"))
        configuration.showValues = true
        configuration.accessLog = home + "/access.jsonl"
        configuration.accessLogFormat = .json
        configuration.http2 = .on
        configuration.observers = [recording]
        let proxy = try ProxyApp.start(configuration)
        let port = try #require(proxy.listenerPorts.first)
        let path = "/app/setcookie?c=sid%3Dabc%3B%20Path%3D%2F&c=plain%3D1"
        for extra in [[], ["--http2-prior-knowledge"]] {
            #expect(try curlStatus(port: port, path, extra) == "200")
        }
        proxy.stop(drain: 1)

        let seen = recording.exchanges
        #expect(seen.count == 2)
        let access = try Self.lines(home + "/access.jsonl")
        let records = try Self.lines(home + "/log.jsonl").filter { $0["cookie"] as? String == "sid" }
        #expect(access.count == 2 && records.count == 2)
        for (k, (e, line)) in zip(seen, access).enumerated() {
            #expect(e.order == ["request", "line", "line", "response", "finished"], "\(e.order)")
            #expect(e.clientSide == (k == 0 ? .http1 : .http2))
            #expect(e.sentTarget == "/setcookie?c=sid%3Dabc%3B%20Path%3D%2F&c=plain%3D1")
            #expect(e.sentHost == "127.0.0.1:\(origin.port)")
            #expect(e.responseStatus == 200 && e.finishedStatus == 200 && e.ending == .relayed)
            #expect(e.lines.map(\.received) == ["sid=abc; Path=/", "plain=1"])
            #expect(e.lines.map(\.forwarded) == ["sid=abc; Path=/; Secure", "plain=1"])
            let times = e.times
            #expect(times.accepted > 0 && times.accepted <= times.requestHead)
            #expect(times.requestHead <= times.upstreamConnected && times.upstreamConnected <= times.responseHead)
            #expect(times.responseHead <= times.ended)
            // What the logs wrote of the same exchange.
            #expect(line["status"] as? Int == e.finishedStatus && line["size"] as? Int == e.bodyBytes, "\(line)")
            let request = try #require(line["request"] as? [String: Any])
            #expect(request["proto"] as? String == (k == 0 ? "HTTP/1.1" : "HTTP/2"), "\(line)")
            let upstream = try #require(line["upstream_request"] as? [String: Any])
            #expect(upstream["uri"] as? String == e.sentTarget && upstream["host"] as? String == e.sentHost)
            #expect(records[k]["after"] as? String == e.lines[0].forwarded, "\(records[k])")
        }
    }

    /// `--access-log-format json`: every line is one JSON object with the documented fields and their types; a
    /// route's request shows the target and Host sent upstream beside the client's (a 404 from a wrong prefix mapping
    /// is debugged from it), the proxy's own 502 for an upstream it could not reach claims no request sent there, a
    /// malformed request's 400 has what of the request was read (its method, target and Host), and an HTTP/1.0
    /// request is logged as one.
    @Test func theJSONAccessLogCarriesTheDocumentedFieldsAndWhatWentUpstream() throws {
        let home = try temporaryHome("cp-access-json")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let origin = try TestOrigin()
        defer { origin.stop() }
        var configuration = ProxyApp.Configuration(home: home)
        configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
        configuration.routes = [
            try ReverseRoute.parse("/down/=http://127.0.0.1:9").get(),
            try ReverseRoute.parse("/api/=http://127.0.0.1:\(origin.port)/v1/").get(),
        ]
        configuration.accessLog = home + "/access.jsonl"
        configuration.accessLogFormat = .json
        let proxy = try ProxyApp.start(configuration)
        let port = try #require(proxy.listenerPorts.first)
        func get(_ path: String, _ extra: [String] = []) throws -> String { try curlStatus(port: port, path, extra) }
        #expect(try get("/api/missing", ["-A", "tester/1", "-e", "http://app.localhost/\u{e9}"]) == "404")
        #expect(try get("/down/x") == "502")
        #expect(try malformedRequestStatus(port: port) == "400")
        #expect(try get("/api/old", ["--http1.0"]) == "404")
        proxy.stop(drain: 1)

        let lines = try Self.lines(home + "/access.jsonl")
        #expect(lines.count == 4)
        // Every documented field, with its type (NSNumber for numbers; null where the docs say it may be).
        let fields: [(String, (Any) -> Bool)] = [
            ("ts", { $0 is NSNumber }), ("request", { $0 is [String: Any] }), ("bytes_read", { $0 is NSNumber }),
            ("status", { $0 is NSNumber }), ("size", { $0 is NSNumber }), ("duration", { $0 is NSNumber }),
            ("ending", { $0 is String }), ("route", { $0 is String || $0 is NSNull }),
            ("upstream", { $0 is String || $0 is NSNull }), ("upstream_proto", { $0 is String || $0 is NSNull }),
            ("upstream_request", { $0 is [String: Any] || $0 is NSNull }), ("cookies_changed", { $0 is NSNumber }),
            ("verdicts", { $0 is NSNumber }),
        ]
        for line in lines {
            #expect(Set(line.keys) == Set(fields.map(\.0)), "\(line)")
            for (name, valid) in fields { #expect(line[name].map(valid) == true, "\(name) in \(line)") }
            let request = try #require(line["request"] as? [String: Any])
            #expect(Set(request.keys) == ["remote_ip", "proto", "method", "host", "uri", "headers"], "\(request)")
            #expect(request["remote_ip"] as? String == "127.0.0.1")
            let ts = try #require(line["ts"] as? Double)
            #expect(abs(ts - Date().timeIntervalSince1970) < 600)
        }
        let (routed, down, malformed) = (lines[0], lines[1], lines[2])
        let request = try #require(routed["request"] as? [String: Any])
        #expect(request["uri"] as? String == "/api/missing" && request["method"] as? String == "GET")
        let headers = try #require(request["headers"] as? [String: [String]])
        #expect(headers["User-Agent"] == ["tester/1"], "\(headers)")
        #expect(headers["Referer"]?.first?.hasPrefix("http://app.localhost/") == true, "\(headers)")
        #expect(routed["status"] as? Int == 404 && routed["ending"] as? String == "relayed")
        #expect((routed["route"] as? String)?.hasPrefix("/api/ ") == true, "\(routed)")
        #expect(routed["upstream"] as? String == "127.0.0.1" && routed["upstream_proto"] as? String == "HTTP/1.1")
        let sent = try #require(routed["upstream_request"] as? [String: Any])
        #expect(sent["uri"] as? String == "/v1/missing" && sent["host"] as? String == "127.0.0.1:\(origin.port)")
        #expect((routed["duration"] as? Double ?? -1) >= 0 && routed["size"] as? Int == 0, "\(routed)")
        #expect(down["status"] as? Int == 502 && down["ending"] as? String == "answered")
        #expect(down["upstream_proto"] is NSNull && (down["size"] as? Int ?? 0) > 0, "\(down)")
        #expect(down["upstream_request"] is NSNull, "\(down)")
        #expect(down["upstream"] as? String == "127.0.0.1", "\(down)")
        #expect(malformed["status"] as? Int == 400 && malformed["upstream_request"] is NSNull)
        let read = try #require(malformed["request"] as? [String: Any])
        #expect(
            read["method"] as? String == "GET" && read["uri"] as? String == "/" && read["host"] as? String == "a",
            "\(read)")
        // The request line's version, not only the protocol's name.
        #expect((lines[3]["request"] as? [String: Any])?["proto"] as? String == "HTTP/1.0", "\(lines[3])")
    }

    /// An exchange the shell ends itself, not the machine (an HTTP/2 client resets its stream while the upstream is
    /// still answering), is told as any other: cut short, with a line in the access log.
    @Test func anExchangeWhoseStreamItsClientResetsEndsCutWithALine() throws {
        let home = try temporaryHome("cp-access-reset")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let origin = try TestOrigin()
        defer { origin.stop() }
        var configuration = ProxyApp.Configuration(home: home)
        configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
        configuration.routes = [try ReverseRoute.parse("/=http://127.0.0.1:\(origin.port)").get()]
        configuration.accessLog = home + "/access.jsonl"
        configuration.accessLogFormat = .json
        configuration.http2 = .on
        let proxy = try ProxyApp.start(configuration)
        let port = try #require(proxy.listenerPorts.first)
        // h2c with prior knowledge: stream 1 asks for a response that takes 2 s and is reset after 0.3 s; stream 3
        // then gets an answer, so the reset was taken before the connection closes.
        let script = """
            import socket, time, h2.connection, h2.config, h2.events
            s = socket.create_connection(("127.0.0.1", \(port)))
            c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
            c.initiate_connection()
            def get(stream, path):
                c.send_headers(stream, [(":method", "GET"), (":scheme", "http"), (":path", path),
                                        (":authority", "127.0.0.1")], end_stream=True)
                s.sendall(c.data_to_send())
            get(1, "/slow=2")
            time.sleep(0.3)
            c.reset_stream(1)
            s.sendall(c.data_to_send())
            get(3, "/hello")
            done = False
            while not done:
                for e in c.receive_data(s.recv(65536)):
                    if isinstance(e, h2.events.StreamEnded) and e.stream_id == 3: done = True
                s.sendall(c.data_to_send())
            print("ok")
            """
        let result = try run(
            BuiltBinary.repositoryRoot + "/.build/test-python/bin/python", ["-c", script], timeout: 30)
        #expect(String(decoding: result.stdout, as: UTF8.self).hasPrefix("ok"), "\(result.stderr)")
        proxy.stop(drain: 1)
        let lines = try Self.lines(home + "/access.jsonl")
        let reset = try #require(
            lines.first { ($0["request"] as? [String: Any])?["uri"] as? String == "/slow=2" }, "\(lines)")
        #expect(reset["ending"] as? String == "cut" && reset["status"] as? Int == 0, "\(reset)")
        #expect((reset["request"] as? [String: Any])?["proto"] as? String == "HTTP/2")
        #expect(lines.count == 2 && lines.contains { $0["ending"] as? String == "relayed" }, "\(lines)")
    }
}
