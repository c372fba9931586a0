import ProxyApp
import CookieKit

/// `cookie-proxy parse`: Set-Cookie values in, the user-agent view and the lint out.
enum ParseCommand {
    /// The options of `cookie-proxy parse`, declared once: parsing, `--help` and every read
    /// of a value use these (a misspelt option is a compile error).
    enum Option {
        static let url = OptionSpec(
            names: ["--url"], value: "URL", help: "The request URL the cookies come from.",
            defaultValue: "https://localhost/")
        static let format = OptionSpec(
            names: ["--format"], value: "format", help: "json (one object per line) or text.", defaultValue: "json")
        static let browser = OptionSpec(
            names: ["--browser"], value: "browser",
            help:
                "Also ask this machine's browser (chromium): a headless Chromium gets each line from the URL "
                + "and what it stored is shown beside the draft's verdict.")
    }

    static let spec = CommandSpec(
        name: "parse",
        abstract: "Parse Set-Cookie values and show what a browser makes of them.",
        usage: "cookie-proxy parse [--url URL] [--format json|text] [--browser chromium] [VALUE...]",
        options: [
            Option.url,
            Option.format,
            Option.browser,
        ] + [.psl],
        arguments:
            "  VALUE    A Set-Cookie value (a 'Set-Cookie:' prefix is accepted). Without any, one per line from stdin.",
        discussion: """
            JSON keys, in this order: name, value, hostOnly, domain, path, expires (RFC 3339 UTC or null),
            maxAge, secure, httpOnly, partitioned, sameSite (Strict|Lax|None|Default), attributes (as written:
            [{"name","value"}]), rejected (null or why a browser would not store it), findings (lint codes).
            With --browser chromium, also "chromium": {"stored": the cookie as Chromium keeps it, in the same
            fields, or null; "agrees": whether it matches the draft's; "differences": the fields that differ}.
            Chromium is found at /usr/lib/chromium/chromium, /usr/bin/chromium, ... or COOKIE_PROXY_CHROMIUM.
            A URL with an IP address other than 127.0.0.1 cannot be asked (Chromium would connect to it).
            """)

    static func run(_ args: ParsedArguments, now: Int64) throws(UsageError) -> Int32 {
        let url = try ParsedArguments.requestURL(
            args.value(orDefault: Option.url) ?? "https://localhost/", key: "--url", command: spec.name)
        let format = try args.choice(Option.format, ["json", "text"], command: spec.name)
        var browser: ChromiumCheck? = nil
        if let name = args.value(Option.browser) {
            guard name == "chromium" else {
                throw UsageError(message: "--browser '\(name)': only chromium can be asked", command: spec.name)
            }
            // Chromium resolves no IP literal through its resolver rules: it connects to the address itself, and
            // the local server listens on 127.0.0.1 only (reached through its port, ``ChromiumCheck/check``).
            if Host.isIPAddress(url.host) && url.host != "127.0.0.1" {
                throw UsageError(
                    message: "--browser needs a host name, localhost or 127.0.0.1 in --url (Chromium would connect to "
                        + "\(url.host) itself)", command: spec.name)
            }
            do {
                browser = try ChromiumCheck(binary: ChromiumCheck.locate())
            } catch {
                throw UsageError(message: "--browser chromium: \(error)", command: spec.name, exitStatus: 1)
            }
        }
        let inputs = args.positionals.isEmpty ? Console.readLines().filter { !$0.isEmpty } : args.positionals
        let suffixes = PublicSuffixList.system
        for input in inputs {
            let cookie = SetCookie(stripHeaderName(input))
            let report = CookieReport(cookie, url: url, now: now, suffixes: suffixes)
            guard let browser else {
                Console.out(format == "json" ? report.json.serialized : report.text)
                continue
            }
            let stored: ChromiumCheck.Stored?
            do {
                stored = try browser.check(stripHeaderName(input), url: url)
            } catch {
                throw UsageError(message: "--browser chromium: \(error)", command: spec.name, exitStatus: 1)
            }
            let verdict = BrowserVerdict(draft: report.storedView(url: url), chromium: stored)
            if format == "json" {
                guard case .object(var fields) = report.json else { continue }
                fields.append(("chromium", verdict.json))
                Console.out(JSONValue.object(fields).serialized)
            } else {
                Console.out(report.text + verdict.text)
            }
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

/// The draft's view of a line beside Chromium's.
struct BrowserVerdict {
    let draft: ChromiumCheck.Stored?
    let chromium: ChromiumCheck.Stored?

    var differences: [String] {
        switch (draft, chromium) {
        case (nil, nil): return []
        case (nil, _), (_, nil): return ["stored"]
        case (let d?, let c?):
            return [
                ("name", d.name == c.name), ("value", d.value == c.value), ("domain", d.domain == c.domain),
                ("hostOnly", d.hostOnly == c.hostOnly), ("path", d.path == c.path), ("secure", d.secure == c.secure),
                ("httpOnly", d.httpOnly == c.httpOnly), ("sameSite", d.sameSite == c.sameSite),
                ("persistent", d.persistent == c.persistent),
            ].filter { !$0.1 }.map(\.0)
        }
    }

    static func json(_ s: ChromiumCheck.Stored) -> JSONValue {
        .object([
            ("name", .string(s.name)), ("value", .string(s.value)), ("hostOnly", .bool(s.hostOnly)),
            ("domain", .string(s.domain)), ("path", .string(s.path)), ("secure", .bool(s.secure)),
            ("httpOnly", .bool(s.httpOnly)), ("sameSite", .string(s.sameSite)), ("persistent", .bool(s.persistent)),
        ])
    }

    var json: JSONValue {
        .object([
            ("stored", chromium.map(Self.json) ?? .null), ("agrees", .bool(differences.isEmpty)),
            ("differences", .array(differences.map { .string($0) })),
        ])
    }

    var text: String {
        guard let c = chromium else {
            return "  chromium  NOT stored" + (draft == nil ? " (agrees)" : " (the draft stores it)") + "\n"
        }
        var out =
            "  chromium  stored: \(c.name.isEmpty ? "(empty)" : c.name)=\(c.value); "
            + (c.hostOnly ? "host-only \(c.domain)" : "domain \(c.domain)") + "; path \(c.path)"
            + (c.secure ? "; Secure" : "") + (c.httpOnly ? "; HttpOnly" : "") + "; SameSite \(c.sameSite)"
            + (c.persistent ? "; persistent" : "; session") + "\n"
        let d = differences
        out +=
            d.isEmpty
            ? "  chromium  agrees with the draft\n"
            : "  chromium  DIFFERS from the draft in: \(d.joined(separator: ", "))\n"
        return out
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

    /// What a browser following the draft keeps, in the fields Chromium reports (nil: nothing; an expired
    /// cookie only deletes, RFC 6265bis §5.7).
    func storedView(url: RequestURL) -> ChromiumCheck.Stored? {
        guard rejected == nil, !findings.contains(where: { $0.code == "already-expired" }) else { return nil }
        return ChromiumCheck.Stored(
            name: cookie.name, value: cookie.value, domain: domain ?? url.host.lowercased(), hostOnly: hostOnly,
            path: path, secure: attributes.secure, httpOnly: attributes.httpOnly,
            sameSite: attributes.sameSite.rawValue, persistent: attributes.maxAge != nil || attributes.expires != nil)
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
