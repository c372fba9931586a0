import BrowserEngines
import CookieKit
import Foundation
import ProxyApp

/// `cookie-proxy parse`: Set-Cookie values in, the user-agent view and the lint out.
enum ParseCommand {
    /// The options of `cookie-proxy parse`, declared once: parsing, `--help` and every read
    /// of a value use these (a misspelt option is a compile error).
    enum Option {
        static let url = OptionSpec(
            names: ["--url"], value: "URL", help: "The request URL the cookies come from.",
            defaultValue: "https://localhost/")
        static let format = OptionSpec(
            names: ["--format"], value: "format", help: "json (one object per line) or text.", defaultValue: "json",
            choices: ["json", "text"])
        static let browser = OptionSpec(
            names: ["--browser"], value: "browser",
            help:
                "Also ask this machine's browsers (chromium, firefox, webkit, a comma-separated list, or all): each "
                + "gets every line from the URL and what it stored is shown beside the draft's verdict.",
            choices: ["chromium", "firefox", "webkit", "all"])
    }

    static let spec = CommandSpec(
        name: "parse",
        abstract: "Parse Set-Cookie values and show what a browser makes of them.",
        usage: "cookie-proxy parse [--url URL] [--format json|text] [--browser chromium|firefox|webkit|all] [VALUE...]",
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
            [{"name","value"}]), rejected (null or why a browser would not store it), findings (lint codes),
            engines (null, or which engines reject or alter it: "rejects: Chromium, Firefox; WebKit stores it
            host-only", from the findings).
            With --browser, one key per engine asked ("chromium", "firefox", "webkit"): {"stored": the cookie as
            that engine keeps it, in the same fields, or null; "agrees": whether it matches the draft's;
            "differences": the fields that differ}. Each engine runs headless with a fresh profile, every host
            answered by a local server with the line: Chromium over its DevTools pipe (/usr/lib/chromium/chromium,
            ... or COOKIE_PROXY_CHROMIUM), Firefox over WebDriver BiDi (/usr/bin/firefox-esr, ... or
            COOKIE_PROXY_FIREFOX), WebKitGTK's MiniBrowser over WebKitWebDriver (/usr/bin/WebKitWebDriver or
            COOKIE_PROXY_WEBKIT; under xvfb-run without a display). A missing engine exits 2 naming the package.
            A URL with an IP address other than 127.0.0.1 or ::1 cannot be asked (the browser would connect to it).
            """)

    static func run(_ args: ParsedArguments, now: Int64) throws(UsageError) -> Int32 {
        let url = try ParsedArguments.requestURL(
            args.value(orDefault: Option.url) ?? "https://localhost/", key: "--url", command: spec.name)
        let format = try args.choice(Option.format, command: spec.name)
        var engines: [(Browser, any BrowserEngine)] = []
        if let names = args.value(Option.browser) {
            let chosen = try browsers(names)
            // No engine resolves an IP literal through the local server: it connects to the address itself, and
            // the server listens on 127.0.0.1 and ::1 only (reached through its port).
            if looksLikeIPAddress(url.host) && url.host != "127.0.0.1" && url.host != "::1" {
                throw UsageError(
                    message: "--browser needs a host name, localhost, 127.0.0.1 or [::1] in --url (a browser would "
                        + "connect to \(url.host) itself)", command: spec.name)
            }
            for browser in chosen {
                // Starting a browser takes seconds (all three: about ten): stderr says what is being waited for,
                // stdout keeps the report alone.
                Console.err("parse: starting \(browser.title) (headless, a fresh profile)…")
                let started = Date()
                do {
                    engines.append((browser, try browser.start()))
                    Console.err(
                        "parse: \(browser.title) ready in \(String(format: "%.1f", Date().timeIntervalSince(started))) s"
                    )
                } catch {
                    throw UsageError(
                        message: "--browser \(browser.rawValue): \(error)", command: spec.name,
                        exitStatus: error.missing ? 2 : 1)
                }
            }
        }
        let inputs = args.positionals.isEmpty ? Console.readLines().filter { !$0.isEmpty } : args.positionals
        let suffixes = PublicSuffixList.system
        for input in inputs {
            let cookie = SetCookie(stripHeaderName(input))
            let report = CookieReport(cookie, url: url, now: now, suffixes: suffixes)
            guard !engines.isEmpty else {
                Console.out(format == "json" ? report.json.serialized : report.text)
                continue
            }
            let draft = report.storedView(url: url)
            var verdicts: [BrowserVerdict] = []
            for (browser, engine) in engines {
                Console.err("parse: asking \(browser.title) what it stores from \(url)…")
                do {
                    let stored = try engine.check(
                        stripHeaderName(input), url: url, readAt: draft?.path ?? url.defaultPath)
                    verdicts.append(BrowserVerdict(browser: browser, draft: draft, stored: stored))
                } catch {
                    throw UsageError(
                        message: "--browser \(browser.rawValue): \(error)", command: spec.name, exitStatus: 1)
                }
            }
            if format == "json" {
                guard case .object(var fields) = report.json else { continue }
                for v in verdicts { fields.append((v.browser.rawValue, v.json)) }
                Console.out(JSONValue.object(fields).serialized)
            } else {
                Console.out(report.text + verdicts.map(\.text).joined() + BrowserVerdict.disagreement(verdicts))
            }
        }
        return 0
    }

    /// The engines `--browser` names: one, a comma-separated list, or `all` (in Chromium, Firefox, WebKit order).
    static func browsers(_ names: String) throws(UsageError) -> [Browser] {
        if names == "all" { return Browser.allCases }
        var chosen: [Browser] = []
        for name in names.split(separator: ",", omittingEmptySubsequences: false) {
            guard let b = Browser(rawValue: String(name)) else {
                throw UsageError(
                    message: "--browser '\(name)': one of chromium, firefox, webkit (a comma-separated list) or all",
                    command: spec.name)
            }
            if !chosen.contains(b) { chosen.append(b) }
        }
        return chosen
    }

    /// Accepts `Set-Cookie: value` as well as a bare value.
    static func stripHeaderName(_ line: String) -> String {
        let prefix = "set-cookie:"
        guard line.lowercased().hasPrefix(prefix) else { return line }
        return String(line.dropFirst(prefix.count).drop { $0 == " " || $0 == "\t" })
    }
}

/// The draft's view of a line beside one engine's.
struct BrowserVerdict {
    let browser: Browser
    let draft: BrowserCookie?
    let stored: BrowserCookie?

    var differences: [String] {
        switch (draft, stored) {
        case (nil, nil): return []
        case (nil, _), (_, nil): return ["stored"]
        case (let d?, let c?): return d.differences(from: c)
        }
    }

    static func json(_ s: BrowserCookie) -> JSONValue {
        .object([
            ("name", .string(s.name)), ("value", .string(s.value)), ("hostOnly", .bool(s.hostOnly)),
            ("domain", .string(s.domain)), ("path", .string(s.path)), ("secure", .bool(s.secure)),
            ("httpOnly", .bool(s.httpOnly)), ("sameSite", .string(s.sameSite)), ("persistent", .bool(s.persistent)),
        ])
    }

    var json: JSONValue {
        .object([
            ("stored", stored.map(Self.json) ?? .null), ("agrees", .bool(differences.isEmpty)),
            ("differences", .array(differences.map { .string($0) })),
        ])
    }

    /// One line: what the engine stored (or not) and whether that is the draft's answer.
    var text: String {
        let label = "  " + browser.rawValue + String(repeating: " ", count: max(1, 10 - browser.rawValue.count))
        guard let c = stored else {
            return label + "NOT stored" + (draft == nil ? " (agrees)" : " (the draft stores it)") + "\n"
        }
        let d = differences
        return label + "stored: \(c.name.isEmpty ? "(empty)" : c.name)=\(c.value); "
            + (c.hostOnly ? "host-only \(c.domain)" : "domain \(c.domain)") + "; path \(c.path)"
            + (c.secure ? "; Secure" : "") + (c.httpOnly ? "; HttpOnly" : "") + "; SameSite \(c.sameSite)"
            + (c.persistent ? "; persistent" : "; session")
            + (d.isEmpty ? " (agrees)" : " (DIFFERS from the draft in: \(d.joined(separator: ", ")))") + "\n"
    }

    /// With more than one engine: where they disagree with each other, or that they agree.
    static func disagreement(_ verdicts: [BrowserVerdict]) -> String {
        guard verdicts.count > 1 else { return "" }
        var groups: [(BrowserCookie?, [String])] = []
        for v in verdicts {
            if let i = groups.firstIndex(where: { $0.0 == v.stored }) {
                groups[i].1.append(v.browser.title)
            } else {
                groups.append((v.stored, [v.browser.title]))
            }
        }
        guard groups.count > 1 else { return "  asked     agree with each other\n" }
        let parts = groups.map { stored, names -> String in
            let verb = names.count > 1 ? ("store", "do not store") : ("stores", "does not store")
            guard let s = stored else { return names.joined(separator: ", ") + " " + verb.1 + " it" }
            let other = groups.compactMap { $0.0 }.first { $0 != s }
            let fields = other.map { s.differences(from: $0) } ?? []
            return names.joined(separator: ", ") + " " + verb.0 + " it"
                + (fields.isEmpty ? "" : " (" + fields.map { s.field($0) }.joined(separator: ", ") + ")")
        }
        return "  asked     DISAGREE: " + parts.joined(separator: "; ") + "\n"
    }
}

extension BrowserCookie {
    /// A field's value as text, for the disagreement line.
    func field(_ name: String) -> String {
        switch name {
        case "name": "name '\(self.name)'"
        case "value": "value '\(value)'"
        case "domain": "domain \(domain)"
        case "hostOnly": hostOnly ? "host-only" : "a domain cookie"
        case "path": "path \(path)"
        case "secure": secure ? "Secure" : "not Secure"
        case "httpOnly": httpOnly ? "HttpOnly" : "not HttpOnly"
        case "sameSite": "SameSite \(sameSite)"
        default: persistent ? "persistent" : "session"
        }
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

    /// What a browser following the draft keeps, in the fields the engines report (nil: nothing; an expired
    /// cookie only deletes, RFC 6265bis §5.7).
    func storedView(url: RequestURL) -> BrowserCookie? {
        guard rejected == nil, !findings.contains(where: { $0.code == "already-expired" }) else { return nil }
        return BrowserCookie(
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

    var text: String {
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
        var out = "Set-Cookie: \(cookie)\n"
        for (k, v) in rows { out += "  " + k + String(repeating: " ", count: max(1, 10 - k.count)) + v + "\n" }
        return out
    }
}
