import CookieKit
import JSONStream
import Terminal

/// What `try` shows for one Set-Cookie value run through the rules offline (before, after, the rules that matched,
/// the changes, and what browsers make of the result), or for one request's Cookie header through the
/// request-cookie rules: as text for a person and as JSON.
public struct RulesTrial: Sendable {
    public let json: JSONValue
    public let text: TerminalText

    /// A Set-Cookie value's trial: `outcome` is the rules' transformation of it, linted at `url` in `site`.
    public init(_ outcome: Transformation, url: RequestURL, site: RequestSite.Kind?, now: Int64) {
        let findings =
            CookieLint.findings(for: outcome.result ?? outcome.received, from: url, now: now)
            + CookieLint.siteFindings(for: outcome.result ?? outcome.received, site: site)
        json = JSONValue.object([
            ("before", .string(outcome.received.description)),
            ("after", JSONValue(outcome.result?.description)),
            ("rules", .array(outcome.rules.map { .string($0) })),
            (
                "changes",
                .array(
                    outcome.changes.map {
                        .object([
                            ("op", .string($0.op.rawValue)), ("attribute", .string($0.attribute)),
                            ("from", JSONValue($0.from)),
                            ("to", JSONValue($0.to)),
                        ])
                    })
            ),
            ("findings", .array(findings.map { .string($0.code) })),
            ("engines", JSONValue(EngineVerdict.summary(findings))),
            ("notes", .array(outcome.notes.map { .string($0) })),
        ])
        var text: TerminalText = "before:  \(outcome.received)\n"
        text += "after:   \(outcome.result?.description ?? "(dropped)")\n"
        text += "rules:   \(outcome.rules.isEmpty ? "(none matched)" : outcome.rules.joined(separator: ", "))\n"
        for c in outcome.changes {
            let from = c.from.flatMap { $0.isEmpty ? nil : " from \($0.debugDescription)" } ?? ""
            let to = c.to.flatMap { $0.isEmpty ? nil : " to \($0.debugDescription)" } ?? ""
            text += "change:  \(c.op.rawValue) \(c.attribute)\(from)\(to)\n"
        }
        for note in outcome.notes { text += "note:    \(note)\n" }
        for f in findings {
            text +=
                "\(f.severity.rawValue):\(String(repeating: " ", count: max(1, 8 - f.severity.rawValue.count)))\(f.code): \(f.message)\n"
        }
        if let engines = EngineVerdict.summary(findings) { text += "engines: \(engines)\n" }
        self.text = text
    }

    init(json: JSONValue, text: TerminalText) { (self.json, self.text) = (json, text) }

    /// `try --request 'Cookie: …'`: the request-cookie rules over one Cookie header.
    public static func request(_ text: String, engine: RuleEngine, context: MessageContext) -> RulesTrial {
        var value = Substring(text)
        if value.lowercased().hasPrefix("cookie:") { value = value.dropFirst(7) }
        while value.first == " " || value.first == "\t" { value.removeFirst() }
        let before = String(value)
        var headers = before.isEmpty ? [] : [CookieHeader(Array(before.utf8))]
        let changes = engine.editRequestCookies(&headers, context: context)
        let after = headers.first.flatMap { $0.bytes.isEmpty ? nil : String(decoding: $0.bytes, as: UTF8.self) }
        let json = JSONValue.object([
            ("before", JSONValue(before.isEmpty ? nil : before)), ("after", JSONValue(after)),
            ("rules", .array(Array(Set(changes.map(\.rule))).sorted().map { .string($0) })),
            (
                "changes",
                .array(
                    changes.map {
                        .object([
                            ("op", .string($0.op.rawValue)), ("cookie", .string($0.name)),
                            ("newName", JSONValue($0.newName)), ("before", JSONValue($0.before)),
                            ("after", JSONValue($0.after)), ("rule", .string($0.rule)),
                        ])
                    })
            ),
        ])
        var out: TerminalText = "before:  Cookie: \(before)\n"
        out += "after:   \(after.map { "Cookie: \($0)" } ?? "(no Cookie header)")\n"
        if changes.isEmpty { out += "rules:   (none matched)\n" }
        for c in changes {
            let what: String
            switch c.op {
            case .remove: what = "remove \(c.name)"
            case .set:
                what = "set \(c.name) from \((c.before ?? "").debugDescription) to \((c.after ?? "").debugDescription)"
            case .add: what = "add \(c.name)=\(c.after ?? "")"
            case .rename: what = "rename \(c.name) to \(c.newName ?? "")"
            }
            out += "change:  \(what) (rule \"\(c.rule)\", \(c.location.file):\(c.location.line))\n"
        }
        return RulesTrial(json: json, text: out)
    }
}
