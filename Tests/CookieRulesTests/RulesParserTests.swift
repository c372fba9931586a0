import Foundation
import CookieKit
import CookieRules
import Testing

@Suite struct RulesParserTests {
    /// Invalid files and their exact messages (file:line:column: message).
    @Test(arguments: [
        (
            "rule \"a\" {\n    hots example.com\n    secure\n}\n",
            "t.rules:2:5: unknown directive 'hots'; did you mean 'host'?"
        ),
        ("rule \"a\" {\n    secure\n", "t.rules:1:1: rule \"a\" is not closed: add '}'"),
        ("rul \"a\" {\n}\n", "t.rules:1:1: expected 'rule \"name\" {' but found 'rul'; did you mean 'rule'?"),
        ("rule \"a\"\n", "t.rules:1:9: expected '{' at the end of the rule line"),
        ("rule \"a {\n}\n", "t.rules:1:6: unterminated string: add the closing \""),
        (
            "rule \"a\" {\n    host example.com\n}\n",
            "t.rules:1:1: rule \"a\" has no action: add one (e.g. 'secure'), or 'log' to only log"
        ),
        (
            "rule \"a\" {\n    samesite laxx\n}\n",
            "t.rules:2:14: samesite must be strict, lax, none or remove, not 'laxx'; did you mean 'lax'?"
        ),
        ("rule \"a\" {\n    cookie /(unclosed/\n    secure\n}\n", "t.rules:2:12: invalid regular expression"),
        (
            "rule \"a\" {\n    secure\n    secure off\n}\n",
            "t.rules:3:5: contradictory actions in one rule: 'secure' twice (see line 2)"
        ),
        (
            "rule \"a\" {\n    drop\n    httponly\n}\n",
            "t.rules:3:5: contradictory actions in one rule: 'drop' with 'httponly'"
        ),
        (
            "rule \"a\" {\n    samesite none\n    secure off\n}\n",
            "t.rules:3:5: contradictory actions in one rule: 'samesite none' with 'secure off'"
        ),
        (
            "rule \"a\" {\n    session\n    max-age 60\n}\n",
            "t.rules:3:5: contradictory actions in one rule: 'session' with 'max-age'"
        ),
        ("rule \"a\" {\n    max-age soon\n}\n", "t.rules:2:13: 'soon' is not a duration such as 3600, 30m, 12h or 7d"),
        (
            "rule \"a\" {\n    status 700\n    log\n}\n",
            "t.rules:2:12: '700' is not a status code (100–599) or class (2xx)"
        ),
        (
            "rule \"a\" {\n    host bad/host\n    log\n}\n",
            "t.rules:2:10: 'bad/host' is not a host name, *.suffix pattern or @local"
        ),
        (
            "rule \"a\" {\n    cookie a*\n    rename b\n}\n",
            "t.rules:3:5: 'rename NAME' needs exactly one exact cookie name"
        ),
        (
            "rule \"a\" {\n    cookie a\n    response-header set X-A 1\n}\n",
            "t.rules:3:5: header actions apply to whole messages"
        ),
        (
            "rule \"a\" {\n    status 200\n    request-header set X-A 1\n}\n",
            "t.rules:3:5: 'request-header' runs before any response exists"
        ),
        (
            "rule \"a\" {\n    response-header set Content-Length 5\n}\n",
            "t.rules:2:25: Content-Length is managed by the proxy"
        ),
        ("rule \"a\" {\n    not secure\n}\n", "t.rules:2:5: 'not' goes before a condition"),
        (
            "rule \"a\" {\n    host a.com\n    host b.com\n    log\n}\n",
            "t.rules:3:5: 'host' appears twice in this rule (first at line 2)"
        ),
        (
            "rule \"a\" {\n    where samesite-nnoe\n    log\n}\n",
            "t.rules:2:11: unknown cookie state 'samesite-nnoe'; did you mean 'samesite-none'?"
        ),
        ("rule \"a\" {\n    expires tomorrow\n}\n", "t.rules:2:13: 'tomorrow' is not a cookie date"),
        ("rule \"a\" {\n    secure\n} extra\n", "t.rules:3:3: nothing may follow '}' on its line"),
    ])
    func invalidFilesFailWithFileLineColumnAndMessage(_ text: String, _ expected: String) {
        do {
            _ = try RulesParser.parse(text, file: "t.rules")
            Issue.record("parsed without error")
        } catch {
            let first = error.description.split(separator: "\n")[0].replacingOccurrences(of: " error:", with: "")
            #expect(first.hasPrefix(expected), "\(first)")
            // The offending line and a caret under the column.
            let lines = error.description.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 3)
            #expect(lines[2].hasSuffix("^"))
            #expect(lines[2].count - 4 == error.location.column)
        }
    }

    @Test func commentsBlankLinesQuotesAndEveryDirectiveParse() throws {
        let text = """
            # a comment
            rule "everything" {   # trailing comment
                host     example.com *.example.com
                not path /admin/ /private/*.json
                method   GET post
                status   200 3xx
                cookie   sid "quoted-name" tracking_* /^ab[0-9]+$/
                where    host-only secure
                domain   ensure
                cookie-path /
                httponly on
                partitioned off
                samesite Strict
                cap-lifetime 7d
                log
                stop
            }

            rule "headers" {
                request-header set X-Debug "a b"
                response-header remove Server
                response-header add X-Via cookie-proxy
            }
            """
        let rules = try RulesParser.parse(text, file: "ok.rules")
        #expect(rules.map(\.name) == ["everything", "headers"])
        #expect(rules[0].conditions.count == 6)
        #expect(rules[0].conditions[1].negated)
        #expect(rules[0].cookieActions.count == 7)
        #expect(rules[0].stops)
        #expect(rules[1].requestHeaderActions == [.set(name: "X-Debug", value: "a b")])
        #expect(
            rules[1].responseHeaderActions == [.remove(name: "Server"), .add(name: "X-Via", value: "cookie-proxy")])
    }

    @Test func aFolderLoadsInNameOrderAndRejectsDuplicateNames() throws {
        let files = [
            "b.rules": "rule \"two\" {\n    log\n}\n", "a.rules": "rule \"one\" {\n    log\n}\n", "notes.txt": "x",
        ]
        let set = try RulesParser.load(
            path: "dir", reader: { files[String($0.dropFirst(4))]! }, list: { _ in Array(files.keys) })
        #expect(set.rules.map(\.name) == ["one", "two"])
        #expect(set.files == ["dir/a.rules", "dir/b.rules"])
        let dup = ["a.rules": "rule \"x\" {\n    log\n}\n", "b.rules": "rule \"x\" {\n    log\n}\n"]
        #expect(throws: RulesError.self) {
            try RulesParser.load(path: "d", reader: { dup[String($0.dropFirst(2))]! }, list: { _ in Array(dup.keys) })
        }
    }
}

/// `check`'s plain words, made without the executable. (rule body, the lines it is described in)
@Suite struct RuleDescriptionTests {
    @Test(arguments: [
        (
            "host @local\n    scheme http\n    domain remove\n    secure off\n    stop",
            [
                "when  the host is a local development host (localhost, *.localhost, 127.0.0.1, ::1)",
                "and   the request is http", "then  remove Domain (host-only cookie)", "      turn Secure off",
                "      stop: later rules skip these cookies",
            ]
        ),
        ("log", ["when  any response", "then  log it"]),
    ])
    func aRuleIsDescribedInPlainWords(_ body: String, _ lines: [String]) throws {
        let rules = try RulesParser.parse("rule \"r\" {\n    \(body)\n}\n", file: "t")
        #expect(RuleDescription.describe(rules[0]) == lines)
    }
}
