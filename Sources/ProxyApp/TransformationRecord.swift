import CookieKit
import CookieRules
import ExchangeFacts
import JSONStream
import Terminal

/// One log record: a cookie the rules transformed (or, in audit mode, observed). Keys are stable and
/// documented in rules/README.md. Cookie values are redacted unless asked for.
public struct TransformationRecord: Sendable {
    /// Milliseconds since the epoch.
    public var time: Int64
    /// The exchange the line came with (its id, client, method, URL, status and protocols are the record's).
    public var exchange: ExchangeContext
    public var outcome: Transformation
    public var findings: [LintFinding]
    public var dryRun: Bool

    public init(
        time: Int64, exchange: ExchangeContext, outcome: Transformation, findings: [LintFinding], dryRun: Bool
    ) {
        (self.time, self.exchange, self.outcome, self.findings, self.dryRun) = (
            time, exchange, outcome, findings, dryRun
        )
    }

    /// `scheme://host:port/target`.
    public var url: String { exchange.url }

    /// The record as one JSON Lines object, written straight into `out` (no tree): what the log writes. Keys in this
    /// order: time, requestId, client, method, url, status, cookie, rules, dryRun, before, after, changes, findings,
    /// engines, notes (documented in rules/README.md). `changes` is ``Transformation/changes``, passed in so that a writer can
    /// reuse it for repeated cookies.
    public func writeJSON(to out: inout JSONWriter, redaction: Redaction, changes: [AttributeChange]) {
        writeExchangeFields(to: &out)
        writeCookiePart(to: &out, redaction: redaction, changes: changes)
    }

    /// From `,"cookie":` to the closing `}`: what the log keeps as bytes for a repeated cookie (the exchange
    /// fields before it are each response's own).
    public func writeCookiePart(to out: inout JSONWriter, redaction: Redaction, changes: [AttributeChange]) {
        writeCookieFields(to: &out, redaction: redaction)
        out.raw(",\"changes\":")
        Self.writeChanges(changes, redaction: redaction, to: &out)
        out.raw(",\"findings\":")
        Self.writeFindings(findings, to: &out)
        out.raw(",\"engines\":")
        if let engines = EngineVerdict.summary(findings) { out.string(engines) } else { out.raw("null") }
        writeTail(to: &out)
    }

