import ArgumentParsing
import CookieKit

/// The directives that act on whole messages and on requests: header edits and request-cookie edits.
extension RuleBuilder {
    /// `request-header` / `response-header` `set|add|remove NAME [VALUE]`.
    mutating func headerAction(_ d: Directive) throws(RulesError) {
        let (keyword, args, fail) = (d.keyword, d.args, d.fail)
        guard let op = args.first else {
            throw fail(d.argumentsColumn, "'\(keyword)' needs set, add or remove")
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
            requestHeaderAt = d.place
        } else {
            responseHeaders.append(action)
        }
        headerActionAt = d.place
    }

    /// `request-cookie remove NAME…`, `request-cookie set NAME VALUE`, `request-cookie rename FROM TO`.
    mutating func requestCookieAction(_ d: Directive) throws(RulesError) {
        let (args, fail) = (d.args, d.fail)
        let ops = ["remove", "set", "rename"]
        guard let op = args.first else { throw fail(d.argumentsColumn, "'request-cookie' needs remove, set or rename") }
        let opName = op.text.lowercased()
        guard ops.contains(opName) else {
            let hint = CommandHint.nearest(op.text, ops).map { "; did you mean '\($0)'?" } ?? ""
            throw fail(op.column, "'request-cookie' needs remove, set or rename, not '\(op.text)'\(hint)")
        }
        func name(_ i: Int) throws(RulesError) -> String {
            let t = args[i].text
            guard Self.isToken(t) else { throw fail(args[i].column, "'\(t)' is not a cookie name") }
            return t
        }
        switch opName {
        case "remove":
            guard args.count >= 2 else {
                throw fail(
                    op.column, "'request-cookie remove' needs one or more cookie names (exact, glob*, or /regex/)")
            }
            requestCookies.append(.remove(try Self.namePatterns(args.dropFirst(), fail)))
        case "set":
            guard args.count == 3 else {
                throw fail(
                    args.count < 3 ? d.argumentsColumn : args[3].column,
                    "'request-cookie set' needs a name and one value (quote it if it has spaces)")
            }
            // RFC 6265bis §4.1.1 cookie-octet, as a browser would send it: no CTLs, whitespace, DQUOTE, comma,
            // semicolon or backslash.
            guard
                args[2].text.utf8.allSatisfy({
                    $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x2C && $0 != 0x3B && $0 != 0x5C
                })
            else {
                throw fail(
                    args[2].column,
                    "a cookie value must not contain whitespace, control characters, '\"', ',', ';' or '\\' (RFC 6265bis §4.1.1)"
                )
            }
            requestCookies.append(.set(name: try name(1), value: args[2].text))
        default:
            guard args.count == 3 else {
                throw fail(
                    args.count < 3 ? d.argumentsColumn : args[3].column, "'request-cookie rename' needs FROM and TO")
            }
            requestCookies.append(.rename(from: try name(1), to: try name(2)))
        }
        requestCookieAt = d.place
    }

    /// Names as the `cookie` condition reads them: exact, glob, or `/regex/`.
    static func namePatterns(_ args: ArraySlice<RulesParser.Token>, _ fail: (Int, String) -> RulesError)
        throws(RulesError) -> [NamePattern]
    {
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
        return patterns
    }
}
