import CookieInspector
import CookieLifecycle
import CookieRules
import ExchangeFacts
import Foundation
import HTTPGrammar
import HTTPHeads
import Locking
import LogWriter
import ProxyApp
import ProxyCore
import Testing

/// The cookie stage on the proxy's hooks (`RulesHooks`) and the log sink it writes to, without the binary: a response
/// head in, the head the client gets and the log's records out.
@Suite struct CookieStageTests {
    static func engine(_ rules: String) throws -> RuleEngine {
        RuleEngine(RuleSet(rules: try RulesParser.parse(rules, file: "t.rules"), files: ["t.rules"]))
    }

    static let context = ExchangeContext(
        requestID: 7, clientAddress: "127.0.0.1", method: "GET", scheme: "https", host: "bin.example.com", port: 443,
        target: "/login", status: 200)

    /// The hooks with the built-in observers given and `observers` after them, as `run` makes them.
    static func hooks(
        _ engine: RuleEngine, dryRun: Bool = false, log: LogSink? = nil,
        redaction: Redaction = Redaction(showValues: true, key: []), inspector: InspectorStore? = nil,
        metrics: MetricsObserver? = nil, observers: [any ExchangeObserver] = []
    ) -> RulesHooks {
        let tracker = LifecycleTracker()
        return RulesHooks(
            engine: engine, dryRun: dryRun, intercept: HostPatternList(), tracker: tracker,
            observers: builtInObservers(
                log: log.map { TransformationLog(sink: $0, redaction: redaction, clients: tracker) },
                inspector: inspector, tracker: tracker, lifecycle: false, report: nil, metrics: metrics,
                accessLog: nil) + observers)
    }

    /// `lines` as a response head through the hooks' stage; the head's bytes as the client would get them.
    /// `stage`: the loop's (``RulesHooks/makeStage()``), kept across responses as a loop keeps it; nil, a stage of
    /// the response's own.
    static func forward(_ hooks: RulesHooks, _ lines: [String], stage: (any ExchangeStage)? = nil) throws -> String {
        let response = "HTTP/1.1 200 OK\r\n" + lines.map { $0 + "\r\n" }.joined() + "Content-Length: 0\r\n\r\n"
        var head = OutgoingHead(try HTTPHeadParser().parseResponse(Array(response.utf8)).head)
        let stage = stage ?? hooks.makeStage()
        stage.willForwardResponse(&head, context: context)
        var bytes: [UInt8] = []
        head.serialize(into: &bytes)
        stage.didForwardResponse(head, bytes: bytes[...], context: context)
        return String(decoding: bytes, as: UTF8.self)
    }

    static let rules = """
        rule "share login with subdomains" {
            host     bin.example.com
            cookie   Bin-Auth-Token
            domain   .bin.example.com
            secure
        }
        rule "drop tracking" {
            cookie   track
            drop
        }
        """