    /// From `{` to the value of `status` (and the protocols): the same for every record of one response.
    public func writeExchangeFields(to out: inout JSONWriter) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.timestampLength) { stamp in
            Self.writeTimestamp(time, into: stamp)
            Self.writeExchangeFields(of: exchange, stamp: UnsafeBufferPointer(stamp), to: &out)
        }
    }

    /// The same, with the time already written by ``writeTimestamp(_:into:)`` (the log keeps the last second's);
    /// the URL written from the exchange's parts, without a string made per response. `protocol` and
    /// `upstreamProtocol` are written after `status` when that side spoke HTTP/2 (HTTP/1.x writes no key).
    /// `client`: the client's key when the lifecycle told the request's client apart (else the address).
    public static func writeExchangeFields(
        of exchange: borrowing ExchangeContext, client: String? = nil, stamp: UnsafeBufferPointer<UInt8>,
        to out: inout JSONWriter
    ) {
        exchange.withURL { url in
            writeExchangeFields(
                stamp: stamp, requestID: exchange.requestID, client: client ?? exchange.clientAddress,
                method: exchange.method,
                url: url, status: exchange.status ?? 0, clientProtocol: exchange.clientProtocol,
                upstreamProtocol: exchange.upstreamProtocol, route: exchange.route?.name, to: &out)
        }
    }

    static func writeExchangeFields(
        stamp: UnsafeBufferPointer<UInt8>, requestID: UInt64, client: String, method: String,
        url: UnsafeBufferPointer<UInt8>, status: Int, clientProtocol: StaticString?, upstreamProtocol: StaticString?,
        route: String? = nil, to out: inout JSONWriter
    ) {
        out.raw("{\"time\":\"")
        out.raw(stamp)
        out.raw("\",\"requestId\":")
        out.int(Int64(requestID))
        out.raw(",\"client\":")
        out.string(client)
        out.raw(",\"method\":")
        out.string(method)
        out.raw(",\"url\":")
        out.string(url)
        out.raw(",\"status\":")
        out.int(Int64(status))
        if let clientProtocol {
            // A constant of the proxy's own (`HTTP/2`): nothing in it to escape.
            out.raw(",\"protocol\":\"")
            out.raw(clientProtocol)
            out.raw(0x22)
        }
        if let upstreamProtocol {
            out.raw(",\"upstreamProtocol\":\"")
            out.raw(upstreamProtocol)
            out.raw(0x22)
        }
        if let route {
            out.raw(",\"route\":")
            out.string(route)
        }
    }

    /// From `,"cookie":` to the value of `after`: what the cookie and the rules made of it.
    public func writeCookieFields(to out: inout JSONWriter, redaction: Redaction) {
        out.raw(",\"cookie\":")
        let original = outcome.received
        if original.nameBytes.contains(where: { $0 >= 0x80 }) {
            out.string(original.name)
        } else {
            original.nameBytes.withUnsafeBufferPointer { out.string($0) }
        }
        out.raw(",\"rules\":[")
        for (i, name) in outcome.rules.enumerated() {
            if i > 0 { out.raw(0x2C) }
            out.string(name)
        }
        out.raw("],\"dryRun\":")
        out.bool(dryRun)
        out.raw(",\"before\":")
        redaction.write(original, to: &out)
        out.raw(",\"after\":")
        if let result = outcome.result { redaction.write(result, to: &out) } else { out.raw("null") }
    }

    /// `,"notes":[…]}`.
    public func writeTail(to out: inout JSONWriter) {
        out.raw(",\"notes\":[")
        for (i, note) in outcome.notes.enumerated() {
            if i > 0 { out.raw(0x2C) }
            out.string(note)
        }
        out.raw("]}")
    }

    /// The `changes` array; a value change is hashed unless values are shown.
    public static func writeChanges(_ changes: [AttributeChange], redaction: Redaction, to out: inout JSONWriter) {
        out.raw(0x5B)
        for (i, change) in changes.enumerated() {
            if i > 0 { out.raw(0x2C) }
            let hide = !redaction.showValues && change.op == .value
            out.raw("{\"op\":")
            out.string(change.op.rawValue)
            out.raw(",\"attribute\":")
            out.string(change.attribute)
            out.raw(",\"from\":")
            out.string(hide ? change.from.map { redaction.hash(Array($0.utf8)) } : change.from)
            out.raw(",\"to\":")
            out.string(hide ? change.to.map { redaction.hash(Array($0.utf8)) } : change.to)
            out.raw(0x7D)
        }
        out.raw(0x5D)
    }

    /// The `findings` array.
    public static func writeFindings(_ findings: [LintFinding], to out: inout JSONWriter) {
        out.raw(0x5B)
        for (i, finding) in findings.enumerated() {
            if i > 0 { out.raw(0x2C) }
            out.raw("{\"code\":")
            out.string(finding.code)
            out.raw(",\"severity\":")
            out.string(finding.severity.rawValue)
            out.raw(",\"message\":")
            out.string(finding.message)
            out.raw(0x7D)
        }
        out.raw(0x5D)
    }

    /// A compact one-line form for a terminal, coloured when `color`. Every part is escaped for the terminal
    /// (``TerminalText``: a cookie's name, a URL, a changed value are the site's bytes) before the proxy's own
    /// colours are put around it.
    public func line(showValues: Bool, color: Bool) -> String {
        func paint(_ s: String, _ code: String, bytes: ArraySlice<UInt8>? = nil) -> String {
            let safe = bytes.map { $0.isEmpty ? s : TerminalText.escape(bytes: $0) } ?? TerminalText.escape(s)
            return color ? "\u{1B}[\(code)m\(safe)\u{1B}[0m" : safe
        }
        let clock = String(Self.timestamp(time).dropFirst(11).prefix(8))
        var parts = [
            TerminalText.escape("\(clock) #\(exchange.requestID) \(exchange.method) \(url) \(exchange.status ?? 0)"),
            // The name from its bytes: one that is not UTF-8 is shown byte for byte (`\x9b`), not as U+FFFD.
            paint(
                outcome.received.name.isEmpty ? "(nameless)" : outcome.received.name, "1",
                bytes: outcome.received.nameBytes),
        ]
        if outcome.changes.isEmpty {
            parts.append(paint(dryRun ? "unchanged" : "logged", "2"))
        } else {
            parts.append(
                outcome.changes.map { c -> String in
                    switch c.op {
                    case .add: return paint("+\(c.attribute)\(c.to.map { $0.isEmpty ? "" : "=\($0)" } ?? "")", "32")
                    case .remove: return paint("-\(c.attribute)", "31")
                    case .drop: return paint("dropped", "31")
                    case .rename: return paint("renamed \(c.from ?? "") → \(c.to ?? "")", "33")
                    case .value: return paint("value changed", "33")
                    case .set: return paint("\(c.attribute) \(c.from ?? "") → \(c.to ?? "")", "33")
                    }
                }.joined(separator: " "))
        }
        if dryRun && !outcome.changes.isEmpty { parts.append(paint("(dry run)", "2")) }
        if !outcome.rules.isEmpty { parts.append(paint("[\(outcome.rules.joined(separator: ", "))]", "36")) }
        let serious = findings.filter { $0.severity == .rejects }
        if !serious.isEmpty {
            parts.append(paint("⚠ " + serious.map(\.code).joined(separator: ", "), "31;1"))
        }
        // Which engines reject or alter it (`rejects: Chromium, Firefox; WebKit stores it`).
        if let engines = EngineVerdict.summary(findings) { parts.append(paint(engines, serious.isEmpty ? "33" : "31")) }
        return parts.joined(separator: "  ")
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, written as digits (string padding costs thousands of instructions a record).
    public static func timestamp(_ ms: Int64) -> String {
        String(unsafeUninitializedCapacity: 24) { out in
            writeTimestamp(ms, into: out)
            return 24
        }
    }

    /// ``timestamp(_:)`` into the first 24 bytes of `out`.
    /// `2026-12-01T19:01:29.081Z`.
    public static let timestampLength = 24

    /// A time's text, kept: within the same second as the last only the milliseconds are written again (the
    /// calendar arithmetic is most of the cost of a record's shared fields).
    public struct Timestamp: Sendable {
        public private(set) var bytes = [UInt8](repeating: 0, count: TransformationRecord.timestampLength)
        private var second = Int64.min

        public init() {}

        /// Makes ``bytes`` the text of `ms` (milliseconds since the epoch).
        public mutating func set(_ ms: Int64) {
            let s = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
            bytes.withUnsafeMutableBufferPointer { out in
                if s != second {
                    TransformationRecord.writeTimestamp(ms, into: out)
                } else {
                    let m = Int(ms - s * 1000)
                    (out[20], out[21], out[22]) = (
                        UInt8(0x30 + m / 100), UInt8(0x30 + m / 10 % 10), UInt8(0x30 + m % 10)
                    )
                }
            }
            second = s
        }
    }

    /// Writes the ``timestampLength`` bytes of `ms` (milliseconds since the epoch) as RFC 3339 UTC.
    public static func writeTimestamp(_ ms: Int64, into out: UnsafeMutableBufferPointer<UInt8>) {
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let millis = Int(ms - seconds * 1000)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = Int(seconds - days * 86_400)
        let (y, m, d) = CookieDate.civilFromDays(days)
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
    }
}
