import CookieKit
import JSONStream
import SiteAudit
import Terminal

/// `parse --browser`: the draft's view of a line beside one engine's, and where they differ.
public struct BrowserVerdict: Sendable {
    public let browser: Browser
    public let draft: BrowserCookie?
    public let stored: BrowserCookie?

    public init(browser: Browser, draft: BrowserCookie?, stored: BrowserCookie?) {
        (self.browser, self.draft, self.stored) = (browser, draft, stored)
    }

    public var differences: [String] {
        switch (draft, stored) {
        case (nil, nil): return []
        case (nil, _), (_, nil): return ["stored"]
        case (let d?, let c?): return d.differences(from: c)
        }
    }

    public static func json(_ s: BrowserCookie) -> JSONValue {
        .object([
            ("name", .string(s.name)), ("value", .string(s.value)), ("hostOnly", .bool(s.hostOnly)),
            ("domain", .string(s.bareDomain)), ("path", .string(s.path)), ("secure", .bool(s.secure)),
            ("httpOnly", .bool(s.httpOnly)), ("sameSite", .string(s.draftSameSite)),
            ("persistent", .bool(s.persistent)),
        ])
    }

    public var json: JSONValue {
        .object([
            ("stored", stored.map(Self.json) ?? .null), ("agrees", .bool(differences.isEmpty)),
            ("differences", .array(differences.map { .string($0) })),
        ])
    }

    /// One line: what the engine stored (or not) and whether that is the draft's answer.
    public var text: TerminalText {
        let label = "  " + browser.rawValue + String(repeating: " ", count: max(1, 10 - browser.rawValue.count))
        guard let c = stored else {
            return "\(label + "NOT stored" + (draft == nil ? " (agrees)" : " (the draft stores it)"))\n"
        }
        let d = differences
        let line =
            label + "stored: \(c.name.isEmpty ? "(empty)" : c.name)=\(c.value); "
            + (c.hostOnly ? "host-only \(c.bareDomain)" : "domain \(c.bareDomain)") + "; path \(c.path)"
            + (c.secure ? "; Secure" : "") + (c.httpOnly ? "; HttpOnly" : "") + "; SameSite \(c.draftSameSite)"
            + (c.persistent ? "; persistent" : "; session")
            + (d.isEmpty ? " (agrees)" : " (DIFFERS from the draft in: \(d.joined(separator: ", ")))")
        return "\(line)\n"
    }

    /// With more than one engine: where they disagree with each other, or that they agree.
    public static func disagreement(_ verdicts: [BrowserVerdict]) -> TerminalText {
        guard verdicts.count > 1 else { return "" }
        var groups: [(BrowserCookie?, [String])] = []
        for v in verdicts {
            if let i = groups.firstIndex(where: { $0.0.agrees(with: v.stored) }) {
                groups[i].1.append(v.browser.title)
            } else {
                groups.append((v.stored, [v.browser.title]))
            }
        }
        guard groups.count > 1 else { return "  asked     agree with each other\n" }
        let parts = groups.map { stored, names -> String in
            let verb = names.count > 1 ? ("store", "do not store") : ("stores", "does not store")
            guard let s = stored else { return names.joined(separator: ", ") + " " + verb.1 + " it" }
            let other = groups.compactMap { $0.0 }.first { !$0.differences(from: s).isEmpty }
            let fields = other.map { s.differences(from: $0) } ?? []
            return names.joined(separator: ", ") + " " + verb.0 + " it"
                + (fields.isEmpty ? "" : " (" + fields.map { s.field($0) }.joined(separator: ", ") + ")")
        }
        return "  asked     DISAGREE: \(parts.joined(separator: "; "))\n"
    }
}

extension BrowserCookie {
    /// SameSite in the draft's words: Default when none was set.
    var draftSameSite: String { sameSite ?? "Default" }

    /// The fields `parse` compares in which `other` differs from this one: persistence, not the expiry (each
    /// engine's clock is its own).
    public func differences(from other: BrowserCookie) -> [String] {
        [
            ("name", name == other.name), ("value", value == other.value),
            ("domain", bareDomain == other.bareDomain), ("hostOnly", hostOnly == other.hostOnly),
            ("path", path == other.path), ("secure", secure == other.secure), ("httpOnly", httpOnly == other.httpOnly),
            ("sameSite", draftSameSite == other.draftSameSite), ("persistent", persistent == other.persistent),
        ].filter { !$0.1 }.map(\.0)
    }
}

extension BrowserCookie? {
    /// Both nothing, or cookies no compared field tells apart.
    func agrees(with other: BrowserCookie?) -> Bool {
        switch (self, other) {
        case (nil, nil): true
        case (let a?, let b?): a.differences(from: b).isEmpty
        default: false
        }
    }
}

extension BrowserCookie {
    /// A field's value as text, for the disagreement line.
    func field(_ name: String) -> String {
        switch name {
        case "name": "name '\(self.name)'"
        case "value": "value '\(value)'"
        case "domain": "domain \(bareDomain)"
        case "hostOnly": hostOnly ? "host-only" : "a domain cookie"
        case "path": "path \(path)"
        case "secure": secure ? "Secure" : "not Secure"
        case "httpOnly": httpOnly ? "HttpOnly" : "not HttpOnly"
        case "sameSite": "SameSite \(draftSameSite)"
        default: persistent ? "persistent" : "session"
        }
    }
}