    @Test(
        arguments: [
            (
                "Set-Cookie: Bin-Auth-Token=abc; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly",
                "Set-Cookie: Bin-Auth-Token=abc; Path=/; Domain=.bin.example.com; Max-Age=604800; HttpOnly; Secure"
            ),
            ("Set-Cookie: other=1;  Odd=attr ;HttpOnly", "Set-Cookie: other=1;  Odd=attr ;HttpOnly"),
            ("set-cookie: track=xyz; Path=/", nil),
            ("X-Other:   spaced   ", "X-Other:   spaced   "),
        ] as [(String, String?)])
    func aTargetedCookieIsRewrittenAndEveryOtherLineIsLeftByteForByte(_ line: String, _ expected: String?) throws {
        let hooks = Self.hooks(try Self.engine(Self.rules))
        let out = try Self.forward(hooks, [line])
        if let expected {
            #expect(out == "HTTP/1.1 200 OK\r\n\(expected)\r\nContent-Length: 0\r\n\r\n")
        } else {
            #expect(out == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        }
        #expect(hooks.seen.load() == (line.lowercased().hasPrefix("set-cookie") ? 1 : 0))
        #expect(hooks.changed.load() == (expected == line ? 0 : 1))
    }

    /// An observer of the stage's own, added with no other change: it is handed every line's outcome (the rules
    /// that matched, the attribute changes, the findings, the field), and what it is handed for a changed line is
    /// what the log writes for it.
    final class Recording: ExchangeObserver {
        struct Seen {
            var cookie: String
            var after: String?
            var rules: [String]
            var changes: [String]
            var findings: [String]
            var field: Int?
        }
        /// Shared by every loop's part, so behind a lock.
        private let state = Locked<(seen: [Seen], ended: Int)>(([], 0))
        var lines: [Seen] { state.withLock { $0.seen } }
        var responses: Int { state.withLock { $0.ended } }
        func makeLoopObserver() -> (any LoopObserver)? { Part(state: state) }

        final class Part: LoopObserver {
            let state: Locked<(seen: [Seen], ended: Int)>
            init(state: Locked<(seen: [Seen], ended: Int)>) { self.state = state }
            func didDecideLine(_ line: borrowing SetCookieLine) {
                let t = line.transformation
                let entry = Seen(
                    cookie: line.receivedCookie.name,
                    after: line.forwarded.map { String(decoding: $0, as: UTF8.self) },
                    rules: line.rules, changes: t.changes.map { "\($0.op.rawValue) \($0.attribute)" },
                    findings: line.findings.map(\.code), field: line.field)
                state.withLock { $0.seen.append(entry) }
            }
            func didForwardResponse(_ response: borrowing ForwardedResponse) {
                state.withLock { $0.ended += 1 }
            }
        }
    }

    @Test func anObserverIsHandedEveryLinesOutcomeAsTheLogWritesIt() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cp-obs-\(UUID().uuidString).jsonl")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try LogSink(destination: .file(path))
        let recording = Recording()
        let hooks = Self.hooks(try Self.engine(Self.rules), log: sink, observers: [recording])
        _ = try Self.forward(
            hooks,
            [
                "Set-Cookie: Bin-Auth-Token=abc; Domain=bin.example.com", "Set-Cookie: track=1",
                "Set-Cookie: untouched=2; SameSite=None",
            ])
        sink.close()
        let records = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(recording.responses == 1)
        #expect(recording.lines.map(\.cookie) == ["Bin-Auth-Token", "track", "untouched"])
        // The received head's fields: the status line is not one, so the lines are fields 0, 1 and 2.
        #expect(recording.lines.map(\.field) == [0, 1, 2])
        #expect(recording.lines[2].after == "untouched=2; SameSite=None" && recording.lines[2].rules.isEmpty)
        #expect(recording.lines[2].findings.contains("samesite-none-insecure"))
        #expect(records.count == 2)
        for record in records {
            let seen = try #require(recording.lines.first { $0.cookie == record["cookie"] as? String })
            #expect(seen.after == record["after"] as? String, "\(record)")
            #expect(seen.rules == record["rules"] as? [String], "\(record)")
            let changes = try #require(record["changes"] as? [[String: Any]])
            #expect(seen.changes == changes.map { "\($0["op"]!) \($0["attribute"]!)" }, "\(record)")
            let findings = try #require(record["findings"] as? [[String: Any]])
            #expect(seen.findings == findings.map { $0["code"] as! String }, "\(record)")
        }
    }

    /// A line's findings are its own when the lint's cache answers (the second response of a stage, the same lines
    /// in the same second): what one line worked out is never handed to the next.
    final class FindingsOnly: ExchangeObserver {
        private let seen = Locked<[[String]]>([])
        var lines: [[String]] { seen.withLock { $0 } }
        func makeLoopObserver() -> (any LoopObserver)? { Part(seen: seen) }
        final class Part: LoopObserver {
            let seen: Locked<[[String]]>
            init(seen: Locked<[[String]]>) { self.seen = seen }
            func didDecideLine(_ line: borrowing SetCookieLine) {
                seen.withLock { $0.append(line.findings.map(\.code)) }
            }
        }
    }

