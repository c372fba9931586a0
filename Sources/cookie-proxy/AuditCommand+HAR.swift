import CookieInspector
import CookieKit
import CookieLifecycle
import CookieRules
import Foundation
import JSONStream
import ProxyApp

/// `cookie-proxy audit --har FILE`: the lifecycle over a recorded session.
extension AuditCommand {
    static func runHAR(_ path: String, _ args: ParsedArguments) throws(UsageError) -> Int32 {
        guard args.positionals.isEmpty else {
            throw UsageError(message: "--har takes the file; give no URL with it", command: spec.name)
        }
        let format = try args.choice(Option.format, command: spec.name)
        var audit = HARAudit()
        if let text = args.value(Option.engine) {
            guard let engine = CookieJar.Profile.Engine(rawValue: text) else {
                throw UsageError(
                    message: "--engine must be "
                        + CookieJar.Profile.Engine.allCases.map(\.rawValue).joined(separator: ", "),
                    command: spec.name)
            }
            audit.engine = engine
        }
        if let rulesPath = args.value(Option.rules) {
            let engine: RuleEngine
            do {
                engine = RuleEngine(try RulesFiles.load(rulesPath))
            } catch {
                Console.err("\(error)")
                return 2
            }
            audit.transform = { line, request, status in
                let context = MessageContext(
                    scheme: request.url.scheme, host: request.url.host,
                    port: request.url.port ?? (request.url.isSecure ? 443 : 80), path: request.url.path,
                    method: request.method, status: status, site: request.site.kind)
                let outcome = engine.apply(to: [line], context: context, now: request.time / 1000)[0]
                return (outcome.result, outcome.rules)
            }
        }
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            Console.err("error: cannot open \(path): \(String(cString: strerror(errno)))")
            return 2
        }
        defer { if fd != 0 { close(fd) } }
        var readError: Int32 = 0
        var reader = JSONReader { buffer in
            while true {
                let n = read(fd, buffer.baseAddress, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n < 0 { readError = errno }
                return max(0, n)
            }
        }
        let summary: HARAudit.Summary
        // JUnit is one document, written at the end: the notable entries are kept for it.
        var kept: [HARAudit.EntryReport] = []
        do {
            summary = try audit.run(&reader) { entry in
                guard entry.isNotable else { return }
                if format == "junit" || format == "sarif" {
                    kept.append(entry)
                } else {
                    Console.out(format == "json" ? json(entry).serialized : text(entry))
                }
            }
        } catch {
            if readError != 0 {
                Console.err("error: reading \(path): \(String(cString: strerror(readError)))")
            } else {
                Console.err("error: \(path): \(error.description)")
            }
            return 2
        }
        Console.out(
            format == "junit"
                ? junit(kept)
                : format == "sarif"
                    ? sarif(kept) : format == "json" ? json(summary).serialized + "\n" : text(summary))
        let none =
            "\(path) has \(summary.entries) entries and not one Cookie or Set-Cookie header"
            + (summary.creator.map { " (exported by \($0))" } ?? "")
        if summary.looksSanitized {
            // Headers stripped where the export shows it had cookies (its `cookies` arrays), or DevTools' sanitized
            // export: there is nothing to audit.
            Console.err("error: \(none): it was exported without them. \(exportingWithCookies)")
            return 2
        }
        if summary.entries > 0 && summary.cookieHeaders == 0 && summary.setCookieLines == 0 {
            // Either the site sets no cookie, or the export removed them: said, not judged.
            Console.err(
                "note: \(none): either no cookie was set or sent, or the export removed them. \(exportingWithCookies)")
        }
        return summary.hasFindings ? 1 : 0
    }

    /// How to export a HAR with its cookies from the tools users export from.
    static let exportingWithCookies =
        "To export with cookies: Chrome and Edge: DevTools Settings → Preferences → Network → 'Allow to generate HAR"
        + " with sensitive data', then 'Export HAR (with sensitive data)'; Firefox: Network panel → right-click →"
        + " 'Save All As HAR'; Safari: Web Inspector → Network → Export; Charles: File → Export Session… → HTTP"
        + " Archive (.har); Proxyman: select the requests → right-click → Export → HAR. Each of these keeps Cookie"
        + " and Set-Cookie headers unless a sanitizing option is on."

    static func text(_ e: HARAudit.EntryReport) -> String {
        var out =
            "[\(e.index)] \(e.method) \(e.url) → \(e.status) (\(e.site.kind.rawValue))"
            + (e.client.isEmpty ? "" : " client \(e.client)") + "\n"
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

    static func json(_ e: HARAudit.EntryReport) -> JSONValue {
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

    static func text(_ s: HARAudit.Summary) -> String {
        var out = "\n\(s.entries) entries\(s.skipped > 0 ? " (\(s.skipped) without an http(s) URL skipped)" : "")"
        out += ", \(s.setCookieLines) Set-Cookie lines"
        out += ", judged by \(s.engine.displayName)'s jar"
        out += " (\(s.findings[.rejects] ?? 0) rejected by browsers, \(s.findings[.warning] ?? 0) warnings)"
        if s.rulesChanged > 0 { out += ", \(s.rulesChanged) changed by the rules (dry run)" }
        out += "\ncookies: "
        out += CookieVerdict.Kind.allCases.map { "\(s.verdicts[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
        return out + "\n"
    }

    static func json(_ s: HARAudit.Summary) -> JSONValue {
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
