import CookieKit
import JSONStream
import Terminal

extension SiteScan {
    /// The report as `report.json` and `--format json` write it (field names in the README's "Audit a whole site").
    public var json: JSONValue {
        .object([
            ("engine", .string(engine)), ("start", .string(start)), ("seed", .int(Int64(bitPattern: seed))),
            ("thirdParty", .string(thirdParty)), ("notes", .array(notes.map { .string($0) })),
            (
                "consent",
                .object(
                    states.map { s in
                        (
                            s.state.rawValue,
                            .object([
                                ("applied", .bool(s.applied)), ("detail", .string(s.detail)),
                                (
                                    "cookies",
                                    .array(
                                        cookies.filter { $0.states.contains(s.state) }.map { .string($0.name) })
                                ),
                            ])
                        )
                    })
            ),
            (
                "pages",
                .array(
                    pages.map { p in
                        .object([
                            ("url", .string(p.url)), ("consent", .string(p.state.rawValue)),
                            ("status", p.status.map { .int(Int64($0)) } ?? .null),
                            ("reached", .bool(p.reached)), ("problem", JSONValue(p.problem)),
                            ("cookies", .int(Int64(p.store.count))),
                        ])
                    })
            ),
            ("cookies", .array(cookies.map(\.json))),
            ("rules", rules.map(\.json) ?? .null), ("baseline", baseline.map(\.json) ?? .null),
            (
                "refused",
                .array(
                    refused.map { r in
                        .object([
                            ("name", .string(r.name)), ("url", .string(r.url)), ("page", .string(r.page)),
                            ("consent", .string(r.state.rawValue)), ("reasons", .array(r.reasons.map { .string($0) })),
                            ("blocked", .bool(r.blocked)), ("times", .int(Int64(r.times))),
                            ("domain", .string(r.domain)), ("path", .string(r.path)), ("hostOnly", .bool(r.hostOnly)),
                            ("party", .string(r.party)), ("category", .string(r.category.rawValue)),
                            ("categorySource", .string(r.categorySource)),
                            ("lifetime", r.lifetime.map { .int($0) } ?? .string("session")),
                            ("secure", .bool(r.secure)),
                            ("httpOnly", .bool(r.httpOnly)), ("sameSite", .string(r.sameSite)),
                            ("partitioned", .bool(r.partitioned)), ("line", .string(r.line)),
                            ("findings", .array(r.findings.map { .string($0) })),
                        ])
                    })
            ),
        ])
    }

