import CookieKit

/// Reads the rules language (rules/README.md) into a validated ``RuleSet``. Every error carries
/// `file:line:column`, the line and a caret, and a "did you mean" for near-miss directives and values.
public enum RulesParser {
    static let conditionKeywords = ["host", "path", "method", "scheme", "status", "cookie", "cookie-domain", "where"]
    static let actionKeywords = [
        "domain", "cookie-path", "secure", "httponly", "partitioned", "samesite", "max-age", "expires", "session",
        "cap-lifetime", "rename", "value", "drop", "log", "stop", "request-header", "response-header",
    ]
    static let forbiddenHeaderEdits: Set<String> = [
        "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection", "te", "upgrade",
        "trailer", "host",
    ]

    struct Token {
        var text: String
        var column: Int
        var quoted: Bool
    }

    /// Parses one file's text.
    public static func parse(_ text: String, file: String) throws(RulesError) -> [Rule] {
        var rules: [Rule] = []
        var current: RuleBuilder? = nil
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.hasSuffix("\r") ? String($0.dropLast()) : String($0)
        }
        for (index, line) in lines.enumerated() {
            let lineNumber = index + 1
            func fail(_ column: Int, _ message: String) -> RulesError {
                RulesError(
                    location: SourceLocation(file: file, line: lineNumber, column: column), message: message,
                    sourceLine: line)
            }
            let tokens = try tokenize(line, fail)
            guard let first = tokens.first else { continue }
            if current == nil {
                guard first.text == "rule", !first.quoted else {
                    let hint = CommandHint.nearest(first.text, ["rule"]).map { "; did you mean '\($0)'?" } ?? ""
                    throw fail(first.column, "expected 'rule \"name\" {' but found '\(first.text)'\(hint)")
                }
                guard tokens.count >= 2, tokens[1].text != "{" || tokens[1].quoted else {
                    throw fail(first.column + 4, "a rule needs a name: rule \"what it does\" {")
                }
                guard tokens.count == 3, tokens[2].text == "{", !tokens[2].quoted else {
                    let column = tokens.count >= 3 ? tokens[2].column : line.count + 1
                    throw fail(column, "expected '{' at the end of the rule line")
                }
                current = RuleBuilder(
                    name: tokens[1].text, location: SourceLocation(file: file, line: lineNumber, column: first.column),
                    sourceLine: line)
                continue
            }
            if first.text == "}" && !first.quoted {
                guard tokens.count == 1 else { throw fail(tokens[1].column, "nothing may follow '}' on its line") }
                rules.append(try current!.build())
                current = nil
                continue
            }
            try current!.directive(tokens, line: line, lineNumber: lineNumber, file: file)
        }
        if let open = current {
            throw RulesError(
                location: open.location, message: "rule \"\(open.name)\" is not closed: add '}'",
                sourceLine: open.sourceLine)
        }
        return rules
    }

    /// Splits a line into words, "quoted strings" (with \" and \\) and /regexes/; `#` starts a comment.
    static func tokenize(_ line: String, _ fail: (Int, String) -> RulesError) throws(RulesError) -> [Token] {
        var tokens: [Token] = []
        let chars = Array(line)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c == " " || c == "\t" {
                i += 1
                continue
            }
            if c == "#" { break }
            let start = i
            if c == "\"" {
                var text = ""
                i += 1
                var closed = false
                while i < chars.count {
                    if chars[i] == "\\" && i + 1 < chars.count {
                        text.append(chars[i + 1])
                        i += 2
                        continue
                    }
                    if chars[i] == "\"" {
                        closed = true
                        i += 1
                        break
                    }
                    text.append(chars[i])
                    i += 1
                }
                guard closed else { throw fail(start + 1, "unterminated string: add the closing \"") }
                tokens.append(Token(text: text, column: start + 1, quoted: true))
                continue
            }
            var text = ""
            while i < chars.count && chars[i] != " " && chars[i] != "\t" {
                if chars[i] == "#" && text.isEmpty { break }
                text.append(chars[i])
                i += 1
            }
            tokens.append(Token(text: text, column: start + 1, quoted: false))
        }
        return tokens
    }

    /// Loads a file, or every `*.rules` file of a folder in name order.
    public static func load(path: String, reader: (String) throws -> String, list: (String) -> [String]?)
        throws -> RuleSet
    {
        var files: [String]
        if let entries = list(path) {
            files = entries.filter { $0.hasSuffix(".rules") }.sorted().map {
                path.hasSuffix("/") ? path + $0 : path + "/" + $0
            }
            if files.isEmpty { throw RulesLoadError(description: "\(path): no *.rules files in this folder") }
        } else {
            files = [path]
        }
        var rules: [Rule] = []
        var seen: [String: SourceLocation] = [:]
        for file in files {
            let text: String
            do { text = try reader(file) } catch {
                throw RulesLoadError(description: "\(file): cannot read the rules file: \(error)")
            }
            for rule in try parse(text, file: file) {
                if let first = seen[rule.name] {
                    throw RulesError(
                        location: rule.location, message: "duplicate rule name \"\(rule.name)\" (first at \(first))",
                        sourceLine: text.split(separator: "\n", omittingEmptySubsequences: false)[
                            rule.location.line - 1
                        ]
                        .description)
                }
                seen[rule.name] = rule.location
                rules.append(rule)
            }
        }
        return RuleSet(rules: rules, files: files)
    }
}