    @Test func eachLinesFindingsAreItsOwnWhenItsMemoAnswers() throws {
        // An observer that reads nothing but the findings (as the metrics do), alone on its stage; and one that
        // reads everything (the line's cookies parsed, its changes), on another.
        let findingsOnly = FindingsOnly()
        let recording = Recording()
        let lines = [
            "Set-Cookie: plain=1; Path=/", "Set-Cookie: none=2; SameSite=None", "Set-Cookie: host=3; Domain=127.0.0.1",
            "Set-Cookie: other=4",
        ]
        for observer in [findingsOnly, recording] as [any ExchangeObserver] {
            let hooks = Self.hooks(try Self.engine(Self.rules), observers: [observer])
            let stage = hooks.makeStage()
            _ = try Self.forward(hooks, lines, stage: stage)
            _ = try Self.forward(hooks, lines, stage: stage)
        }
        let seen = recording.lines
        #expect(seen.count == 8 && recording.responses == 2)
        #expect(seen[1].findings.contains("samesite-none-insecure"))
        #expect(
            !seen[3].findings.contains("samesite-none-insecure") && !seen[0].findings.contains("samesite-none-insecure")
        )
        #expect(seen[4...].map(\.findings) == seen[..<4].map(\.findings))
        #expect(findingsOnly.lines == seen.map(\.findings))
    }

    /// The metrics' counts (`--metrics`): each changed line once per rule that matched it, under the rule's name also
    /// after a reload renames the rules; each forwarded line's findings once per finding, by code and severity, equal
    /// to what an observer reading the findings saw — repeated lines (answered from their memo) included.
    @Test func theMetricsCountEveryLineByRuleAndFindingAcrossAReload() throws {
        let recording = Recording()
        let metrics = MetricsObserver(reverse: false, lifecycle: false)
        let hooks = Self.hooks(try Self.engine(Self.rules), metrics: metrics, observers: [recording])
        let counts = metrics.cookies
        let stage = hooks.makeStage()
        let lines = [
            "Set-Cookie: Bin-Auth-Token=abc; Domain=bin.example.com", "Set-Cookie: track=1",
            "Set-Cookie: none=2; SameSite=None", "Set-Cookie: host=3; Domain=127.0.0.1; SameSite=None; Expires=x",
        ]
        for _ in 0..<3 { _ = try Self.forward(hooks, lines, stage: stage) }
        hooks.replace(try Self.engine(Self.rules.replacingOccurrences(of: "drop tracking", with: "no tracking")))
        _ = try Self.forward(hooks, lines, stage: stage)
        let samples = Dictionary(
            counts.transformationSamples.map { ("\($0.rule) \($0.action)", $0.count) }, uniquingKeysWith: +)
        #expect(samples["share login with subdomains rewrite"] == 4 && samples["share login with subdomains drop"] == 0)
        #expect(samples["drop tracking drop"] == 3 && samples["no tracking drop"] == 1)
        #expect(samples["drop tracking rewrite"] == 0)
        // The findings of the lines the client got (the dropped line has none), rejects and warnings only.
        var expected: [String: Int] = [:]
        for (i, line) in recording.lines.enumerated() where i % 4 != 1 {
            for code in line.findings { expected[code, default: 0] += 1 }
        }
        let counted = Dictionary(counts.findingSamples.map { ($0.code, $0.count) }, uniquingKeysWith: +)
        #expect(!counted.isEmpty)
        for (code, n) in counted { #expect(expected[code] == n, "\(code)") }
    }

    /// The metrics say what their names say: a dropped line counts as a drop for the rule that dropped it, not for a
    /// `log` rule that matched it too (nor a rewrite for that rule); request-cookie edits are not Set-Cookie lines;
    /// the verdicts list only the reasons each verdict is given.
    @Test func theMetricsCountWhatTheirNamesSay() throws {
        let rules =
            Self.rules + """

                rule "log everything" {
                    log
                }
                rule "no analytics upstream" {
                    request-cookie remove _ga
                }
                """
        let metrics = MetricsObserver(reverse: false, lifecycle: false)
        let hooks = Self.hooks(try Self.engine(rules), metrics: metrics)
        let counts = metrics.cookies
        let stage = hooks.makeStage()
        _ = try Self.forward(
            hooks, ["Set-Cookie: Bin-Auth-Token=abc; Domain=bin.example.com", "Set-Cookie: track=1"], stage: stage)
        var request = OutgoingHead(
            try HTTPHeadParser().parseRequest(
                Array("GET /login HTTP/1.1\r\nHost: bin.example.com\r\nCookie: _ga=1; sid=2\r\n\r\n".utf8)
            ).head)
        stage.willForwardRequest(&request, context: Self.context)
        let samples = Dictionary(
            counts.transformationSamples.map { ("\($0.rule) \($0.action)", $0.count) }, uniquingKeysWith: +)
        #expect(samples["drop tracking drop"] == 1 && samples["share login with subdomains rewrite"] == 1)
        #expect(samples["log everything drop"] ?? 0 == 0 && samples["log everything rewrite"] ?? 0 == 0, "\(samples)")
        #expect(metrics.linesChanged.load() == 2 && metrics.requestCookiesChanged.load() == 1)
        #expect(metrics.linesSeen.load() == 2 && hooks.changed.load() == 2)
        let pairs = Set(counts.verdictSamples.map { "\($0.verdict) \($0.reason)" })
        #expect(pairs.contains("sent-not-set not-seen") && pairs.contains("sent-as-expected none"))
        #expect(!pairs.contains("sent-other-value lint") && !pairs.contains("expected-not-sent not-seen"))
        #expect(pairs.count == 14)  // sent-as-expected; expected-not-sent 5 reasons; sent-not-set 7; sent-other-value 1
    }

    /// A line's counted findings in one word: up to seven keys below 255, in order; more, or a larger key, is the
    /// overflow (the counter then reads the list).
    @Test(arguments: [
        ([], false), ([0], false), ([3, 1, 3], false), ([254, 0, 7, 9, 11, 13, 15], false),
        ([1, 2, 3, 4, 5, 6, 7, 8], true), ([255], true), ([2, 400], true),
    ])
    func countedKeysHoldUpToSevenSmallKeysInOrder(keys: [Int], overflows: Bool) {
        let packed = CountedKeys(keys)
        #expect((packed == .overflow) == overflows)
        guard !overflows else { return }
        var read: [Int] = []
        packed.forEach { read.append($0) }
        #expect(read == keys)
    }

    /// `--dry-run`: the head goes out as received, and the log says what the rules would have done.
    @Test func aDryRunChangesNothingAndLogsWhatTheRulesWouldDo() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cp-stage-\(UUID().uuidString).jsonl")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try LogSink(destination: .file(path))
        let hooks = Self.hooks(try Self.engine(Self.rules), dryRun: true, log: sink)
        let lines = [
            "Set-Cookie: Bin-Auth-Token=abc; Domain=bin.example.com", "Set-Cookie: track=1", "Set-Cookie: x=2",
        ]
        let out = try Self.forward(hooks, lines)
        #expect(out == "HTTP/1.1 200 OK\r\n" + lines.map { $0 + "\r\n" }.joined() + "Content-Length: 0\r\n\r\n")
        sink.close()
        #expect(sink.writtenCount == 3 && sink.droppedCount == 0)
        let records = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(records.count == 3)
        #expect(
            records.allSatisfy {
                $0["dryRun"] as? Bool == true && $0["url"] as? String == "https://bin.example.com:443/login"
            })
        #expect(records[0]["after"] as? String == "Bin-Auth-Token=abc; Domain=.bin.example.com; Secure")
        #expect(records[0]["rules"] as? [String] == ["share login with subdomains"])
        #expect(records[1]["after"] == nil || records[1]["after"] is NSNull)
        #expect(records[2]["rules"] as? [String] == [])
    }

    /// The inspector shows the outcome the stage decided (the rules that matched, the changes, a dropped line, a dry
    /// run's would-be line): the transformation is made from it, the rules are not run again.
    @Test(arguments: [false, true])
    func theInspectorShowsTheOutcomeTheStageDecided(_ dryRun: Bool) throws {
        let store = InspectorStore(capacity: 4)
        let hooks = Self.hooks(try Self.engine(Self.rules), dryRun: dryRun, inspector: store)
        let stage = hooks.makeStage()
        let request = try HTTPHeadParser().parseRequest(
            Array("GET /login HTTP/1.1\r\nHost: bin.example.com\r\n\r\n".utf8))
        var sent = OutgoingHead(request.head)
        sent.append(name: "X-Forwarded-For", value: "127.0.0.1")
        stage.willForwardRequest(&sent, context: Self.context)
        let lines = [
            "Set-Cookie: Bin-Auth-Token=abc; Path=/; Domain=bin.example.com", "Set-Cookie: track=1",
            "Set-Cookie: other=2",
        ]
        let response = "HTTP/1.1 200 OK\r\n" + lines.map { $0 + "\r\n" }.joined() + "Content-Length: 0\r\n\r\n"
        var head = OutgoingHead(try HTTPHeadParser().parseResponse(Array(response.utf8)).head)
        stage.willForwardResponse(&head, context: Self.context)
        var bytes: [UInt8] = []
        head.serialize(into: &bytes)
        // A reload between the response and its viewing does not change what the rules did to it.
        hooks.replace(try Self.engine("rule \"other\" {\n    secure\n}\n"))
        stage.didForwardResponse(head, bytes: bytes[...], context: Self.context)
        let cookies = try #require(store.exchanges().first?.analysis.cookies)
        // The request as the client sent it, and as it went upstream.
        let recorded = try #require(store.exchanges().first)
        #expect(recorded.request.fields.count == 1 && recorded.sent?.fields.count == 2)
        #expect(cookies.map(\.rules) == [["share login with subdomains"], ["drop tracking"], []])
        #expect(cookies[0].transformation.ruleLocations.map(\.line) == [1])
        #expect(cookies[0].changes.map(\.op) == [.set, .add])
        #expect(cookies[1].changes.map(\.op) == [.drop])
        #expect(cookies[2].changes.isEmpty)
        if dryRun {
            #expect(cookies.map { $0.forwarded?.description } == lines.map { String($0.dropFirst(12)) })
            #expect(
                cookies[0].wouldBe?.description
                    == "Bin-Auth-Token=abc; Path=/; Domain=.bin.example.com; Secure")
            #expect(cookies[1].wouldBe == nil)
        } else {
            #expect(cookies[0].forwarded?.description == "Bin-Auth-Token=abc; Path=/; Domain=.bin.example.com; Secure")
            #expect(cookies[1].forwarded == nil)
            #expect(cookies.allSatisfy { $0.wouldBe == nil })
        }
    }

    /// The sink writes every record, in order, once the writer is closed, and lines of the proxy's own among them.
    @Test func theLogSinkWritesEveryRecordInOrder() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cp-sink-\(UUID().uuidString).jsonl")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try LogSink(destination: .file(path), capacity: 4)
        let hooks = Self.hooks(
            try Self.engine(Self.rules), log: sink, redaction: Redaction(showValues: false, key: Array("k".utf8)))
        let stage = hooks.makeStage()
        for n in 0..<50 {
            _ = try Self.forward(hooks, ["Set-Cookie: Bin-Auth-Token=v\(n); Domain=bin.example.com"], stage: stage)
        }
        sink.close()
        #expect(sink.writtenCount == 50 && sink.droppedCount == 0)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 50)
        // Values are redacted unless asked: a keyed hash, never the value.
        #expect(!text.contains("=v1;") && !text.contains("v49"))
        #expect(lines.allSatisfy { $0.contains("\"requestId\":7") })
    }
}

/// The preset the binary carries is the one rules/README.md shows, and it reads as rules.
@Suite struct PresetTextTests {
    @Test func theSafariPresetIsDocumentedAsItIs() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("rules/README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## `run --emulate safari`").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```\n").dropFirst().first)
        #expect(block == Presets.safari)
        let rules = try #require(try Presets.rules("safari"))
        #expect(rules.map(\.name) == ["Safari: third-party Set-Cookie blocked", "Safari: third-party Cookie not sent"])
        #expect(try Presets.rules("netscape") == nil)
    }
}
