import ArgumentParsing
import CookieKit

/// Reads the rules language (rules/README.md) into a validated ``RuleSet``. Every error carries
/// `file:line:column`, the line and a caret, and a "did you mean" for near-miss directives and values.
public enum RulesParser {
    static let conditionKeywords = [
        "host", "path", "method", "scheme", "status", "cookie", "cookie-domain", "where", "site", "upstream",
    ]
    static let actionKeywords = [
        "domain", "cookie-path", "secure", "httponly", "partitioned", "samesite", "max-age", "expires", "session",
        "cap-lifetime", "rename", "value", "drop", "log", "stop", "request-header", "response-header",
        "request-cookie",
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

/// Collects one rule's directives and checks them as a whole.
