import ArgumentParsing
import CookieKit
import HTTPGrammar

/// One `rule "…" { … }` being read: its directives, checked one by one as they come (each error at its
/// `file:line:column`), then against each other when the rule closes (``build()``).
struct RuleBuilder {
    /// Where a directive was written: its keyword's location and the whole line (for the error's excerpt).
    struct Place: Sendable {
        var at: SourceLocation
        var line: String
    }

    /// A cookie action and where it was written (to name both when two contradict each other).
    struct PlacedAction: Sendable {
        var action: CookieAction
        var keyword: String
        var place: Place
    }

    /// One directive line: `[not] keyword args…`.
    struct Directive {
        var keyword: String
        var args: [RulesParser.Token]
        var negated: Bool
        /// The keyword's location (after a `not`) and the line.
        var place: Place
        /// Where the keyword starts.
        var keywordColumn: Int { place.at.column }
        /// Just after the keyword: where its missing arguments would go.
        var argumentsColumn: Int { place.at.column + keyword.count + 1 }

        func fail(_ column: Int, _ message: String) -> RulesError {
            RulesError(
                location: SourceLocation(file: place.at.file, line: place.at.line, column: column), message: message,
                sourceLine: place.line)
        }
        func needArgs(_ what: String) throws(RulesError) {
            if args.isEmpty { throw fail(argumentsColumn, "'\(keyword)' needs \(what)") }
        }
        func noArgs() throws(RulesError) {
            if let extra = args.first { throw fail(extra.column, "'\(keyword)' takes no value") }
        }
    }

    let name: String
    let location: SourceLocation
    let sourceLine: String
    var conditions: [Condition] = []
    var cookieActions: [PlacedAction] = []
    var requestHeaders: [HeaderAction] = []
    var requestCookies: [RequestCookieAction] = []
    var requestCookieAt: Place? = nil
    var whereAt: Place? = nil
    var wherePredicates: [StatePredicate] = []
    var responseHeaders: [HeaderAction] = []
    var headerActionAt: Place? = nil
    var requestHeaderAt: Place? = nil
    var statusAt: Place? = nil
    var cookieConditionAt: Place? = nil
    var cookieNames: [NamePattern] = []
    var stops = false
    var seenConditions: [String: SourceLocation] = [:]

    init(name: String, location: SourceLocation, sourceLine: String) {
        self.name = name
        self.location = location
        self.sourceLine = sourceLine
    }

    /// Reads one directive line into the rule: a condition, a cookie action or a header action.
    mutating func directive(_ allTokens: [RulesParser.Token], line: String, lineNumber: Int, file: String)
        throws(RulesError)
    {
        var tokens = allTokens
        var negated = false
        if tokens[0].text == "not" && !tokens[0].quoted {
            negated = true
            tokens.removeFirst()
        }
        guard let first = tokens.first else {
            throw RulesError(
                location: SourceLocation(file: file, line: lineNumber, column: allTokens[0].column),
                message: "'not' needs a condition after it", sourceLine: line)
        }
        let d = Directive(
            keyword: first.text, args: Array(tokens.dropFirst()), negated: negated,
            place: Place(at: SourceLocation(file: file, line: lineNumber, column: first.column), line: line))
        let keyword = d.keyword
        if RulesParser.conditionKeywords.contains(keyword) {
            if let previous = seenConditions[keyword] {
                throw d.fail(
                    d.keywordColumn,
                    "'\(keyword)' appears twice in this rule (first at line \(previous.line)); list every value on one line"
                )
            }
            seenConditions[keyword] = d.place.at
            conditions.append(Condition(test: try condition(d), negated: negated))
            return
        }
        if negated {
            throw d.fail(
                allTokens[0].column,
                "'not' goes before a condition (\(RulesParser.conditionKeywords.joined(separator: ", "))), not before '\(keyword)'"
            )
        }
        if keyword == "request-header" || keyword == "response-header" {
            try headerAction(d)
        } else if keyword == "request-cookie" {
            try requestCookieAction(d)
        } else {
            try cookieAction(d)
        }
    }