public struct RulesLoadError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// "Did you mean …": the nearest candidate by edit distance, for rules errors and command-line errors alike.
public enum CommandHint {
    public static func nearest(_ word: String, _ candidates: [String]) -> String? {
        let w = word.lowercased()
        return candidates.map { ($0, distance(w, $0)) }.filter { $0.1 <= (w.count <= 3 ? 1 : 2) && $0.1 > 0 }
            .min { $0.1 < $1.1 }?.0
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = Swift.min(
                    previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// Collects one rule's directives and checks them as a whole.
struct RuleBuilder {
    let name: String
    let location: SourceLocation
    let sourceLine: String
    var conditions: [Condition] = []
    var cookieActions: [(CookieAction, String, SourceLocation, String)] = []  // action, keyword, where, line
    var requestHeaders: [HeaderAction] = []
    var responseHeaders: [HeaderAction] = []
    var headerActionAt: (SourceLocation, String)? = nil
    var requestHeaderAt: (SourceLocation, String)? = nil
    var statusAt: (SourceLocation, String)? = nil
    var cookieConditionAt: (SourceLocation, String)? = nil
    var cookieNames: [NamePattern] = []
    var stops = false
    var seenConditions: [String: SourceLocation] = [:]

    init(name: String, location: SourceLocation, sourceLine: String) {
        self.name = name
        self.location = location
        self.sourceLine = sourceLine
    }

    mutating func directive(_ allTokens: [RulesParser.Token], line: String, lineNumber: Int, file: String)
        throws(RulesError)
    {
        func fail(_ column: Int, _ message: String) -> RulesError {
            RulesError(
                location: SourceLocation(file: file, line: lineNumber, column: column), message: message,
                sourceLine: line)
        }
        var tokens = allTokens
        var negated = false
        if tokens[0].text == "not" && !tokens[0].quoted {
            negated = true
            tokens.removeFirst()
            guard !tokens.isEmpty else { throw fail(allTokens[0].column, "'not' needs a condition after it") }
        }
        let keyword = tokens[0].text
        let here = SourceLocation(file: file, line: lineNumber, column: tokens[0].column)
        let args = Array(tokens.dropFirst())
        let isCondition = RulesParser.conditionKeywords.contains(keyword)
        if negated && !isCondition {
            throw fail(
                allTokens[0].column,
                "'not' goes before a condition (\(RulesParser.conditionKeywords.joined(separator: ", "))), not before '\(keyword)'"
            )
        }
        func needArgs(_ what: String) throws(RulesError) {
            if args.isEmpty { throw fail(tokens[0].column + keyword.count + 1, "'\(keyword)' needs \(what)") }
        }
        func noArgs() throws(RulesError) {
            if let extra = args.first { throw fail(extra.column, "'\(keyword)' takes no value") }
        }
        if isCondition {
            if let previous = seenConditions[keyword] {
                throw fail(
                    tokens[0].column,
                    "'\(keyword)' appears twice in this rule (first at line \(previous.line)); list every value on one line"
                )
            }
            seenConditions[keyword] = here
        }
        switch keyword {
        case "host", "cookie-domain":
            try needArgs("one or more host names (example.com, *.example.com)")
            var patterns: [HostPattern] = []
            for a in args {
                let h = a.text.lowercased()
                if h == "*" {
                    patterns.append(.any)
                } else if h.hasPrefix("*.") && h.count > 2 && Self.isHostName(String(h.dropFirst(2))) {
                    patterns.append(.subdomains(of: String(h.dropFirst(2))))
                } else if Self.isHostName(h) {
                    patterns.append(.exact(h))
                } else {
                    throw fail(a.column, "'\(a.text)' is not a host name or *.suffix pattern")
                }
                if keyword == "cookie-domain", case .exact(let d) = patterns.last, d.hasPrefix(".") {
                    throw fail(a.column, "write cookie-domain without the leading dot; it is ignored when matching")
                }
            }
            if keyword == "cookie-domain" {
                cookieConditionAt = (here, line)
                conditions.append(Condition(test: .cookieDomain(patterns), negated: negated))
            } else {
                conditions.append(Condition(test: .host(patterns), negated: negated))
            }
        case "path":
            try needArgs("one or more paths (/prefix/ or a /glob*)")
            var patterns: [PathPattern] = []
            for a in args {
                guard a.text.hasPrefix("/") || a.text.hasPrefix("*") else {
                    throw fail(a.column, "path '\(a.text)' must start with '/'")
                }
                patterns.append(Glob.isGlob(a.text) ? .glob(Glob(a.text)) : .prefix(a.text))
            }
            conditions.append(Condition(test: .path(patterns), negated: negated))
        case "method":
            try needArgs("one or more methods (GET POST …)")
            var methods: Set<String> = []
            for a in args {
                guard !a.text.isEmpty, a.text.utf8.allSatisfy({ $0 &- 0x41 < 26 || $0 &- 0x61 < 26 || $0 == 0x2D })
                else {
                    throw fail(a.column, "'\(a.text)' is not an HTTP method")
                }
                methods.insert(a.text.uppercased())
            }
            conditions.append(Condition(test: .method(methods), negated: negated))
        case "scheme":
            try needArgs("http, https or both")
            var schemes: Set<String> = []
            for a in args {
                let t = a.text.lowercased()
                guard t == "http" || t == "https" else {
                    throw fail(a.column, "scheme '\(a.text)' must be http or https")
                }
                schemes.insert(t)
            }
            conditions.append(Condition(test: .scheme(schemes), negated: negated))
        case "status":
            try needArgs("one or more status codes (200, 3xx)")
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
            statusAt = (here, line)
            conditions.append(Condition(test: .status(patterns), negated: negated))
        case "cookie":
            try needArgs("one or more cookie names (exact, glob*, or /regex/)")
            var patterns: [NamePattern] = []
            for a in args {
                let t = a.text
                if !a.quoted && t.count >= 2 && t.hasPrefix("/") && t.hasSuffix("/") {
                    let source = String(t.dropFirst().dropLast())
                    do {
                        patterns.append(.regex(try Regex(source), source: t))
                    } catch {
                        throw fail(a.column, "invalid regular expression \(t): \(error)")
                    }
                } else if Glob.isGlob(t) {
                    patterns.append(.glob(Glob(t)))
                } else {
                    patterns.append(.exact(t))
                }
            }
            cookieNames = patterns
            cookieConditionAt = (here, line)
            conditions.append(Condition(test: .cookie(patterns), negated: negated))
        case "where":
            try needArgs(
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
            cookieConditionAt = (here, line)
            conditions.append(Condition(test: .state(predicates), negated: negated))
        case "domain":
            try needArgs("a domain, or add-dot, strip-dot, remove, ensure [domain]")
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
            try addCookieAction(.domain(edit), keyword, here, line, fail)
        case "cookie-path":
            try needArgs("a path starting with '/', or remove")
            guard args.count == 1 else { throw fail(args[1].column, "'cookie-path' takes one value") }
            let v = args[0].text
            if v == "remove" {
                try addCookieAction(.path(nil), keyword, here, line, fail)
            } else {
                guard v.hasPrefix("/"), !v.contains(";"), v.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw fail(args[0].column, "cookie path '\(v)' must start with '/' and contain no spaces or ';'")
                }
                try addCookieAction(.path(v), keyword, here, line, fail)
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
            try addCookieAction(.flag(kind, on), keyword, here, line, fail)
        case "samesite":
            try needArgs("strict, lax, none or remove")
            guard args.count == 1 else { throw fail(args[1].column, "'samesite' takes one value") }
            switch args[0].text.lowercased() {
            case "strict": try addCookieAction(.sameSite("Strict"), keyword, here, line, fail)
            case "lax": try addCookieAction(.sameSite("Lax"), keyword, here, line, fail)
            case "none": try addCookieAction(.sameSite("None"), keyword, here, line, fail)
            case "remove": try addCookieAction(.sameSite(nil), keyword, here, line, fail)
            default:
                let hint =
                    CommandHint.nearest(args[0].text, ["strict", "lax", "none", "remove"]).map {
                        "; did you mean '\($0)'?"
                    } ?? ""
                throw fail(args[0].column, "samesite must be strict, lax, none or remove, not '\(args[0].text)'\(hint)")
            }
        case "max-age", "cap-lifetime":
            try needArgs(
                "a duration in seconds (3600) or with a unit (30m, 12h, 7d)"
                    + (keyword == "max-age" ? ", or remove" : ""))
            guard args.count == 1 else { throw fail(args[1].column, "'\(keyword)' takes one value") }
            if keyword == "max-age" && args[0].text == "remove" {
                try addCookieAction(.maxAge(nil), keyword, here, line, fail)
            } else {
                guard let seconds = Self.duration(args[0].text) else {
                    throw fail(args[0].column, "'\(args[0].text)' is not a duration such as 3600, 30m, 12h or 7d")
                }
                try addCookieAction(
                    keyword == "max-age" ? .maxAge(seconds) : .capLifetime(seconds), keyword, here, line, fail)
            }
        case "expires":
            try needArgs("a date (\"Wed, 09 Jun 2027 10:18:14 GMT\") or remove")
            if args.count == 1 && args[0].text == "remove" && !args[0].quoted {
                try addCookieAction(.expires(nil), keyword, here, line, fail)
            } else {
                let text = args.map(\.text).joined(separator: " ")
                guard let date = CookieDate.parse(text) else {
                    throw fail(
                        args[0].column,
                        "'\(text)' is not a cookie date (RFC 6265bis §5.1.1); quote it: \"Wed, 09 Jun 2027 10:18:14 GMT\""
                    )
                }
                try addCookieAction(.expires(CookieDate.imfFixdate(date)), keyword, here, line, fail)
            }
        case "session", "drop", "log", "stop":
            try noArgs()
            if keyword == "stop" {
                stops = true
            } else {
                try addCookieAction(
                    keyword == "session" ? .session : keyword == "drop" ? .drop : .log, keyword, here, line, fail)
            }
        case "rename":
            try needArgs("a new name, or add-prefix PREFIX, or strip-prefix PREFIX")
            let mode = args[0].text
            if mode == "add-prefix" || mode == "strip-prefix" {
                guard args.count == 2 else { throw fail(args[0].column, "'rename \(mode)' needs one prefix") }
                guard Self.isToken(args[1].text) else {
                    throw fail(args[1].column, "prefix '\(args[1].text)' is not a valid cookie-name part")
                }
                try addCookieAction(
                    .rename(mode == "add-prefix" ? .addPrefix(args[1].text) : .stripPrefix(args[1].text)), keyword,
                    here, line, fail)
            } else {
                guard args.count == 1 else { throw fail(args[1].column, "'rename' takes one new name") }
                guard Self.isToken(mode) else {
                    throw fail(args[0].column, "'\(mode)' is not a valid cookie name (an HTTP token)")
                }
                try addCookieAction(.rename(.to(mode)), keyword, here, line, fail)
            }
        case "value":
            try needArgs("the new value (quote it if it has spaces)")
            guard args.count == 1 else {
                throw fail(args[1].column, "'value' takes one value; quote it if it has spaces")
            }
            guard !args[0].text.contains(";"), args[0].text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
                throw fail(args[0].column, "a cookie value must not contain ';' or control characters")
            }
            try addCookieAction(.value(args[0].text), keyword, here, line, fail)
        case "request-header", "response-header":
            guard let op = args.first else {
                throw fail(tokens[0].column + keyword.count + 1, "'\(keyword)' needs set, add or remove")
            }
            let opName = op.text.lowercased()
            guard ["set", "add", "remove"].contains(opName) else {
                let hint =
                    CommandHint.nearest(op.text, ["set", "add", "remove"]).map { "; did you mean '\($0)'?" } ?? ""
                throw fail(op.column, "'\(keyword)' needs set, add or remove, not '\(op.text)'\(hint)")
            }
            guard args.count >= 2 else { throw fail(op.column, "'\(keyword) \(opName)' needs a header name") }
            let name = args[1].text
            guard Self.isToken(name) else { throw fail(args[1].column, "'\(name)' is not a header name") }
            if RulesParser.forbiddenHeaderEdits.contains(name.lowercased()) {
                throw fail(
                    args[1].column, "\(name) is managed by the proxy (message framing or routing) and cannot be edited")
            }
            let action: HeaderAction
            if opName == "remove" {
                guard args.count == 2 else {
                    throw fail(args[2].column, "'\(keyword) remove' takes only a header name")
                }
                action = .remove(name: name)
            } else {
                guard args.count == 3 else {
                    throw fail(
                        args.count < 3 ? args[1].column : args[3].column,
                        "'\(keyword) \(opName)' needs a name and one value (quote it if it has spaces)")
                }
                guard args[2].text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }) else {
                    throw fail(args[2].column, "a header value must not contain control characters")
                }
                action = opName == "set" ? .set(name: name, value: args[2].text) : .add(name: name, value: args[2].text)
            }
            if keyword == "request-header" {
                requestHeaders.append(action)
                requestHeaderAt = (here, line)
            } else {
                responseHeaders.append(action)
            }
            headerActionAt = (here, line)
        default:
            let hint =
                CommandHint.nearest(keyword, RulesParser.conditionKeywords + RulesParser.actionKeywords + ["not"])
                .map { "; did you mean '\($0)'?" } ?? ""
            throw fail(tokens[0].column, "unknown directive '\(keyword)'\(hint)")
        }
    }

    mutating func addCookieAction(
        _ action: CookieAction, _ keyword: String, _ at: SourceLocation, _ line: String,
        _ fail: (Int, String) -> RulesError
    ) throws(RulesError) {
        for (other, otherKeyword, otherAt, _) in cookieActions {
            if let conflict = Self.conflict(action, keyword, other, otherKeyword) {
                throw fail(at.column, "contradictory actions in one rule: \(conflict) (see line \(otherAt.line))")
            }
        }
        cookieActions.append((action, keyword, at, line))
    }

    static func category(_ a: CookieAction) -> String {
        switch a {
        case .domain: return "domain"
        case .path: return "cookie-path"
        case .flag(let k, _): return k.canonicalName.lowercased()
        case .sameSite: return "samesite"
        case .maxAge: return "max-age"
        case .expires: return "expires"
        case .session: return "session"
        case .capLifetime: return "cap-lifetime"
        case .rename: return "rename"
        case .value: return "value"
        case .drop: return "drop"
        case .log: return "log"
        }
    }

    static func conflict(_ a: CookieAction, _ ak: String, _ b: CookieAction, _ bk: String) -> String? {
        let ca = category(a)
        let cb = category(b)
        if ca == cb { return ca == "log" ? "'log' twice" : "'\(ca)' twice" }
        if ca == "drop" || cb == "drop" {
            if ca == "log" || cb == "log" { return nil }
            return "'drop' with '\(ca == "drop" ? cb : ca)' (a dropped cookie has nothing left to change)"
        }
        let lifetime: Set<String> = ["session", "max-age", "expires", "cap-lifetime"]
        if (ca == "session" && lifetime.contains(cb)) || (cb == "session" && lifetime.contains(ca)) {
            return "'session' with '\(ca == "session" ? cb : ca)'"
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
        let actions = cookieActions.map(\.0)
        if actions.isEmpty && requestHeaders.isEmpty && responseHeaders.isEmpty && !stops {
            throw RulesError(
                location: location,
                message: "rule \"\(name)\" has no action: add one (e.g. 'secure'), or 'log' to only log",
                sourceLine: sourceLine)
        }
        if let (at, line) = headerActionAt, let (cookieAt, _) = cookieConditionAt {
            throw RulesError(
                location: at,
                message:
                    "header actions apply to whole messages and cannot depend on 'cookie'/'where' (line \(cookieAt.line)); put them in a rule of their own",
                sourceLine: line)
        }
        if let (at, line) = statusAt, let (reqAt, _) = requestHeaderAt {
            throw RulesError(
                location: reqAt,
                message:
                    "'request-header' runs before any response exists, so it cannot depend on 'status' (line \(at.line))",
                sourceLine: line)
        }
        for (action, _, at, line) in cookieActions {
            if case .rename(.to) = action {
                guard cookieNames.count == 1, case .exact = cookieNames[0],
                    !conditions.contains(where: {
                        if case .cookie = $0.test { return $0.negated } else { return false }
                    })
                else {
                    throw RulesError(
                        location: at,
                        message:
                            "'rename NAME' needs exactly one exact cookie name ('cookie Name') so requests can be renamed back; use 'rename add-prefix' for patterns",
                        sourceLine: line)
                }
            }
        }
        return Rule(
            name: name, location: location, conditions: conditions, cookieActions: actions,
            requestHeaderActions: requestHeaders, responseHeaderActions: responseHeaders, stops: stops)
    }

    static func isHostName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 253
            && s.utf8.allSatisfy {
                $0 &- 0x61 < 26 || $0 &- 0x30 < 10 || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F || $0 == 0x3A
            }
            && !s.hasPrefix(".") && !s.hasSuffix(".") && !s.contains("..")
    }

    static func isToken(_ s: String) -> Bool {
        !s.isEmpty
            && s.utf8.allSatisfy { b in
                switch b {
                case 0x21, 0x23...0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x30...0x39, 0x41...0x5A, 0x5E...0x7A, 0x7C, 0x7E:
                    return true
                default: return false
                }
            }
    }

    /// `3600`, `30s`, `30m`, `12h`, `7d`.
    static func duration(_ s: String) -> Int64? {
        guard let last = s.last else { return nil }
        let multipliers: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let m = multipliers[last], let n = Int64(s.dropLast()), n >= 0 { return n * m }
        if let n = Int64(s) { return n }
        return nil
    }
}
