import ArgumentParsing
import BrowserEngines
import CookieKit
import Foundation
import JSONStream
import ProxyApp
import Terminal

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
        var panel: BrowserPanel? = nil
        if let names = args.value(Option.browser) {
            let chosen = try browsers(names)
            // No engine resolves an IP literal through the local server: it connects to the address itself, and
            // the server listens on 127.0.0.1 and ::1 only (reached through its port).
            if looksLikeIPAddress(url.host) && url.host != "127.0.0.1" && url.host != "::1" {
                throw UsageError(
                    message: "--browser needs a host name, localhost, 127.0.0.1 or [::1] in --url (a browser would "
                        + "connect to \(url.host) itself)", command: spec.name)
            }
            // Starting browsers takes a while: stderr says what is being waited for, stdout
            // keeps the report alone.
            do {
                panel = try BrowserPanel(chosen) { Console.err("parse: \($0)") }
            } catch {
                throw UsageError(
                    message: "--browser \(error.browser.rawValue): \(error.failure)", command: spec.name,
                    exitStatus: error.failure.missing ? 2 : 1)
            }
        }
        let inputs = args.positionals.isEmpty ? Console.readLines().filter { !$0.isEmpty } : args.positionals
        let suffixes = PublicSuffixList.system
        for input in inputs {
            let cookie = SetCookie(stripHeaderName(input))
            let report = CookieReport(cookie, url: url, now: now, suffixes: suffixes)
            guard let panel else {
                if format == "json" { Console.document(report.json.serialized) } else { Console.out(report.text) }
                continue
            }
            let verdicts: [BrowserVerdict]
            do {
                verdicts = try panel.ask(stripHeaderName(input), url: url, draft: report.storedView(url: url)) {
                    Console.err("parse: \($0)")
                }
            } catch {
                throw UsageError(
                    message: "--browser \(error.browser.rawValue): \(error.failure)", command: spec.name, exitStatus: 1)
            }
            if format == "json" {
                guard case .object(var fields) = report.json else { continue }
                for v in verdicts { fields.append((v.browser.rawValue, v.json)) }
                Console.document(JSONValue.object(fields).serialized)
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
