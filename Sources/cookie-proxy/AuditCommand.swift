import ArgumentParsing
import AuditFormats
import CookieAudit
import CookieKit
import CookieRules
import ProxyApp
import ProxyConsole
import Terminal

/// `cookie-proxy audit URL`: every cookie a site sets across its redirects, checked.
enum AuditCommand {
    /// The options of `cookie-proxy audit`, declared once: parsing, `--help` and every read
    /// of a value use these (a misspelt option is a compile error).
    enum Option {
        static let request = OptionSpec(
            names: ["-X", "--request"], value: "method", help: "Request method.", defaultValue: "GET")
        static let data = OptionSpec(
            names: ["-d", "--data"], value: "data", help: "Request body (makes the method POST unless -X).")
        static let header = OptionSpec(
            names: ["-H", "--header"], value: "header", help: "Extra request header 'Name: value'.",
            repeatable: true)
        static let cookie = OptionSpec(
            names: ["-b", "--cookie"], value: "name=value", help: "Cookie to start with.", repeatable: true)
        static let proxy = OptionSpec(names: ["--proxy"], value: "url", help: "Send the requests through this proxy.")
        static let resolve = OptionSpec(
            names: ["--resolve"], value: "host:address",
            help:
                "Connect to this numeric address for this host instead of asking DNS, on every hop (as run --resolve).",
            repeatable: true)
        static let cacert = OptionSpec(names: ["--cacert"], value: "file", help: "Trust this CA certificate (PEM) too.")
        static let insecure = OptionSpec(
            names: ["-k", "--insecure"], value: nil, help: "Do not verify TLS certificates.")
        static let maxRedirs = OptionSpec(
            names: ["--max-redirs"], value: "n", help: "Most redirects to follow.", defaultValue: "10")
        static let timeout = OptionSpec(
            names: ["--timeout"], value: "seconds", help: "Time allowed for each request.", defaultValue: "30")
        static let rules = OptionSpec(
            names: ["--rules", "-r"], value: "path", help: "Also show what these rules would change (before/after)."
        )
        static let format = OptionSpec(
            names: ["--format"], value: "format", help: "text, json, junit (JUnit XML) or sarif (SARIF 2.1.0), for CI.",
            defaultValue: "text",
            choices: ["text", "json", "junit", "sarif"])
        static let engine = OptionSpec(
            names: ["--engine"], value: "engine",
            help:
                "With --har: whose cookie store judges the file (rfc6265bis, chromium, firefox, webkit); by default the"
                + " engine its User-Agent names.",
            choices: CookieJar.Profile.Engine.allCases.map(\.rawValue))
        static let browser = OptionSpec(
            names: ["--browser"], value: "engine",
            help:
                "Audit the whole site in a real browser through the proxy: pages, script-set and third-party cookies,"
                + " consent states (chromium, firefox, webkit, or all three side by side).",
            choices: ["chromium", "firefox", "webkit", "all"])
        static let pages = OptionSpec(
            names: ["--pages"], value: "n", help: "With --browser: pages to visit in each consent state.",
            defaultValue: "10")
        static let seed = OptionSpec(
            names: ["--seed"], value: "n", help: "With --browser: picks the same-site links (same seed, same pages).",
            defaultValue: "1")
        static let wait = OptionSpec(
            names: ["--wait"], value: "seconds", help: "With --browser: longest wait for a page's network to go idle.",
            defaultValue: "10")
        static let consent = OptionSpec(
            names: ["--consent"], value: "state",
            help: "With --browser: none (no click), reject, accept, or all three, each in a fresh profile.",
            defaultValue: "all", choices: ["none", "reject", "accept", "all"])
        static let accept = OptionSpec(
            names: ["--accept"], value: "selector",
            help: "With --browser: the consent banner's accept button (CSS), instead of the known platforms' buttons.")
        static let reject = OptionSpec(
            names: ["--reject"], value: "selector",
            help: "With --browser: the consent banner's reject button (CSS), instead of the known ones.")
        static let thirdParty = OptionSpec(
            names: ["--third-party"], value: "setting",
            help: "With --browser: third-party cookies allowed, blocked, or as the browser's default has it.",
            defaultValue: "default", choices: ["default", "allow", "block"])
        static let policy = OptionSpec(
            names: ["--policy"], value: "file",
            help:
                "With --browser: the cookies the site declares (cookie NAME|PREFIX* { category, domain, lifetime,"
                + " consent }); undeclared cookies and breaches are findings.")
        static let failOn = OptionSpec(
            names: ["--fail-on"], value: "kinds",
            help:
                "With --browser: what makes the exit status 1, comma-separated: undeclared, violations, rejects (a"
                + " line refused for what it says), blocked (refused by the browser's privacy settings alone),"
                + " set-before-consent; with --baseline also new, changed, gone (cookies since the baseline).",
            defaultValue: "rejects,set-before-consent (and undeclared,violations with --policy)")
        static let out = OptionSpec(
            names: ["--out"], value: "dir",
            help:
                "With --browser: write report.json, report.txt, a screenshot per page and manifest.json (SHA-256); with"
                + " --urls a folder per site and fleet.json, fleet.txt, fleet.html.")
        static let urls = OptionSpec(
            names: ["--urls"], value: "file",
            help:
                "With --browser: audit each site of this file (a start URL per line, # comments) with the same options;"
                + " exit status the worst site's.")
        static let sitemap = OptionSpec(
            names: ["--sitemap"], value: nil,
            help:
                "With --browser: take the pages from the site's sitemaps (robots.txt's Sitemap: lines, else"
                + " /sitemap.xml) instead of following links.")
        static let baseline = OptionSpec(
            names: ["--baseline"], value: "path",
            help:
                "With --browser: compare each cookie with an earlier run (its --out folder, report.json or fleet.json):"
                + " new, changed (which facts), gone or same.")
        static let parallel = OptionSpec(
            names: ["--parallel"], value: "n",
            help:
                "With --browser: browsers at once, each with its own proxy: with --urls the sites, else the consent"
                + " states (default: what this machine's cores and memory allow for the engine, said on stderr).")
        static let shard = OptionSpec(
            names: ["--shard"], value: "K/N",
            help:
                "With --urls: audit only the K-th of N disjoint parts of the list (a site always in the same part);"
                + " JOB_COMPLETION_INDEX/N reads K from that variable (Kubernetes, 0-based).")
        static let har = OptionSpec(
            names: ["--har"], value: "file",
            help:
                "Audit a HAR file instead of fetching (browser DevTools, Charles, Proxyman, mitmproxy exports); - for stdin."
        )
    }