    /// The report for a person: each consent state, then each cookie (first party first, by name), then the
    /// refused lines.
    public var text: TerminalText {
        var out: TerminalText =
            "\(engine): \(pages.count) page visit(s) from \(start) (seed \(seed); third-party cookies: \(thirdParty))\n"
        for note in notes { out += "  note: \(note)\n" }
        for s in states {
            out += "  consent \(s.state.rawValue): \(s.applied ? "applied" : "NOT APPLIED") (\(s.detail))\n"
        }
        for p in pages where p.problem != nil {
            out += "  page \(p.url) [\(p.state.rawValue)]: \(p.problem!)\n"
        }
        if let baseline { out += "\n\(baseline.text)" }
        let sorted = cookies.sorted { ($0.party, $0.domain, $0.name) < ($1.party, $1.domain, $1.name) }
        out += "\n\(cookies.count) cookie(s):\n"
        for c in sorted {
            let life = Lifetime.words(c.lifetime)
            out += "  \(c.name)  \(c.hostOnly ? "" : ".")\(c.domain)\(c.path)  \(c.party)-party, set by \(c.setBy)"
            out += " on \(c.setOn)\n"
            out += "    first seen: \(c.firstPage) [\(c.firstState.rawValue)]; in: "
            out += "\(c.states.map(\.rawValue).joined(separator: ", "))\n"
            var flags = [life, "SameSite=\(c.sameSite)"]
            if c.secure { flags.append("Secure") }
            if c.httpOnly { flags.append("HttpOnly") }
            if let key = c.partitionKey { flags.append("Partitioned(\(key))") }
            flags.append(c.sent ? "sent back" : "never sent back")
            out += "    \(flags.joined(separator: ", "))\n"
            out += "    category: \(c.category.rawValue)"
            if c.categorySource == "policy", let d = c.declared {
                out += " (policy: \(d.pattern) at \(d.location))"
            } else if let row = c.row {
                out +=
                    " (Open Cookie Database: \(row.platform), \(row.listed)\(row.wildcard ? ", prefix \(row.name)" : ""))"
            }
            out += "\n"
            if !c.findings.isEmpty { out += "    findings: \(c.findings.joined(separator: ", "))\n" }
            for f in c.findings {
                if let breach = CookiePolicy.breach(f, of: c) { out += "    \(f): \(breach)\n" }
            }
            if let engines = c.engines { out += "    engines: \(engines)\n" }
        }
        if let rules {
            out += "\nWith the rules (\(rules.path)), the same pages again:\n"
            for row in rules.rows {
                out += "  \(row.name): \(row.changed ? "CHANGED" : "unchanged")\n"
                out += "    before: \(row.before.summary)\n"
                if row.changed { out += "    after:  \(row.after.summary)\n" }
            }
        }
        if !refused.isEmpty {
            out += "\nRefused by \(engine):\n"
            for r in refused {
                out += "  \(r.name) from \(r.url) [\(r.state.rawValue)]: \(r.reasons.joined(separator: ", "))"
                out += r.blocked ? " (the browser's privacy settings)" : ""
                out += r.times > 1 ? " (\(r.times) times)\n" : "\n"
                out +=
                    "    would be: \(r.hostOnly ? "" : ".")\(r.domain)\(r.path)  \(r.party)-party, \(Lifetime.words(r.lifetime))"
                out += ", category \(r.category.rawValue)\n"
                if !r.findings.isEmpty { out += "    findings: \(r.findings.joined(separator: ", "))\n" }
            }
        }
        return out
    }
}

extension SiteCookie {
    /// One cookie as `report.json` writes it.
    public var json: JSONValue {
        .object([
            ("name", .string(name)), ("domain", .string(domain)), ("path", .string(path)),
            ("hostOnly", .bool(hostOnly)),
            ("partitionKey", JSONValue(partitionKey)), ("party", .string(party)), ("setBy", .string(setBy)),
            ("setOn", .string(setOn)),
            ("firstSeen", .object([("page", .string(firstPage)), ("consent", .string(firstState.rawValue))])),
            ("states", .array(states.map { .string($0.rawValue) })),
            ("lifetime", lifetime.map { .int($0) } ?? .string("session")), ("secure", .bool(secure)),
            ("httpOnly", .bool(httpOnly)), ("sameSite", .string(sameSite)), ("category", .string(category.rawValue)),
            (
                "categorySource",
                categorySource == "policy"
                    ? .object([
                        ("source", .string("policy")), ("pattern", .string(declared?.pattern ?? "")),
                        ("at", .string(declared?.location.description ?? "")),
                    ])
                    : row.map { r in
                        .object([
                            ("source", .string(categorySource)), ("id", .string(r.id)),
                            ("platform", .string(r.platform)),
                            ("listed", .string(r.listed)), ("name", .string(r.name)), ("wildcard", .bool(r.wildcard)),
                            ("retention", .string(r.retention)),
                        ])
                    } ?? .string(categorySource)
            ),
            ("findings", .array(findings.map { .string($0) })), ("engines", JSONValue(engines)), ("sent", .bool(sent)),
        ])
    }
}

extension RulesComparison {
    /// The comparison as `report.json`'s `rules` writes it.
    public var json: JSONValue {
        func side(_ s: Side) -> JSONValue {
            .object([
                ("kept", .array(s.kept.map { .string($0) })), ("refused", .array(s.refused.map { .string($0) })),
                ("sent", .bool(s.sent)), ("states", .array(s.states.map { .string($0.rawValue) })),
            ])
        }
        return .object([
            ("path", .string(path)),
            (
                "consent",
                .object(afterStates.map { ($0.state.rawValue, .object([("applied", .bool($0.applied))])) })
            ),
            (
                "cookies",
                .array(
                    rows.map { r in
                        .object([
                            ("name", .string(r.name)), ("changed", .bool(r.changed)), ("before", side(r.before)),
                            ("after", side(r.after)),
                        ])
                    })
            ),
        ])
    }
}
