import ArgumentParsing
import ProxyApp
import CookieKit
import CookieRules
import ExchangeFacts
import ProxyCore

/// `cookie-proxy check` and `cookie-proxy try`: rules without traffic.
enum CheckCommand {
    static let spec = CommandSpec(
        name: "check",
        abstract: "Validate a rules file (or folder) and say what each rule will do.",
        usage: "cookie-proxy check PATH",
        options: [],
        arguments: "  PATH     A rules file, or a folder of *.rules files (loaded in name order).",
        discussion: "Exit status: 0 valid, 2 invalid (the error gives file:line:column).")

    static func run(_ args: ParsedArguments) throws(UsageError) -> Int32 {
        guard args.positionals.count == 1 else {
            throw UsageError(
                message: "give one rules file or folder, e.g. cookie-proxy check rules/", command: spec.name)
        }
        let set: RuleSet
        do {
            set = try RulesFiles.load(args.positionals[0])
        } catch {
            Console.err("\(error)")
            return 2
        }
        var out = ""
        for rule in set.rules {
            out += "\(rule.location.file):\(rule.location.line) \"\(rule.name)\"\n"
            out += RuleDescription.describe(rule).map { "  \($0)\n" }.joined()
        }
        out +=
            "\(set.rules.count) rule\(set.rules.count == 1 ? "" : "s") OK in \(set.files.count) file\(set.files.count == 1 ? "" : "s")"
        Console.out(out)
        return 0
    }
}

enum TryCommand {
    /// The options of `cookie-proxy try`, declared once: parsing, `--help` and every read
    /// of a value use these (a misspelt option is a compile error).
    enum Option {
        static let rules = OptionSpec(
            names: ["--rules", "-r"], value: "path", help: "Rules file or folder (required).")
        static let url = OptionSpec(
            names: ["--url"], value: "URL", help: "The request URL the cookies come from (required).")
        static let status = OptionSpec(
            names: ["--status"], value: "n", help: "Response status the rules see.", defaultValue: "200")
        static let method = OptionSpec(
            names: ["--method"], value: "m", help: "Request method the rules see.", defaultValue: "GET")
        static let format = OptionSpec(
            names: ["--format"], value: "format", help: "text or json (one object per cookie).",
            defaultValue: "text",
            choices: ["text", "json"])
        static let request = OptionSpec(
            names: ["--request"], value: "'Cookie: …'",
            help: "A request's Cookie header to run the request-cookie rules over (instead of Set-Cookie values).")
        static let site = OptionSpec(
            names: ["--site"], value: "context",
            help: "The request's site context the rules see: same-site, cross-site-navigation, cross-site-subresource.",
            defaultValue: "unknown",
            choices: RequestSite.Kind.allCases.map(\.rawValue))
        static let route = OptionSpec(
            names: ["--route"], value: "[HOST]/PREFIX=URL",
            help:
                "The routes as `run` has them: the one --url takes is what an `upstream` condition reads (as behind"
                + " `run --route`).",
            repeatable: true)
    }

    static let spec = CommandSpec(
        name: "try",
        abstract: "Run Set-Cookie values through rules offline and show before, after and why.",
        usage:
            "cookie-proxy try --rules PATH --url URL [--status N] [--method M] [--site S] [--route R]... [--format text|json] [VALUE...]\n"
            + "       cookie-proxy try --rules PATH --url URL --request 'Cookie: a=1; b=2' [--method M] [--site S]",
        options: [
            Option.rules,
            Option.url,
            Option.status,
            Option.method,
            Option.site,
            Option.request,
            Option.route,
            Option.format,
        ] + [.psl],
        arguments:
            "  VALUE    A Set-Cookie value ('Set-Cookie:' prefix accepted). Without any, one per line from stdin.")

    /// The route of `texts` that `url` takes (as `run --route` would choose it), nil without routes; refused when
    /// none does, naming the routes, as the running proxy's `404` does.
    static func route(_ texts: [String], for url: RequestURL) throws(UsageError) -> RouteFacts? {
        guard !texts.isEmpty else { return nil }
        var routes: [ReverseRoute] = []
        for text in texts {
            switch ReverseRoute.parse(text) {
            case .success(let route): routes.append(route)
            case .failure(let error): throw UsageError(message: "--route \(error)", command: spec.name)
            }
        }
        let table = RouteTable(routes)
        guard let index = table.match(host: url.host, target: url.path) else {
            throw UsageError(
                message: "no --route takes \(url.path) on \(url.host) (the routes: \(table.summary))",
                command: spec.name)
        }
        return table.facts[index]
    }

