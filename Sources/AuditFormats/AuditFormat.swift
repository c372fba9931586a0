import BuildVersion
import CookieAudit
import CookieInspector
import CookieKit
import CookieLifecycle
import CookieReports
import CookieRules
import Foundation
import JSONStream
import Terminal

/// What `cookie-proxy audit` prints, made from its reports: the redirect chain's (``AuditReport``) and a HAR's
/// entries and summary (``HARAudit``), as text for a person, JSON, JUnit XML and SARIF 2.1.0 for CI.
public enum AuditFormat {
    public static func json(_ r: AuditReport) -> JSONValue {
        .object([
            (
                "hops",
                .array(
                    r.hops.map { hop in
                        .object([
                            ("url", .string(hop.url)), ("method", .string(hop.method)),
                            ("status", .int(Int64(hop.status))),
                            ("location", JSONValue(hop.location)),
                            (
                                "cookies",
                                .array(
                                    hop.cookies.map { c in
                                        .object([
                                            ("setCookie", .string(c.received.description)),
                                            ("name", .string(c.received.name)),
                                            ("after", c.outcome == nil ? .null : JSONValue(c.delivered?.description)),
                                            ("rules", .array((c.outcome?.rules ?? []).map { .string($0) })),
                                            ("stored", .bool(c.delivered != nil && c.rejection == nil)),
                                            ("rejected", JSONValue(c.rejection)),
                                            ("findings", .array(c.findings.map { .string($0.code) })),
                                            ("engines", JSONValue(EngineVerdict.summary(c.findings))),
                                        ])
                                    })
                            ),
                        ])
                    })
            ),
            ("finalUrl", .string(r.finalURL)),
            ("cookieHeader", .string(r.cookieHeader)),
            (
                "jar",
                .array(
                    r.held.sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }.map { c in
                        .object([
                            ("name", .string(c.name)), ("domain", .string(c.domain)), ("hostOnly", .bool(c.hostOnly)),
                            ("path", .string(c.path)), ("secure", .bool(c.secureOnly)), ("httpOnly", .bool(c.httpOnly)),
                            ("sameSite", .string(c.sameSite.rawValue)),
                            (
                                "expires",
                                JSONValue(
                                    c.expiry.map {
                                        $0 == CookieAttributes.earliest ? "expired" : CookieDate.rfc3339($0)
                                    })
                            ),
                        ])
                    })
            ),
            (
                "dropped",
                .array(
                    r.dropped.map {
                        .object([("name", .string($0.name)), ("url", .string($0.url)), ("reason", .string($0.reason))])
                    })
            ),
            ("stopped", JSONValue(r.stoppedBecause)),
            ("failure", JSONValue(r.failure)),
        ])
    }

    public static func text(_ r: AuditReport) -> TerminalText {
        var out: TerminalText = ""
        for (i, hop) in r.hops.enumerated() {
            out +=
                "\(i + 1). \(hop.method) \(hop.url) → \(hop.status)\(hop.location.map { " (Location: \($0))" } ?? "")\n"
            if hop.cookies.isEmpty { out += "   no cookies\n" }
            for c in hop.cookies {
                let verdict =
                    c.delivered == nil ? "DROPPED by rules" : c.rejection.map { "REJECTED: \($0)" } ?? "stored"
                out += "   Set-Cookie: \(c.received)\n"
                if let o = c.outcome, o.isChanged {
                    out +=
                        "     rules:    \(o.rules.joined(separator: ", ")) → \(c.delivered?.description ?? "(dropped)")\n"
                }
                out += "     verdict:  \(verdict)\n"
                for f in c.findings { out += "     \(f.severity.rawValue): \(f.code): \(f.message)\n" }
                if let engines = EngineVerdict.summary(c.findings) { out += "     engines:  \(engines)\n" }
            }
        }
        if let stopped = r.stoppedBecause { out += "(\(stopped))\n" }
        if let failure = r.failure { out += "\(r.hops.count + 1). FAILED: \(failure)\n" }
        out +=
            "\nCookie header a browser would send to \(r.finalURL):\n  \(r.cookieHeader.isEmpty ? "(none)" : r.cookieHeader)\n"
        if r.dropped.isEmpty {
            out += "Every cookie would be kept."
        } else {
            out +=
                "Cookies browsers would drop:\n"
                + r.dropped.map { "  \($0.name) from \($0.url): \($0.reason)" as TerminalText }.joined(separator: "\n")
        }
        return out
    }

    /// `audit URL --format junit`: a suite per host, a case per Set-Cookie line of each hop.
    public static func junit(_ r: AuditReport) -> String {
        var report = JUnitReport()
        for (index, hop) in r.hops.enumerated() {
            for cookie in hop.cookies {
                report.add(
                    line: cookie.received, delivered: cookie.delivered != nil, rules: cookie.outcome?.rules ?? [],
                    rejection: cookie.rejection, findings: cookie.findings,
                    suite: RequestURL(hop.url)?.host ?? hop.url,
                    at: "hop \(index + 1): \(hop.method) \(hop.url) → \(hop.status)")
            }
        }
        return report.text(name: "cookie-proxy audit")
    }

    /// `audit URL --format sarif`: each hop's Set-Cookie lines' findings, and the jar's refusals.
    public static func sarif(_ r: AuditReport) -> String {
        var report = FindingsReport()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for hop in r.hops {
            let host = RequestURL(hop.url)?.host ?? hop.url
            for cookie in hop.cookies {
                report.add(
                    findings: cookie.findings, cookie: cookie.received.name, host: host, url: hop.url, time: now,
                    rules: cookie.outcome?.rules ?? [])
                if let rejection = cookie.rejection {
                    report.add(
                        .init(host: host, cookie: cookie.received.name, code: "jar-rejected"), level: .rejects,
                        url: hop.url, time: now, message: rejection)
                }
            }
        }
        return report.sarif(toolVersion: cookieProxyBuildVersion)
    }

    /// `audit --har FILE --format sarif`: the entries' Set-Cookie findings and their verdicts.
    public static func sarif(_ entries: [HARAudit.EntryReport]) -> String {
        var report = FindingsReport()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for e in entries {
            let host = RequestURL(e.url)?.host ?? e.url
            for line in e.setCookies {
                report.add(
                    findings: line.findings, cookie: line.received.name, host: host, url: e.url, time: now,
                    rules: line.rules)
            }
            report.add(verdicts: e.verdicts, host: host, url: e.url, time: now)
        }
        return report.sarif(toolVersion: cookieProxyBuildVersion)
    }

    /// `audit --har FILE --format junit`: a suite per host, a case per Set-Cookie line and per cookie a request sent
    /// or was expected to send; a verdict other than sent-as-expected fails, with its reason.
    public static func junit(_ entries: [HARAudit.EntryReport]) -> String {
        var report = JUnitReport()
        for e in entries {
            let host = RequestURL(e.url)?.host ?? e.url
            let place = "entry \(e.index): \(e.method) \(e.url) → \(e.status)"
            for line in e.setCookies {
                let rejection = line.event.flatMap { $0.kind == .rejected ? ($0.detail ?? "the jar refused it") : nil }
                report.add(
                    line: line.received, delivered: line.forwarded != nil, rules: line.rules, rejection: rejection,
                    findings: line.findings, suite: host, at: place)
            }
            for v in e.verdicts {
                let failure =
                    v.kind == .sentAsExpected
                    ? nil
                    : (
                        v.kind.rawValue, v.reason.map { "\($0.code.rawValue): \($0.message)" } ?? v.kind.rawValue,
                        "Cookie \(v.name) in \(place)"
                    )
                report.add(suite: host, name: "\(v.name) sent? (\(place))", failure: failure, output: nil)
            }
        }
        return report.text(name: "cookie-proxy audit --har")
    }

    /// How to export a HAR with its cookies from the tools users export from.
    public static let exportingWithCookies =
        "To export with cookies: Chrome and Edge: DevTools Settings → Preferences → Network → 'Allow to generate HAR"
        + " with sensitive data', then 'Export HAR (with sensitive data)'; Firefox: Network panel → right-click →"
        + " 'Save All As HAR'; Safari: Web Inspector → Network → Export; Charles: File → Export Session… → HTTP"
        + " Archive (.har); Proxyman: select the requests → right-click → Export → HAR. Each of these keeps Cookie"
        + " and Set-Cookie headers unless a sanitizing option is on."

    public static func text(_ e: HARAudit.EntryReport) -> TerminalText {
        var out: TerminalText =
            "[\(e.index)] \(e.method) \(e.url) → \(e.status) (\(e.site.kind.rawValue))"
            + (e.client.isEmpty ? "" : " client \(e.client)") + "\n" as TerminalText
        for line in e.setCookies {
            out += "   Set-Cookie: \(line.received)\n"
            if !line.rules.isEmpty || line.forwarded?.bytes != line.received.bytes {
                out +=
                    "     rules:    \(line.rules.joined(separator: ", ")) → \(line.forwarded?.description ?? "(dropped)")\n"
            }
            if let event = line.event {
                out += "     jar:      \(event.kind.rawValue)\(event.detail.map { ": \($0)" } ?? "")\n"
                if let note = event.note { out += "     note:     \(note)\n" }
            }
            for f in line.findings { out += "     \(f.severity.rawValue): \(f.code): \(f.message)\n" }
            if let engines = EngineVerdict.summary(line.findings) { out += "     engines:  \(engines)\n" }
        }
        for v in e.verdicts where v.kind != .sentAsExpected {
            out += "   \(v.kind.rawValue): \(v.name)\(v.reason.map { " — \($0.code.rawValue): \($0.message)" } ?? "")\n"
        }
        let asExpected = e.verdicts.filter { $0.kind == .sentAsExpected }.map(\.name)
        if !asExpected.isEmpty { out += "   sent as expected: \(asExpected.joined(separator: ", "))\n" }
        return out
    }

    public static func json(_ e: HARAudit.EntryReport) -> JSONValue {
        // The file is the user's own: values as they are in it.
        let views = InspectorViews(redaction: Redaction(showValues: true, key: []))
        return .object([
            ("entry", .int(Int64(e.index))), ("method", .string(e.method)), ("url", .string(e.url)),
            ("status", .int(Int64(e.status))), ("site", .string(e.site.kind.rawValue)),
            ("client", JSONValue(e.client.isEmpty ? nil : e.client)),
            (
                "setCookies",
                .array(
                    e.setCookies.map { line in
                        .object([
                            ("setCookie", .string(line.received.description)),
                            ("after", JSONValue(line.forwarded?.description)),
                            ("rules", .array(line.rules.map { .string($0) })),
                            ("jar", JSONValue(line.event?.kind.rawValue)),
                            ("jarDetail", JSONValue(line.event?.detail)), ("note", JSONValue(line.event?.note)),
                            (
                                "findings",
                                .array(
                                    line.findings.map {
                                        .object([
                                            ("code", .string($0.code)), ("severity", .string($0.severity.rawValue)),
                                            ("message", .string($0.message)),
                                        ])
                                    })
                            ),
                            ("engines", JSONValue(EngineVerdict.summary(line.findings))),
                        ])
                    })
            ),
            ("verdicts", .array(e.verdicts.map(views.verdictJSON))),
        ])
    }

    public static func text(_ s: HARAudit.Summary) -> TerminalText {
        var out: TerminalText =
            "\n\(s.entries) entries\(s.skipped > 0 ? " (\(s.skipped) without an http(s) URL skipped)" : "")"
        out += ", \(s.setCookieLines) Set-Cookie lines"
        out += ", judged by \(s.engine.displayName)'s jar"
        out += " (\(s.findings[.rejects] ?? 0) rejected by browsers, \(s.findings[.warning] ?? 0) warnings)"
        if s.rulesChanged > 0 { out += ", \(s.rulesChanged) changed by the rules (dry run)" }
        out += "\ncookies: "
        out += CookieVerdict.Kind.allCases.map { "\(s.verdicts[$0] ?? 0) \($0.rawValue)" as TerminalText }.joined(
            separator: ", ")
        return out + "\n"
    }

    public static func json(_ s: HARAudit.Summary) -> JSONValue {
        .object([
            (
                "summary",
                .object([
                    ("entries", .int(Int64(s.entries))), ("skipped", .int(Int64(s.skipped))),
                    ("creator", JSONValue(s.creator)), ("engine", .string(s.engine.rawValue)),
                    ("setCookieLines", .int(Int64(s.setCookieLines))),
                    (
                        "findings",
                        .object(
                            ["rejects", "warning", "info"].map {
                                ($0, .int(Int64(s.findings[LintFinding.Severity(rawValue: $0)!] ?? 0)))
                            })
                    ),
                    (
                        "verdicts",
                        .object(CookieVerdict.Kind.allCases.map { ($0.rawValue, .int(Int64(s.verdicts[$0] ?? 0))) })
                    ),
                    ("rulesChanged", .int(Int64(s.rulesChanged))), ("sanitized", .bool(s.looksSanitized)),
                ])
            )
        ])
    }
}