    static let spec = CommandSpec(
        name: "audit",
        abstract: "Fetch a URL (following redirects like a browser) and check every cookie it sets.",
        usage:
            "cookie-proxy audit [options] URL\n       cookie-proxy audit --browser chromium [--pages N] [--consent STATE] [--out DIR] [--baseline PATH] URL\n       cookie-proxy audit --browser chromium --urls FILE [--shard K/N] [--out DIR] [--baseline PATH]\n       cookie-proxy audit --har FILE [--rules PATH] [--format text|json|junit|sarif]",
        options: [
            Option.request,
            Option.data,
            Option.header,
            Option.cookie,
            Option.proxy,
            Option.resolve,
            Option.cacert,
            Option.insecure,
            Option.maxRedirs,
            Option.timeout,
            Option.rules,
            Option.format,
            Option.har,
            Option.engine,
            Option.browser,
            Option.pages,
            Option.seed,
            Option.wait,
            Option.consent,
            Option.accept,
            Option.reject,
            // The site's certificates, as `run` reads them (one declaration of each).
            RuntimeOptions.Option.upstreamCa,
            RuntimeOptions.Option.insecureUpstream,
            Option.thirdParty,
            Option.policy,
            Option.failOn,
            Option.out,
            Option.urls,
            Option.sitemap,
            Option.baseline,
            Option.shard,
            Option.parallel,
        ] + [.psl],
        arguments: "  URL      An http:// or https:// URL.",
        discussion: """
            Exit status: 0 when browsers would keep every cookie, 1 when they would reject some (a backend's CI can
            fail on it), 2 for usage or network errors (DNS, refused, TLS verification, timeout).
            With --rules, the cookies judged and carried are those the rules would deliver.
            With --har, every Set-Cookie of the file is linted, the jar is replayed in the file's order, and each
            request's Cookie header is judged against it (sent as expected, expected but not sent with why, sent but
            never set, sent with another value); json is one object per line: the entries with something to say,
            then the summary. Exit 1 when a browser would reject a cookie or a cookie was expected and not sent; 2
            when the file is not a HAR (the error gives the JSON path) or was exported without cookies.
            With --browser, a headless browser visits the start page and same-site links through the proxy (run in
            this process, intercepting https with a CA made for the run), in each consent state: every cookie it
            kept with its party, whether a Set-Cookie line or a script set it, where it first appeared, its
            category (the policy's, else the Open Cookie Database's), and every line it refused with its reasons.
            Exit 1 on what --fail-on names (by default: the browser refused a cookie for what its line says, or an
            analytics or marketing cookie was there before consent; with --policy also undeclared cookies and
            breaches; a refusal by the browser's privacy settings alone only with --fail-on blocked); 2 when no page
            could be scanned or the policy is invalid (file:line:column).
            With --urls, each site of the file is audited in turn (a bad line is refused with its line number, exit
            2); --out gets a folder per site (HOST-PORT) and the fleet's report; the exit status is the worst site's
            (2 when a site could not be audited). --shard K/N audits one part of the list for a CI matrix or a
            Kubernetes Indexed Job; 'cookie-proxy report merge' joins the parts. With --baseline, each cookie (site,
            name, domain, path) is new, changed (each fact before -> after), gone or same; 'cookie-proxy report diff'
            compares two --out folders without auditing.
            """)

