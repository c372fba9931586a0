import ArgumentParsing
import AuditFormats
import CookieInspector
import CookieKit
import CookieLifecycle
import CookieRules
import Foundation
import JSONStream
import ProxyApp
import Terminal

/// `cookie-proxy audit --har FILE`: the lifecycle over a recorded session.
extension AuditCommand {
    static func runHAR(_ path: String, _ args: ParsedArguments) throws(UsageError) -> Int32 {
        guard args.positionals.isEmpty else {
            throw UsageError(message: "--har takes the file; give no URL with it", command: spec.name)
        }
        let format = try args.choice(Option.format, command: spec.name)
        var audit = HARAudit()
        if args.value(Option.engine) != nil {
            audit.engine = CookieJar.Profile.Engine(rawValue: try args.choice(Option.engine, command: spec.name))
        }
        if let rulesPath = args.value(Option.rules) {
            let engine: RuleEngine
            do {
                engine = RuleEngine(try RulesFiles.load(rulesPath))
            } catch {
                Console.err("\(error)")
                return 2
            }
            audit.transform = HARAudit.dryRun(engine)
        }
        let summary: HARAudit.Summary
        // JUnit is one document, written at the end: the notable entries are kept for it.
        var kept: [HARAudit.EntryReport] = []
        do {
            summary = try audit.run(file: path) { entry in
                guard entry.isNotable else { return }
                if format == "junit" || format == "sarif" {
                    kept.append(entry)
                } else {
                    if format == "json" {
                        Console.document(AuditFormat.json(entry).serialized)
                    } else {
                        Console.out(AuditFormat.text(entry))
                    }
                }
            }
        } catch {
            Console.err("error: \(error)")
            return 2
        }
        switch format {
        case "junit": Console.document(AuditFormat.junit(kept))
        case "sarif": Console.document(AuditFormat.sarif(kept))
        case "json": Console.document(AuditFormat.json(summary).serialized + "\n")
        default: Console.out(AuditFormat.text(summary))
        }
        let none =
            "\(path) has \(summary.entries) entries and not one Cookie or Set-Cookie header"
            + (summary.creator.map { " (exported by \($0))" } ?? "")
        if summary.looksSanitized {
            // Headers stripped where the export shows it had cookies (its `cookies` arrays), or DevTools' sanitized
            // export: there is nothing to audit.
            Console.err("error: \(none): it was exported without them. \(AuditFormat.exportingWithCookies)")
            return 2
        }
        if summary.entries > 0 && summary.cookieHeaders == 0 && summary.setCookieLines == 0 {
            // Either the site sets no cookie, or the export removed them: said, not judged.
            Console.err(
                "note: \(none): either no cookie was set or sent, or the export removed them. \(AuditFormat.exportingWithCookies)"
            )
        }
        return summary.hasFindings ? 1 : 0
    }
}
