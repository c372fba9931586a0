import CookieKit

/// `cookie-proxy parse`: Set-Cookie values in, the user-agent view and the lint out.
enum ParseCommand {
    static let spec = CommandSpec(
        name: "parse",
        abstract: "Parse Set-Cookie values and show what a browser makes of them.",
        usage: "cookie-proxy parse [--url URL] [--format json|text] [VALUE...]",
        options: [
            OptionSpec(
                names: ["--url"], value: "URL", help: "The request URL the cookies come from.",
                defaultValue: "https://localhost/"),
            OptionSpec(
                names: ["--format"], value: "format", help: "json (one object per line) or text.", defaultValue: "json"),
        ],
        arguments:
            "  VALUE    A Set-Cookie value (a 'Set-Cookie:' prefix is accepted). Without any, one per line from stdin.",
        discussion: """
            JSON keys, in this order: name, value, hostOnly, domain, path, expires (RFC 3339 UTC or null),
            maxAge, secure, httpOnly, partitioned, sameSite (Strict|Lax|None|Default), attributes (as written:
            [{"name","value"}]), rejected (null or why a browser would not store it), findings (lint codes).
            """)

    static func run(_ args: ParsedArguments, now: Int64) throws(UsageError) -> Int32 {
        let url = try ParsedArguments.requestURL(
            args.value("--url") ?? "https://localhost/", key: "--url", command: spec.name)
        let format = try args.choice("--format", ["json", "text"], command: spec.name)
        let inputs = args.positionals.isEmpty ? Console.readLines().filter { !$0.isEmpty } : args.positionals
        let suffixes = PublicSuffixList.system
        for input in inputs {
            let cookie = SetCookie(stripHeaderName(input))
            let report = CookieReport(cookie, url: url, now: now, suffixes: suffixes)
            Console.out(format == "json" ? report.json.serialized : report.text)
        }
        return 0
    }

    /// Accepts `Set-Cookie: value` as well as a bare value.
    static func stripHeaderName(_ line: String) -> String {
        let prefix = "set-cookie:"
        guard line.lowercased().hasPrefix(prefix) else { return line }
        return String(line.dropFirst(prefix.count).drop { $0 == " " || $0 == "\t" })
    }
}

/// Everything `parse` (and later `try`) reports about one Set-Cookie value.
struct CookieReport {
    let cookie: SetCookie
    let attributes: CookieAttributes
    let rejected: String?
    let findings: [LintFinding]
    let hostOnly: Bool
    let domain: String?
    let path: String

    init(_ cookie: SetCookie, url: RequestURL, now: Int64, suffixes: PublicSuffixList) {
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

    var json: JSONValue {
        .object([
            ("name", .string(cookie.name)),
            ("value", .string(cookie.value)),
            ("hostOnly", .bool(hostOnly)),
            ("domain", JSONValue(domain)),
            ("path", .string(path)),
            ("expires", JSONValue(attributes.expires.map(CookieDate.rfc3339))),
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
        ])
    }

    var text: String {
        var rows: [(String, String)] = [
            ("name", cookie.name.isEmpty ? "(empty)" : cookie.name),
            ("value", cookie.value),
            ("domain", domain.map { "\($0) (domain cookie)" } ?? "(host-only)"),
            ("path", path),
            ("expires", attributes.expires.map(CookieDate.rfc3339) ?? "-"),
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
        var out = "Set-Cookie: \(cookie)\n"
        for (k, v) in rows { out += "  " + k + String(repeating: " ", count: max(1, 10 - k.count)) + v + "\n" }
        return out
    }
}