    static func run(_ args: ParsedArguments, now: Int64) throws(UsageError) -> Int32 {
        guard let path = args.value(Option.rules) else {
            throw UsageError(message: "--rules PATH is required", command: spec.name)
        }
        guard let urlText = args.value(Option.url) else {
            throw UsageError(message: "--url is required, e.g. --url https://app.example.com/login", command: spec.name)
        }
        let url = try ParsedArguments.requestURL(urlText, key: "--url", command: spec.name)
        let format = try args.choice(Option.format, command: spec.name)
        let status = Int(args.value(orDefault: Option.status) ?? "") ?? 200
        let set: RuleSet
        do {
            set = try RulesFiles.load(path)
        } catch {
            Console.err("\(error)")
            return 2
        }
        let engine = RuleEngine(set)
        let siteText = args.value(orDefault: Option.site) ?? ""
        guard let site = RequestSite.Kind(rawValue: siteText) else {
            throw UsageError(
                message: "--site must be one of \(RequestSite.Kind.allCases.map(\.rawValue).joined(separator: ", "))",
                command: spec.name)
        }
        var context = MessageContext(
            scheme: url.scheme, host: url.host, port: url.port ?? (url.scheme == "https" ? 443 : 80), path: url.path,
            method: (args.value(orDefault: Option.method) ?? "").uppercased(), status: status, site: site)
        context.exchange.route = try route(args.all(Option.route), for: url)
        if let request = args.value(Option.request) {
            context.status = nil
            return tryRequest(request, engine: engine, context: context, json: format == "json")
        }
        let inputs = args.positionals.isEmpty ? Console.readLines().filter { !$0.isEmpty } : args.positionals
        let cookies = inputs.map { SetCookie(ParseCommand.stripHeaderName($0)) }
        let outcomes = engine.apply(to: cookies, context: context, now: now)
        for outcome in outcomes {
            let findings =
                CookieLint.findings(for: outcome.result ?? outcome.received, from: url, now: now)
                + CookieLint.siteFindings(for: outcome.result ?? outcome.received, site: context.site)
            if format == "json" {
                Console.out(
                    JSONValue.object([
                        ("before", .string(outcome.received.description)),
                        ("after", JSONValue(outcome.result?.description)),
                        ("rules", .array(outcome.rules.map { .string($0) })),
                        (
                            "changes",
                            .array(
                                outcome.changes.map {
                                    .object([
                                        ("op", .string($0.op.rawValue)), ("attribute", .string($0.attribute)),
                                        ("from", JSONValue($0.from)),
                                        ("to", JSONValue($0.to)),
                                    ])
                                })
                        ),
                        ("findings", .array(findings.map { .string($0.code) })),
                        ("engines", JSONValue(EngineVerdict.summary(findings))),
                        ("notes", .array(outcome.notes.map { .string($0) })),
                    ]).serialized)
            } else {
                var text = "before:  \(outcome.received)\n"
                text += "after:   \(outcome.result?.description ?? "(dropped)")\n"
                text += "rules:   \(outcome.rules.isEmpty ? "(none matched)" : outcome.rules.joined(separator: ", "))\n"
                for c in outcome.changes {
                    let from = c.from.flatMap { $0.isEmpty ? nil : " from \($0.debugDescription)" } ?? ""
                    let to = c.to.flatMap { $0.isEmpty ? nil : " to \($0.debugDescription)" } ?? ""
                    text += "change:  \(c.op.rawValue) \(c.attribute)\(from)\(to)\n"
                }
                for note in outcome.notes { text += "note:    \(note)\n" }
                for f in findings {
                    text +=
                        "\(f.severity.rawValue):\(String(repeating: " ", count: max(1, 8 - f.severity.rawValue.count)))\(f.code): \(f.message)\n"
                }
                if let engines = EngineVerdict.summary(findings) { text += "engines: \(engines)\n" }
                Console.out(text)
            }
        }
        return 0
    }
}

extension TryCommand {
    /// `--request 'Cookie: …'`: the request-cookie rules over one Cookie header.
    static func tryRequest(_ text: String, engine: RuleEngine, context: MessageContext, json: Bool) -> Int32 {
        var value = Substring(text)
        if value.lowercased().hasPrefix("cookie:") { value = value.dropFirst(7) }
        while value.first == " " || value.first == "\t" { value.removeFirst() }
        let before = String(value)
        var headers = before.isEmpty ? [] : [CookieHeader(Array(before.utf8))]
        let changes = engine.editRequestCookies(&headers, context: context)
        let after = headers.first.flatMap { $0.bytes.isEmpty ? nil : String(decoding: $0.bytes, as: UTF8.self) }
        if json {
            Console.out(
                JSONValue.object([
                    ("before", JSONValue(before.isEmpty ? nil : before)), ("after", JSONValue(after)),
                    ("rules", .array(Array(Set(changes.map(\.rule))).sorted().map { .string($0) })),
                    (
                        "changes",
                        .array(
                            changes.map {
                                .object([
                                    ("op", .string($0.op.rawValue)), ("cookie", .string($0.name)),
                                    ("newName", JSONValue($0.newName)), ("before", JSONValue($0.before)),
                                    ("after", JSONValue($0.after)), ("rule", .string($0.rule)),
                                ])
                            })
                    ),
                ]).serialized)
            return 0
        }
        var out = "before:  Cookie: \(before)\n"
        out += "after:   \(after.map { "Cookie: \($0)" } ?? "(no Cookie header)")\n"
        if changes.isEmpty { out += "rules:   (none matched)\n" }
        for c in changes {
            let what: String
            switch c.op {
            case .remove: what = "remove \(c.name)"
            case .set:
                what = "set \(c.name) from \((c.before ?? "").debugDescription) to \((c.after ?? "").debugDescription)"
            case .add: what = "add \(c.name)=\(c.after ?? "")"
            case .rename: what = "rename \(c.name) to \(c.newName ?? "")"
            }
            out += "change:  \(what) (rule \"\(c.rule)\", \(c.location.file):\(c.location.line))\n"
        }
        Console.out(out)
        return 0
    }
}
