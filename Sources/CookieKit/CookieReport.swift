import JSONStream
import Terminal

/// Everything `parse` reports about one Set-Cookie value from a URL: the cookie a browser following RFC 6265bis
/// would store (or why not), the lint's findings, and which engines would differ.
public struct CookieReport: Sendable {
    public let cookie: SetCookie
    public let attributes: CookieAttributes
    public let rejected: String?
    public let findings: [LintFinding]
    public let hostOnly: Bool
    public let domain: String?
    public let path: String

    public init(_ cookie: SetCookie, url: RequestURL, now: Int64, suffixes: PublicSuffixList) {
        self.cookie = cookie
        attributes = cookie.attributes
        findings = CookieLint.findings(for: cookie, from: url, now: now, suffixes: suffixes)
        switch CookieJar.evaluate(cookie, from: url, now: now, suffixes: suffixes) {
        case .success(let stored):
            rejected = nil
            hostOnly = stored.hostOnly
            domain = stored.hostOnly ? nil : stored.domain
            path = stored.path
        case .failure(let rejection):
            rejected = rejection.reason
            let d = attributes.domain ?? ""
            hostOnly = d.isEmpty
            domain = d.isEmpty ? nil : d
            path = attributes.path ?? url.defaultPath
        }
    }

    public var json: JSONValue {
        .object([
            ("name", .string(cookie.name)),
            ("value", .string(cookie.value)),
            ("hostOnly", .bool(hostOnly)),
            ("domain", JSONValue(domain)),
            ("path", .string(path)),
            ("expires", JSONValue(attributes.expires.map { CookieDate.rfc3339($0) })),
            ("maxAge", JSONValue(attributes.maxAge)),
            ("secure", .bool(attributes.secure)),
            ("httpOnly", .bool(attributes.httpOnly)),
            ("partitioned", .bool(attributes.partitioned)),
            ("sameSite", .string(attributes.sameSite.rawValue)),
            (
                "attributes",
                .array(
                    cookie.writtenAttributes.map {
                        .object([("name", .string($0.name)), ("value", JSONValue($0.value))])
                    })
            ),
            ("rejected", JSONValue(rejected)),
            ("findings", .array(findings.map { .string($0.code) })),
            ("engines", JSONValue(EngineVerdict.summary(findings))),
        ])
    }

    public var text: TerminalText {
        var rows: [(String, String)] = [
            ("name", cookie.name.isEmpty ? "(empty)" : cookie.name),
            ("value", cookie.value),
            ("domain", domain.map { "\($0) (domain cookie)" } ?? "(host-only)"),
            ("path", path),
            ("expires", attributes.expires.map { CookieDate.rfc3339($0) } ?? "-"),
            ("max-age", attributes.maxAge.map(String.init) ?? "-"),
            (
                "flags",
                [
                    attributes.secure ? "Secure" : nil, attributes.httpOnly ? "HttpOnly" : nil,
                    attributes.partitioned ? "Partitioned" : nil,
                ].compactMap { $0 }.joined(separator: " ")
            ),
            ("samesite", attributes.sameSite.rawValue),
            ("verdict", rejected.map { "REJECTED: \($0)" } ?? "stored"),
        ]
        for finding in findings { rows.append((finding.severity.rawValue, "\(finding.code): \(finding.message)")) }
        if let engines = EngineVerdict.summary(findings) { rows.append(("engines", engines)) }
        var out: TerminalText = "Set-Cookie: \(cookie)\n"
        for (k, v) in rows { out += "  \(k)\(String(repeating: " ", count: max(1, 10 - k.count)))\(v)\n" }
        return out
    }
}
