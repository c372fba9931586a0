import CookieKit

/// One log record: a cookie the rules transformed (or, in audit mode, observed). Keys are stable and
/// documented in rules/README.md. Cookie values are redacted unless asked for.
public struct TransformationRecord: Sendable {
    /// Milliseconds since the epoch.
    public var time: Int64
    public var requestID: UInt64
    public var client: String
    public var method: String
    /// `scheme://host:port/path`
    public var url: String
    public var status: Int
    public var outcome: CookieOutcome
    public var findings: [LintFinding]
    public var dryRun: Bool

    public init(
        time: Int64, requestID: UInt64, client: String, method: String, url: String, status: Int,
        outcome: CookieOutcome,
        findings: [LintFinding], dryRun: Bool
    ) {
        self.time = time
        self.requestID = requestID
        self.client = client
        self.method = method
        self.url = url
        self.status = status
        self.outcome = outcome
        self.findings = findings
        self.dryRun = dryRun
    }

    /// The JSON Lines object, keys in this order: time, requestId, client, method, url, status, cookie, rules,
    /// dryRun, before, after, changes, findings, notes.
    public func json(showValues: Bool) -> JSONValue {
        let before = Redaction.text(outcome.original, showValues: showValues)
        let after = outcome.result.map { Redaction.text($0, showValues: showValues) }
        return .object([
            ("time", .string(Self.timestamp(time))),
            ("requestId", .int(Int64(requestID))),
            ("client", .string(client)),
            ("method", .string(method)),
            ("url", .string(url)),
            ("status", .int(Int64(status))),
            ("cookie", .string(outcome.original.name)),
            ("rules", .array(outcome.rules.map { .string($0) })),
            ("dryRun", .bool(dryRun)),
            ("before", .string(before)),
            ("after", JSONValue(after)),
            (
                "changes",
                .array(
                    outcome.changes.map { change in
                        let hide = !showValues && change.op == "value"
                        return .object([
                            ("op", .string(change.op)), ("attribute", .string(change.attribute)),
                            ("from", JSONValue(hide ? change.from.map(Redaction.hash) : change.from)),
                            ("to", JSONValue(hide ? change.to.map(Redaction.hash) : change.to)),
                        ])
                    })
            ),
            (
                "findings",
                .array(
                    findings.map {
                        .object([
                            ("code", .string($0.code)), ("severity", .string($0.severity.rawValue)),
                            ("message", .string($0.message)),
                        ])
                    })
            ),
            ("notes", .array(outcome.notes.map { .string($0) })),
        ])
    }

    /// A compact one-line form for a terminal, coloured when `color`.
    public func line(showValues: Bool, color: Bool) -> String {
        func paint(_ s: String, _ code: String) -> String { color ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }
        let clock = String(Self.timestamp(time).dropFirst(11).prefix(8))
        var parts = [
            "\(clock) #\(requestID) \(method) \(url) \(status)",
            paint(outcome.original.name.isEmpty ? "(nameless)" : outcome.original.name, "1"),
        ]
        if outcome.changes.isEmpty {
            parts.append(paint(dryRun ? "unchanged" : "logged", "2"))
        } else {
            parts.append(
                outcome.changes.map { c -> String in
                    switch c.op {
                    case "add": return paint("+\(c.attribute)\(c.to.map { $0.isEmpty ? "" : "=\($0)" } ?? "")", "32")
                    case "remove": return paint("-\(c.attribute)", "31")
                    case "drop": return paint("dropped", "31")
                    case "rename": return paint("renamed \(c.from ?? "") → \(c.to ?? "")", "33")
                    case "value": return paint("value changed", "33")
                    default: return paint("\(c.attribute) \(c.from ?? "") → \(c.to ?? "")", "33")
                    }
                }.joined(separator: " "))
        }
        if dryRun && !outcome.changes.isEmpty { parts.append(paint("(dry run)", "2")) }
        if !outcome.rules.isEmpty { parts.append(paint("[\(outcome.rules.joined(separator: ", "))]", "36")) }
        let serious = findings.filter { $0.severity == .rejects }
        if !serious.isEmpty {
            parts.append(paint("⚠ browsers reject: " + serious.map(\.code).joined(separator: ", "), "31;1"))
        }
        return parts.joined(separator: "  ")
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, written as digits (string padding costs thousands of instructions a record).
    static func timestamp(_ ms: Int64) -> String {
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let millis = Int(ms - seconds * 1000)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = Int(seconds - days * 86_400)
        let (y, m, d) = CookieDate.civilFromDays(days)
        var out = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int, _ at: Int, _ width: Int) {
            var v = value
            for k in stride(from: at + width - 1, through: at, by: -1) {
                out[k] = UInt8(0x30 + v % 10)
                v /= 10
            }
        }
        put(y, 0, 4)
        out[4] = 0x2D
        put(m, 5, 2)
        out[7] = 0x2D
        put(d, 8, 2)
        out[10] = 0x54
        put(rest / 3600, 11, 2)
        out[13] = 0x3A
        put(rest % 3600 / 60, 14, 2)
        out[16] = 0x3A
        put(rest % 60, 17, 2)
        out[19] = 0x2E
        put(millis, 20, 3)
        out[23] = 0x5A
        return String(decoding: out, as: UTF8.self)
    }
}

/// Cookie values in logs: replaced by a short stable hash so the same value stays recognisable.
public enum Redaction {
    /// `h:` and 8 hex digits of the 64-bit FNV-1a hash of the value bytes. Not a secret-keeping hash: it only
    /// keeps values out of logs; short values could be guessed from it.
    public static func hash(_ value: String) -> String { hash(Array(value.utf8)) }

    public static func hash<C: Collection<UInt8>>(_ bytes: C) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        let hex = String(h >> 32, radix: 16)
        return "h:" + String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// The Set-Cookie text with its value replaced by `[h:…]` (empty values stay empty).
    public static func text(_ cookie: SetCookie, showValues: Bool) -> String {
        if showValues { return cookie.description }
        var redacted = cookie
        let value = cookie.valueBytes
        if !value.isEmpty { try? redacted.setValue("[\(hash(value))]") }
        return redacted.description
    }
}