    /// `host`, `cookie-domain`, `path`, `method`, `scheme`, `status`, `cookie`, `where`.
    private mutating func condition(_ d: Directive) throws(RulesError) -> Condition.Test {
        let (keyword, args, fail) = (d.keyword, d.args, d.fail)
        switch keyword {
        case "host", "cookie-domain", "upstream":
            try d.needArgs("one or more host names (example.com, *.example.com)")
            var patterns: [HostPattern] = []
            for a in args {
                let h = a.text.lowercased()
                if h == "*" {
                    patterns.append(.any)
                } else if h == HostPattern.localName && keyword != "cookie-domain" {
                    patterns += HostPattern.local
                } else if h.hasPrefix("*.") && h.count > 2 && Self.isHostName(String(h.dropFirst(2))) {
                    patterns.append(.subdomains(of: String(h.dropFirst(2))))
                } else if Self.isHostName(h) {
                    patterns.append(.exact(h))
                } else {
                    throw fail(
                        a.column,
                        "'\(a.text)' is not a host name, *.suffix pattern or \(HostPattern.localName) (every local"
                            + " development host)")
                }
                if keyword == "cookie-domain", case .exact(let d) = patterns.last, d.hasPrefix(".") {
                    throw fail(a.column, "write cookie-domain without the leading dot; it is ignored when matching")
                }
            }
            if keyword == "cookie-domain" {
                cookieConditionAt = d.place
                return .cookieDomain(patterns)
            } else if keyword == "upstream" {
                return .upstream(patterns)
            } else {
                return .host(patterns)
            }
        case "path":
            try d.needArgs("one or more paths (/prefix/ or a /glob*)")
            var patterns: [PathPattern] = []
            for a in args {
                guard a.text.hasPrefix("/") || a.text.hasPrefix("*") else {
                    throw fail(a.column, "path '\(a.text)' must start with '/'")
                }
                patterns.append(Glob.isGlob(a.text) ? .glob(Glob(a.text)) : .prefix(a.text))
            }
            return .path(patterns)
        case "method":
            try d.needArgs("one or more methods (GET POST …)")
            var methods: Set<String> = []
            for a in args {
                guard !a.text.isEmpty, a.text.utf8.allSatisfy({ $0 &- 0x41 < 26 || $0 &- 0x61 < 26 || $0 == 0x2D })
                else {
                    throw fail(a.column, "'\(a.text)' is not an HTTP method")
                }
                methods.insert(a.text.uppercased())
            }
            return .method(methods)
        case "scheme":
            try d.needArgs("http, https or both")
            var schemes: Set<String> = []
            for a in args {
                let t = a.text.lowercased()
                guard t == "http" || t == "https" else {
                    throw fail(a.column, "scheme '\(a.text)' must be http or https")
                }
                schemes.insert(t)
            }
            return .scheme(schemes)
        case "status":
            try d.needArgs("one or more status codes (200, 3xx)")
            var patterns: [StatusPattern] = []
            for a in args {
                let t = a.text.lowercased()
                if t.count == 3, t.hasSuffix("xx"), let h = Int(t.prefix(1)), (1...5).contains(h) {
                    patterns.append(.hundreds(h))
                } else if let s = Int(t), (100...599).contains(s) {
                    patterns.append(.exact(s))
                } else {
                    throw fail(a.column, "'\(a.text)' is not a status code (100–599) or class (2xx)")
                }
            }
            statusAt = d.place
            return .status(patterns)
        case "cookie":
            try d.needArgs("one or more cookie names (exact, glob*, or /regex/)")
            let patterns = try Self.namePatterns(args[...], fail)
            cookieNames = patterns
            cookieConditionAt = d.place
            return .cookie(patterns)
        case "where":
            try d.needArgs(
                "one or more cookie states (\(StatePredicate.allCases.map(\.rawValue).joined(separator: ", ")))")
            var predicates: [StatePredicate] = []
            for a in args {
                guard let p = StatePredicate(rawValue: a.text.lowercased()) else {
                    let hint =
                        CommandHint.nearest(a.text, StatePredicate.allCases.map(\.rawValue)).map {
                            "; did you mean '\($0)'?"
                        } ?? ""
                    throw fail(a.column, "unknown cookie state '\(a.text)'\(hint)")
                }
                predicates.append(p)
            }
            cookieConditionAt = d.place
            whereAt = d.place
            wherePredicates = predicates
            return .state(predicates)
        case "site":
            let values = RequestSite.Kind.allCases.map(\.rawValue) + ["cross-site"]
            try d.needArgs("one or more site contexts (\(values.joined(separator: ", ")))")
            var kinds: Set<RequestSite.Kind> = []
            for a in args {
                let t = a.text.lowercased()
                if t == "cross-site" {
                    kinds.formUnion([.crossSiteNavigation, .crossSiteSubresource])
                } else if let k = RequestSite.Kind(rawValue: t) {
                    kinds.insert(k)
                } else {
                    let hint = CommandHint.nearest(a.text, values).map { "; did you mean '\($0)'?" } ?? ""
                    throw fail(a.column, "unknown site context '\(a.text)'\(hint)")
                }
            }
            return .site(kinds)
        default:
            preconditionFailure("\(keyword) is listed in RulesParser.conditionKeywords but not read here")
        }
    }

