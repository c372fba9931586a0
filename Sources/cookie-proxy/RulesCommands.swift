import ArgumentParsing
import ProxyApp
import CookieKit
import CookieRules
import Terminal

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
        var out: TerminalText = ""
        for rule in set.rules {
            out += "\(rule.location.file):\(rule.location.line) \"\(rule.name)\"\n"
            out += RuleDescription.describe(rule).map { "  \($0)\n" as TerminalText }.joined()
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
        let site = RequestSite.Kind(rawValue: try args.choice(Option.site, command: spec.name))!
        var context = MessageContext(
            scheme: url.scheme, host: url.host, port: url.port ?? (url.scheme == "https" ? 443 : 80), path: url.path,
            method: (args.value(orDefault: Option.method) ?? "").uppercased(), status: status, site: site)
        switch ProxyApp.Configuration.route(args.all(Option.route), host: url.host, path: url.path) {
        case .success(let route): context.exchange.route = route
        case .failure(let error): throw UsageError(message: error.description, command: spec.name)
        }
        if let request = args.value(Option.request) {
            context.status = nil
            let trial = RulesTrial.request(request, engine: engine, context: context)
            if format == "json" { Console.document(trial.json.serialized) } else { Console.out(trial.text) }
            return 0
        }
        let inputs = args.positionals.isEmpty ? Console.readLines().filter { !$0.isEmpty } : args.positionals
        let cookies = inputs.map { SetCookie(ParseCommand.stripHeaderName($0)) }
        let outcomes = engine.apply(to: cookies, context: context, now: now)
        for outcome in outcomes {
            let trial = RulesTrial(outcome, url: url, site: context.site, now: now)
            if format == "json" { Console.document(trial.json.serialized) } else { Console.out(trial.text) }
        }
        return 0
    }
}
