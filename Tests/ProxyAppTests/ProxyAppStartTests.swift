import CookieRules
import Foundation
import ProxyApp
import TestSupport
import Testing

/// The proxy started as a library (``ProxyApp/start(_:)``), without the executable: a real upstream (the end-to-end
/// tests' Fixtures/upstream.py) and a real client (curl) on either side.
@Suite(.serialized) struct ProxyAppStartTests {
    /// Start, one exchange with the rules applied, a reload that changes them, another exchange, stop: the log has
    /// a record of each exchange under the rule in force, and nothing listens any more.
    @Test func aProxyStartedByOneCallServesReloadsAndStops() throws {
        let home = try temporaryHome("cp-app")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let rules = home + "/a.rules"
        try "rule \"lock\" {\n    cookie lower\n    httponly\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let origin = try TestOrigin()
        defer { origin.stop() }
        let originPort = origin.port

        var configuration = ProxyApp.Configuration(home: home)
        configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
        configuration.rules = try RulesFiles.load(rules)
        configuration.rulesPath = rules
        configuration.log = .init(destination: .file(home + "/log.jsonl"))
        let proxy = try ProxyApp.start(configuration)
        let port = try #require(proxy.listenerPorts.first)
        #expect(port > 0)

        func fetch() throws -> String {
            let result = try run(
                "/usr/bin/curl",
                [
                    "-s", "-D", "-", "-o", "/dev/null", "-x", "http://127.0.0.1:\(port)",
                    "http://127.0.0.1:\(originPort)/cookies",
                ],
                timeout: 20)
            return String(decoding: result.stdout, as: UTF8.self)
        }
        let first = try fetch()
        #expect(first.contains("set-cookie: lower=case;path=/p;; HttpOnly\r\n"), "\(first)")

        try "rule \"secure\" {\n    cookie lower\n    secure\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        proxy.reload(reason: "test")
        let second = try fetch()
        #expect(second.contains("set-cookie: lower=case;path=/p;; Secure\r\n"), "\(second)")
        // Its status is a value: the two requests read, nothing closed early, no state-machine surprise.
        let status = proxy.status
        #expect(status.requests == 2 && status.closings.isEmpty && status.unexpectedEvents == 0, "\(status)")

        proxy.stop(drain: 1)
        let log = try String(contentsOfFile: home + "/log.jsonl", encoding: .utf8)
        #expect(log.contains("\"lock\""), "\(log)")
        #expect(log.contains("\"secure\""), "\(log)")
        let after = try run(
            "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "-x", "http://127.0.0.1:\(port)", "http://127.0.0.1:\(originPort)/"],
            timeout: 20)
        #expect(after.status != 0, "the proxy still answers after stop")
    }
}