    /// The options that mean something only with `--browser` (the site audit's): refused without it, not ignored.
    static let browserOnly: [OptionSpec] = [
        Option.pages, Option.seed, Option.wait, Option.consent, Option.accept, Option.reject,
        RuntimeOptions.Option.upstreamCa, RuntimeOptions.Option.insecureUpstream, Option.thirdParty, Option.policy,
        Option.failOn, Option.out, Option.urls, Option.sitemap, Option.baseline, Option.shard, Option.parallel,
    ]

    static func run(_ args: ParsedArguments, now: Int64) throws(UsageError) -> Int32 {
        if args.value(Option.browser) == nil,
            let given = browserOnly.first(where: { args.value($0) != nil || args.flag($0) })
        {
            throw UsageError(
                message:
                    "\(given.names[0]) means something only with --browser (the site audit): add --browser ENGINE, or leave it out",
                command: spec.name)
        }
        if let har = args.value(Option.har) { return try runHAR(har, args) }
        if args.value(Option.browser) != nil { return try runBrowser(args) }
        guard args.positionals.count == 1 else {
            throw UsageError(
                message: "give one URL, e.g. cookie-proxy audit https://app.example.com/login", command: spec.name)
        }
        var options = AuditOptions(url: args.positionals[0])
        if let data = args.value(Option.request) { options.method = data.uppercased() }
        if let data = args.value(Option.data) {
            options.body = Array(data.utf8)
            if args.value(Option.request) == nil { options.method = "POST" }
            if !args.all(Option.header).contains(where: { $0.lowercased().hasPrefix("content-type:") }) {
                options.headers.append("Content-Type: application/x-www-form-urlencoded")
            }
        }
        for h in args.all(Option.header) {
            guard h.contains(":") else {
                throw UsageError(message: "-H '\(h)' must be 'Name: value'", command: spec.name)
            }
            options.headers.append(h)
        }
        for c in args.all(Option.cookie) {
            guard c.contains("="), !c.contains(";") else {
                throw UsageError(message: "-b '\(c)' must be one name=value pair", command: spec.name)
            }
            options.cookies.append(c)
        }
        options.proxy = args.value(Option.proxy)
        for entry in args.all(Option.resolve) {
            let (host, address) = try RunCommand.resolveEntry(entry, command: spec.name)
            // curl wants an IPv6 address in brackets.
            options.resolve.append((host, address.contains(":") ? "[\(address)]" : address))
        }
        options.caFile = args.value(Option.cacert)
        options.insecure = args.flag(Option.insecure)
        if let n = try args.integer(Option.maxRedirs, in: 0...100, command: spec.name) { options.maximumRedirects = n }
        if let t = try args.seconds(Option.timeout, command: spec.name) { options.timeout = t }
        let format = try args.choice(Option.format, command: spec.name)
        if let path = args.value(Option.rules) {
            do {
                options.rules = try RulesFiles.load(path)
            } catch {
                Console.err("\(error)")
                return 2
            }
        }
        let report: AuditReport
        do {
            report = try CookieAudit.run(options, now: now)
        } catch {
            Console.err("error: \(error.description)")
            return 2
        }
        switch format {
        case "json": Console.document(AuditFormat.json(report).serialized)
        case "junit": Console.document(AuditFormat.junit(report))
        case "sarif": Console.document(AuditFormat.sarif(report))
        default: Console.out(AuditFormat.text(report))
        }
        if let failure = report.failure {
            // The hops that answered are printed above; the audit is incomplete (a network error: status 2).
            Console.err("error: \(failure)")
            return 2
        }
        return report.anyRejected ? 1 : 0
    }
}
