import CookieKit
import CookieLifecycle
import JSONStream

/// What a run found, for a CI system: each Set-Cookie line's lint findings (what browsers reject, and warnings) and
/// each lifecycle verdict other than sent-as-expected, grouped by host, cookie and code and counted (a cookie a
/// server sets on every response is one entry, not thousands), with the first URL it was seen at, the rules that
/// matched its line and the engines a finding is about. Bounded: past ``maximumEntries`` distinct groups, further
/// ones are counted in ``unlisted``.
public struct FindingsReport: Sendable {
    public enum Level: String, Sendable, Hashable {
        /// A finding of severity `rejects`: browsers do not keep the cookie.
        case rejects
        case warning
        /// A lifecycle verdict other than sent-as-expected.
        case verdict
    }

    public struct Key: Hashable, Sendable {
        public var host: String
        public var cookie: String
        /// The lint code (`samesite-none-insecure`), or the verdict and its reason (`expected-not-sent/lint`).
        public var code: String
        public init(host: String, cookie: String, code: String) {
            (self.host, self.cookie, self.code) = (host, cookie, code)
        }
    }

    public struct Entry: Sendable {
        public var key: Key
        public var level: Level
        public var count: Int
        public var firstURL: String
        /// Milliseconds since the epoch.
        public var firstTime: Int64
        public var message: String
        public var rules: [String]
        public var engines: [String]
    }

    public static let maximumEntries = 10_000
    public private(set) var entries: [Entry] = []
    private var index: [Key: Int] = [:]
    /// Occurrences of groups past ``maximumEntries``.
    public private(set) var unlisted = 0

    public init() {}

    public mutating func add(
        _ key: Key, level: Level, url: String, time: Int64, message: String, rules: [String] = [],
        engines: [String] = []
    ) {
        if let i = index[key] {
            entries[i].count += 1
            for rule in rules where !entries[i].rules.contains(rule) { entries[i].rules.append(rule) }
            return
        }
        guard entries.count < Self.maximumEntries else {
            unlisted += 1
            return
        }
        index[key] = entries.count
        entries.append(
            Entry(
                key: key, level: level, count: 1, firstURL: url, firstTime: time, message: message, rules: rules,
                engines: engines))
    }

    /// A forwarded Set-Cookie line's findings (informational ones left out).
    public mutating func add(
        findings: [LintFinding], cookie: String, host: String, url: String, time: Int64, rules: [String]
    ) {
        let engines = EngineVerdict.of(findings).filter { !$0.stores }.map(\.engine.rawValue)
        for f in findings where f.severity != .info {
            add(
                Key(host: host, cookie: cookie, code: f.code), level: f.severity == .rejects ? .rejects : .warning,
                url: url, time: time, message: f.message, rules: rules,
                engines: f.severity == .rejects ? engines : [])
        }
    }

    /// A request's verdicts (sent-as-expected left out).
    public mutating func add(verdicts: [CookieVerdict], host: String, url: String, time: Int64) {
        for v in verdicts where v.kind != .sentAsExpected {
            add(
                Key(
                    host: host, cookie: v.name, code: v.kind.rawValue + (v.reason.map { "/" + $0.code.rawValue } ?? "")),
                level: .verdict, url: url, time: time, message: v.reason?.message ?? v.kind.rawValue,
                engines: v.reason?.engines ?? [])
        }
    }

    /// `--fail-on`: what makes a run fail.
    public enum FailOn: String, Sendable, Hashable, CaseIterable {
        /// A cookie line browsers reject.
        case rejects
        /// That, or a warning.
        case warnings
        /// A lifecycle verdict other than sent-as-expected.
        case verdicts
    }

    /// Whether anything in the report meets one of `conditions`.
    public func fails(_ conditions: Set<FailOn>) -> Bool {
        entries.contains { e in
            switch e.level {
            case .rejects: return conditions.contains(.rejects) || conditions.contains(.warnings)
            case .warning: return conditions.contains(.warnings)
            case .verdict: return conditions.contains(.verdicts)
            }
        }
    }

    // MARK: Writing