    /// An action on each matched cookie, or `stop`.
    private mutating func cookieAction(_ d: Directive) throws(RulesError) {
        let (keyword, args, fail) = (d.keyword, d.args, d.fail)
        switch keyword {
        case "domain":
            try d.needArgs("a domain, or add-dot, strip-dot, remove, ensure [domain]")
            let v = args[0].text.lowercased()
            let edit: CookieAction.DomainEdit
            switch v {
            case "add-dot": edit = .addDot
            case "strip-dot": edit = .stripDot
            case "remove": edit = .remove
            case "ensure":
                if args.count > 2 { throw fail(args[2].column, "'domain ensure' takes at most one domain") }
                if args.count == 2 {
                    let d = args[1].text.lowercased()
                    guard Self.isHostName(d.hasPrefix(".") ? String(d.dropFirst()) : d) else {
                        throw fail(args[1].column, "'\(args[1].text)' is not a domain")
                    }
                    edit = .ensure(d)
                } else {
                    edit = .ensure(nil)
                }
            default:
                guard args.count == 1 else { throw fail(args[1].column, "'domain' takes one value") }
                guard Self.isHostName(v.hasPrefix(".") ? String(v.dropFirst()) : v) else {
                    let hint =
                        CommandHint.nearest(v, ["add-dot", "strip-dot", "remove", "ensure"]).map {
                            "; did you mean '\($0)'?"
                        } ?? ""
                    throw fail(
                        args[0].column,
                        "'\(args[0].text)' is not a domain or one of add-dot, strip-dot, remove, ensure\(hint)")
                }
                edit = .set(v)
            }
            try add(.domain(edit), d)
        case "cookie-path":
            try d.needArgs("a path starting with '/', or remove")
            guard args.count == 1 else { throw fail(args[1].column, "'cookie-path' takes one value") }
            let v = args[0].text
            if v == "remove" {
                try add(.path(nil), d)
            } else {
                guard v.hasPrefix("/"), !v.contains(";"), v.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw fail(args[0].column, "cookie path '\(v)' must start with '/' and contain no spaces or ';'")
                }
                try add(.path(v), d)
            }
        case "secure", "httponly", "partitioned":
            let kind: CookieAttributeKind =
                keyword == "secure" ? .secure : keyword == "httponly" ? .httpOnly : .partitioned
            var on = true
            if let a = args.first {
                switch a.text.lowercased() {
                case "on": on = true
                case "off": on = false
                default: throw fail(a.column, "'\(keyword)' takes nothing, 'on' or 'off', not '\(a.text)'")
                }
                if args.count > 1 { throw fail(args[1].column, "'\(keyword)' takes one value at most") }
            }
            try add(.flag(kind, on), d)
        case "samesite":
            try d.needArgs("strict, lax, none or remove")
            guard args.count == 1 else { throw fail(args[1].column, "'samesite' takes one value") }
            switch args[0].text.lowercased() {
            case "strict": try add(.sameSite("Strict"), d)
            case "lax": try add(.sameSite("Lax"), d)
            case "none": try add(.sameSite("None"), d)
            case "remove": try add(.sameSite(nil), d)
            default:
                let hint =
                    CommandHint.nearest(args[0].text, ["strict", "lax", "none", "remove"]).map {
                        "; did you mean '\($0)'?"
                    } ?? ""
                throw fail(args[0].column, "samesite must be strict, lax, none or remove, not '\(args[0].text)'\(hint)")
            }
        case "max-age", "cap-lifetime":
            try d.needArgs(
                "a duration in seconds (3600) or with a unit (30m, 12h, 7d)"
                    + (keyword == "max-age" ? ", or remove" : ""))
            guard args.count == 1 else { throw fail(args[1].column, "'\(keyword)' takes one value") }
            if keyword == "max-age" && args[0].text == "remove" {
                try add(.maxAge(nil), d)
            } else {
                guard let seconds = Self.duration(args[0].text) else {
                    throw fail(args[0].column, "'\(args[0].text)' is not a duration such as 3600, 30m, 12h or 7d")
                }
                try add(
                    keyword == "max-age" ? .maxAge(seconds) : .capLifetime(seconds), d)
            }
        case "expires":
            try d.needArgs("a date (\"Wed, 09 Jun 2027 10:18:14 GMT\") or remove")
            if args.count == 1 && args[0].text == "remove" && !args[0].quoted {
                try add(.expires(nil), d)
            } else {
                let text = args.map(\.text).joined(separator: " ")
                guard let date = CookieDate.parse(text) else {
                    throw fail(
                        args[0].column,
                        "'\(text)' is not a cookie date (RFC 6265bis §5.1.1); quote it: \"Wed, 09 Jun 2027 10:18:14 GMT\""
                    )
                }
                try add(.expires(CookieDate.imfFixdate(date)), d)
            }
        case "session", "drop", "log", "stop":
            try d.noArgs()
            if keyword == "stop" {
                stops = true
            } else {
                try add(keyword == "session" ? .session : keyword == "drop" ? .drop : .log, d)
            }
        case "rename":
            try d.needArgs("a new name, or add-prefix PREFIX, or strip-prefix PREFIX")
            let mode = args[0].text
            if mode == "add-prefix" || mode == "strip-prefix" {
                guard args.count == 2 else { throw fail(args[0].column, "'rename \(mode)' needs one prefix") }
                guard Self.isToken(args[1].text) else {
                    throw fail(args[1].column, "prefix '\(args[1].text)' is not a valid cookie-name part")
                }
                try add(
                    .rename(mode == "add-prefix" ? .addPrefix(args[1].text) : .stripPrefix(args[1].text)), d)
            } else {
                guard args.count == 1 else { throw fail(args[1].column, "'rename' takes one new name") }
                guard Self.isToken(mode) else {
                    throw fail(args[0].column, "'\(mode)' is not a valid cookie name (an HTTP token)")
                }
                try add(.rename(.to(mode)), d)
            }
        case "value":
            try d.needArgs("the new value (quote it if it has spaces)")
            guard args.count == 1 else {
                throw fail(args[1].column, "'value' takes one value; quote it if it has spaces")
            }
            guard !args[0].text.contains(";"), args[0].text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
                throw fail(args[0].column, "a cookie value must not contain ';' or control characters")
            }
            try add(.value(args[0].text), d)
        default:
            let hint =
                CommandHint.nearest(keyword, RulesParser.conditionKeywords + RulesParser.actionKeywords + ["not"])
                .map { "; did you mean '\($0)'?" } ?? ""
            throw fail(d.keywordColumn, "unknown directive '\(keyword)'\(hint)")
        }
    }

    mutating func add(_ action: CookieAction, _ d: Directive) throws(RulesError) {
        for other in cookieActions {
            if let conflict = Self.conflict(action, other.action) {
                throw d.fail(
                    d.place.at.column,
                    "contradictory actions in one rule: \(conflict) (see line \(other.place.at.line))")
            }
        }
        cookieActions.append(PlacedAction(action: action, keyword: d.keyword, place: d.place))
    }

    /// What an action changes: two actions of one category in a rule contradict each other (or repeat).
    enum ActionCategory: String, Sendable {
        case domain
        case cookiePath = "cookie-path"
        case secure
        case httpOnly = "httponly"
        case partitioned
        case sameSite = "samesite"
        case maxAge = "max-age"
        case expires
        case session
        case capLifetime = "cap-lifetime"
        case rename
        case value
        case drop
        case log

        init(_ action: CookieAction) {
            switch action {
            case .domain: self = .domain
            case .path: self = .cookiePath
            case .flag(.secure, _): self = .secure
            case .flag(.httpOnly, _): self = .httpOnly
            case .flag(_, _): self = .partitioned  // the rules language has no other flag
            case .sameSite: self = .sameSite
            case .maxAge: self = .maxAge
            case .expires: self = .expires
            case .session: self = .session
            case .capLifetime: self = .capLifetime
            case .rename: self = .rename
            case .value: self = .value
            case .drop: self = .drop
            case .log: self = .log
            }
        }

        /// Whether it sets how long the cookie lives.
        var isLifetime: Bool { self == .session || self == .maxAge || self == .expires || self == .capLifetime }
    }

    /// Why `a` and `b` cannot both be in one rule, or nil when they can.
    static func conflict(_ a: CookieAction, _ b: CookieAction) -> String? {
        let ca = ActionCategory(a)
        let cb = ActionCategory(b)
        if ca == cb { return "'\(ca.rawValue)' twice" }
        if ca == .drop || cb == .drop {
            if ca == .log || cb == .log { return nil }
            return "'drop' with '\((ca == .drop ? cb : ca).rawValue)' (a dropped cookie has nothing left to change)"
        }
        if (ca == .session && cb.isLifetime) || (cb == .session && ca.isLifetime) {
            return "'session' with '\((ca == .session ? cb : ca).rawValue)'"
        }
        if case .sameSite("None") = a, case .flag(.secure, false) = b {
            return "'samesite none' with 'secure off' (browsers reject SameSite=None without Secure)"
        }
        if case .sameSite("None") = b, case .flag(.secure, false) = a {
            return "'samesite none' with 'secure off' (browsers reject SameSite=None without Secure)"
        }
        if case .flag(.partitioned, true) = a, case .flag(.secure, false) = b {
            return "'partitioned' with 'secure off' (Partitioned needs Secure)"
        }
        if case .flag(.partitioned, true) = b, case .flag(.secure, false) = a {
            return "'partitioned' with 'secure off' (Partitioned needs Secure)"
        }
        return nil
    }

    func build() throws(RulesError) -> Rule {
        let actions = cookieActions.map(\.action)
        if actions.isEmpty && requestHeaders.isEmpty && responseHeaders.isEmpty && requestCookies.isEmpty && !stops {
            throw RulesError(
                location: location,
                message: "rule \"\(name)\" has no action: add one (e.g. 'secure'), or 'log' to only log",
                sourceLine: sourceLine)
        }
        if let request = requestCookieAt {
            func refuse(_ message: String, _ place: Place) -> RulesError {
                RulesError(location: place.at, message: message, sourceLine: place.line)
            }
            if let first = cookieActions.first {
                throw refuse(
                    "'request-cookie' edits requests and '\(first.keyword)' responses; put them in rules of their own",
                    first.place)
            }
            if let status = statusAt {
                throw refuse(
                    "'request-cookie' runs before any response exists, so it cannot depend on 'status' (line \(request.at.line))",
                    status)
            }
            if let cookie = cookieConditionAt, whereAt?.at != cookie.at {
                throw refuse(
                    "name the cookies on the 'request-cookie' line (line \(request.at.line)); 'cookie' and 'cookie-domain' look at Set-Cookie lines",
                    cookie)
            }
            if let at = whereAt, wherePredicates.contains(.rejected) {
                throw refuse("'where rejected' describes a Set-Cookie line; a request's cookie was already kept", at)
            }
        }
        if let header = headerActionAt, let cookie = cookieConditionAt {
            throw RulesError(
                location: header.at,
                message:
                    "header actions apply to whole messages and cannot depend on 'cookie'/'where' (line \(cookie.at.line)); put them in a rule of their own",
                sourceLine: header.line)
        }
        if let status = statusAt, let request = requestHeaderAt {
            throw RulesError(
                location: request.at,
                message:
                    "'request-header' runs before any response exists, so it cannot depend on 'status' (line \(status.at.line))",
                sourceLine: status.line)
        }
        for placed in cookieActions {
            if case .rename(.to) = placed.action {
                guard cookieNames.count == 1, case .exact = cookieNames[0],
                    !conditions.contains(where: {
                        if case .cookie = $0.test { return $0.negated } else { return false }
                    })
                else {
                    throw RulesError(
                        location: placed.place.at,
                        message:
                            "'rename NAME' needs exactly one exact cookie name ('cookie Name') so requests can be renamed back; use 'rename add-prefix' for patterns",
                        sourceLine: placed.place.line)
                }
            }
        }
        return Rule(
            name: name, location: location, conditions: conditions, cookieActions: actions,
            requestHeaderActions: requestHeaders, responseHeaderActions: responseHeaders,
            requestCookieActions: requestCookies, stops: stops)
    }

    static func isHostName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 253
            && s.utf8.allSatisfy {
                $0 &- 0x61 < 26 || $0 &- 0x30 < 10 || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F || $0 == 0x3A
            }
            && !s.hasPrefix(".") && !s.hasSuffix(".") && !s.contains("..")
    }

    /// token = 1*tchar (RFC 9110 §5.6.2): cookie and header names.
    static func isToken(_ s: String) -> Bool { !s.isEmpty && s.utf8.allSatisfy(ByteClass.isTokenChar) }

    /// `3600`, `30s`, `30m`, `12h`, `7d`.
    static func duration(_ s: String) -> Int64? {
        guard let last = s.last else { return nil }
        let multipliers: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let m = multipliers[last], let n = Int64(s.dropLast()), n >= 0 { return n * m }
        if let n = Int64(s) { return n }
        return nil
    }
}