    /// JUnit XML: a suite per host, a case per cookie and code; what browsers reject and every verdict fail, with
    /// the message; a warning is a passing case with the message as its output.
    public func junit(name: String) -> String {
        var report = JUnitReport()
        for e in entries {
            let detail =
                "\(e.count) × first at \(e.firstURL) (\(CookieDate.rfc3339(milliseconds: e.firstTime)))"
                + (e.rules.isEmpty ? "" : "; rules: " + e.rules.joined(separator: ", "))
                + (e.engines.isEmpty ? "" : "; engines: " + e.engines.joined(separator: ", "))
            let failure = e.level == .warning ? nil : (type: e.key.code, message: e.message, detail: detail)
            report.add(
                suite: e.key.host, name: "\(e.key.cookie): \(e.key.code)", failure: failure,
                output: e.level == .warning ? e.message + "\n" + detail : nil)
        }
        if unlisted > 0 {
            report.add(
                suite: "cookie-proxy", name: "report size",
                failure: nil, output: "\(unlisted) more occurrences past \(Self.maximumEntries) groups are not listed")
        }
        return report.text(name: name)
    }

    /// SARIF 2.1.0 (OASIS): one run of the tool `cookie-proxy`, a reporting descriptor per code, a result per
    /// entry at the first URL it was seen at (its cookie as the logical location); what browsers reject and
    /// expected-not-sent are errors, the rest warnings. Counts, rules and engines in each result's property bag.
    public func sarif(toolVersion: String) -> String {
        var ruleIDs: [String] = []
        var ruleIndex: [String: Int] = [:]
        var descriptors: [JSONValue] = []
        var results: [JSONValue] = []
        for e in entries {
            let id = e.key.code
            if ruleIndex[id] == nil {
                ruleIndex[id] = ruleIDs.count
                ruleIDs.append(id)
                descriptors.append(
                    .object([
                        ("id", .string(id)),
                        ("shortDescription", .object([("text", .string(Self.describe(id, level: e.level)))])),
                    ]))
            }
            let level = e.level == .rejects || id.hasPrefix("expected-not-sent") ? "error" : "warning"
            results.append(
                .object([
                    ("ruleId", .string(id)), ("ruleIndex", .int(Int64(ruleIndex[id]!))), ("level", .string(level)),
                    ("message", .object([("text", .string("\(e.key.cookie) (\(e.key.host)): \(e.message)"))])),
                    (
                        "locations",
                        .array([
                            .object([
                                (
                                    "physicalLocation",
                                    .object([("artifactLocation", .object([("uri", .string(e.firstURL))]))])
                                ),
                                (
                                    "logicalLocations",
                                    .array([
                                        .object([
                                            ("name", .string(e.key.cookie)),
                                            ("fullyQualifiedName", .string(e.key.host + "/" + e.key.cookie)),
                                        ])
                                    ])
                                ),
                            ])
                        ])
                    ),
                    (
                        "properties",
                        .object([
                            ("host", .string(e.key.host)), ("cookie", .string(e.key.cookie)),
                            ("count", .int(Int64(e.count))),
                            ("firstSeen", .string(CookieDate.rfc3339(milliseconds: e.firstTime))),
                            ("rules", .array(e.rules.map { .string($0) })),
                            ("engines", .array(e.engines.map { .string($0) })),
                        ])
                    ),
                ]))
        }
        let run: JSONValue = .object([
            (
                "tool",
                .object([
                    (
                        "driver",
                        .object([
                            // `version` as given (the release and its commit: 0.8.0+1a2b3c4d5e6f); the release
                            // alone as SARIF's semanticVersion (§3.19.5).
                            ("name", .string("cookie-proxy")), ("version", .string(toolVersion)),
                            ("semanticVersion", .string(String(toolVersion.prefix { $0 != "+" }))),
                            ("rules", .array(descriptors)),
                        ])
                    )
                ])
            ),
            ("results", .array(results)),
            ("properties", .object([("unlisted", .int(Int64(unlisted)))])),
        ])
        return JSONValue.object([
            ("$schema", .string("https://json.schemastore.org/sarif-2.1.0.json")), ("version", .string("2.1.0")),
            ("runs", .array([run])),
        ]).serialized
    }

    /// A code's short description: a lint code with its severity, a verdict with its reason.
    static func describe(_ code: String, level: Level) -> String {
        guard level == .verdict else { return "cookie line finding \(code) (\(level.rawValue))" }
        let parts = code.split(separator: "/", maxSplits: 1)
        return "cookie \(parts[0])" + (parts.count > 1 ? " (\(parts[1]))" : "")
    }
}
