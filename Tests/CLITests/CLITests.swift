import Foundation
import TestSupport
import Testing

@Suite struct CLITests {
    /// `--help` of every subcommand matches its golden file (Tests/CLITests/golden/).
    @Test(arguments: [
        "", "run", "check", "try", "audit", "report", "ca", "parse", "conformance", "mcp", "ui", "completions",
    ])
    func helpMatchesGoldenText(_ subcommand: String) throws {
        let args = subcommand.isEmpty ? ["--help"] : [subcommand, "--help"]
        let result = try Binary.run(args)
        #expect(result.status == 0)
        let golden =
            "\(Binary.repositoryRoot)/Tests/CLITests/golden/help-\(subcommand.isEmpty ? "root" : subcommand).txt"
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] != nil {
            try result.stdout.write(toFile: golden, atomically: true, encoding: .utf8)
        }
        #expect(result.stdout == (try String(contentsOfFile: golden, encoding: .utf8)))
    }

    /// `parse --browser` says on stderr what it is waiting for (starting each browser, then asking it), so seconds
    /// of silence are explained; stdout is the report alone.
    @Test func parseBrowserSaysWhatItIsWaitingFor() throws {
        let result = try Binary.run(["parse", "--browser", "chromium", "--url", "https://a.test/", "a=b"])
        #expect(result.status == 0, "\(result.stderr)")
        let said = result.stderr.split(separator: "\n")
        #expect(said.first == "parse: starting Chromium (headless, a fresh profile)…", "\(result.stderr)")
        #expect(said.contains { $0.hasPrefix("parse: Chromium ready in ") }, "\(result.stderr)")
        #expect(said.contains("parse: asking Chromium what it stores from https://a.test/…"), "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == 1 && result.stdout.hasPrefix("{\"name\":\"a\""))
    }

    /// `parse --browser` says why it cannot ask: no such engine, an engine not installed, a URL a browser would connect to.
    @Test(arguments: [
        (["--browser", "netscape"], [String: String](), Int32(2), "one of chromium, firefox, webkit"),
        (["--browser", "chromium,"], [:], 2, "one of chromium, firefox, webkit"),
        // A browser that is not there: exit 2, naming what to install or the variable that is wrong.
        (
            ["--browser", "chromium"], ["COOKIE_PROXY_CHROMIUM": "/nonexistent/chromium"], 2,
            "is not an executable file"
        ),
        (
            ["--browser", "webkit"], ["COOKIE_PROXY_MINIBROWSER": "/nonexistent/MiniBrowser"], 2,
            "is not an executable file"
        ),
        (["--browser", "chromium", "--url", "https://192.0.2.1/"], [:], 2, "host name, localhost, 127.0.0.1 or [::1]"),
        (
            ["--browser", "chromium", "--url", "http://[2001:db8::1]/"], [:], 2,
            "host name, localhost, 127.0.0.1 or [::1]"
        ),
    ])
    func parseBrowserRefusesWhatItCannotAsk(_ args: [String], _ env: [String: String], _ status: Int32, _ text: String)
        throws
    {
        let result = try TestSupport.run(Binary.path, ["parse"] + args + ["a=b"], environment: env)
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.contains(text), "\(result.stderr)")
    }

    /// `COOKIE_PROXY_POLLER` names a poller this system has, or `run` refuses to start and says which it has.
    @Test(arguments: [
        ("bogus", "COOKIE_PROXY_POLLER=bogus: say epoll, kqueue or poll"),
        (
            Self.nativeIsEpoll ? "kqueue" : "epoll",
            "this system has \(Self.nativeIsEpoll ? "epoll" : "kqueue") and poll"
        ),
    ])
    func runRefusesAPollerThisSystemLacks(_ value: String, _ message: String) throws {
        let result = try TestSupport.run(
            Binary.path, ["run", "--listen", "127.0.0.1:0", "--log", "none"],
            environment: ["COOKIE_PROXY_POLLER": value], timeout: 30)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    #if os(Linux)
        static let nativeIsEpoll = true
    #else
        static let nativeIsEpoll = false
    #endif

    /// `--psl FILE` replaces the list: with `example.com` listed as a public suffix, a cookie for it is refused.
    @Test func aListGivenWithPslIsTheOneUsedAndAnUnreadableOneIsAnError() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("psl-\(getpid()).dat").path
        try "// test list\ncom\nexample.com\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let cookie = "a=1; Domain=example.com"
        let usual = try Binary.run(["parse", "--url", "https://www.example.com/", cookie])
        #expect(usual.stdout.contains("\"rejected\":null"), "\(usual.stdout)")
        let listed = try Binary.run(["parse", "--psl", file, "--url", "https://www.example.com/", cookie])
        #expect(listed.stdout.contains("public suffix"), "\(listed.stdout)")
        let missing = try Binary.run(["parse", "--psl", file + ".missing", "--url", "https://x.test/", "a=1"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("error: --psl: cannot read the Public Suffix List at \(file).missing"))
    }

    @Test func parsePrintsOneJSONObjectPerCookieWithTheDocumentedKeys() throws {
        let result = try Binary.run([
            "parse", "--url", "https://bin.example.com/login",
            "Set-Cookie: Bin-Auth-Token=abc; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly",
            "x=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT; SameSite=None",
        ])
        #expect(result.status == 0)
        #expect(
            result.stdout == """
                {"name":"Bin-Auth-Token","value":"abc","hostOnly":false,"domain":"bin.example.com","path":"/","expires":null,"maxAge":604800,"secure":false,"httpOnly":true,"partitioned":false,"sameSite":"Default","attributes":[{"name":"Path","value":"/"},{"name":"Domain","value":"bin.example.com"},{"name":"Max-Age","value":"604800"},{"name":"HttpOnly","value":null}],"rejected":null,"findings":[],"engines":null}
                {"name":"x","value":"1","hostOnly":true,"domain":null,"path":"/","expires":"2021-06-09T10:18:14Z","maxAge":null,"secure":false,"httpOnly":false,"partitioned":false,"sameSite":"None","attributes":[{"name":"Expires","value":"Wed, 09 Jun 2021 10:18:14 GMT"},{"name":"SameSite","value":"None"}],"rejected":"SameSite=None requires Secure (§5.7 step 19)","findings":["samesite-none-insecure","already-expired","webkit-keeps-samesite-none-insecure"],"engines":"rejects: Chromium, Firefox, WebKit"}

                """)
    }

    @Test(arguments: [
        ("", "empty name and value"), ("a=b\u{7}", "control character 0x07"), (";;;", "empty name and value"),
        ("x; Domain=evil.com", "does not domain-match"),
    ])
    func parseReportsInputThatIsNotACookieWithoutCrashing(_ input: String, _ reason: String) throws {
        let result = try Binary.run(["parse", "--url", "https://example.com/", "--", input])
        #expect(result.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let rejected = try #require(object?["rejected"] as? String)
        #expect(rejected.contains(reason))
    }

    @Test func parseReadsStandardInputLineByLine() throws {
        let result = try Binary.run(["parse"], stdin: "Set-Cookie: a=1\nb=2; Secure\n")
        #expect(result.stdout.split(separator: "\n").count == 2)
        #expect(result.stdout.contains("\"name\":\"b\""))
    }

    /// `--version` alone and on every subcommand (whatever else is given) prints the one version line and exits 0.
    @Test(arguments: [
        [], ["run", "--listen", "nonsense"], ["check"], ["try"], ["audit"], ["ca"], ["parse"], ["conformance"], ["mcp"],
    ])
    func versionIsAnsweredByEveryCommand(_ command: [String]) throws {
        let result = try Binary.run(command + ["--version"])
        #expect(result.status == 0, "\(result.stderr)")
        // The release (semantic versioning) and the commit the binary was built from: this checkout's HEAD.
        let head = try run("/usr/bin/git", ["-C", Binary.repositoryRoot, "rev-parse", "HEAD"]).text
        #expect(result.stdout == "cookie-proxy 0.8.0 (commit \(head.prefix(12)))\n", "\(result.stdout)")
        #expect(result.stderr.isEmpty)
    }

    @Test(arguments: [
        (["parse", "--formt", "json"], "unknown option '--formt'; did you mean '--format'?"),
        (["parse", "--format", "yaml"], "--format must be json or text"),
        (["parse", "--url", "not a url"], "is not an absolute URL"),
        (["prase"], "unknown subcommand 'prase'; did you mean 'parse'?"),
        (["conformance", "--quite"], "unknown option '--quite'; did you mean '--quiet'?"),
        (
            ["audit", "https://a.test/", "--browser", "chromium", "--fail-on", "rejects, reject"],
            "--fail-on 'reject': the kinds are undeclared, violations, rejects, blocked, set-before-consent"
        ),
        // What means something only with --browser is refused without it, naming --browser (not ignored).
        (["audit", "https://a.test/", "--out", "/tmp/x"], "--out means something only with --browser"),
        (["audit", "https://a.test/", "--policy", "p.policy"], "--policy means something only with --browser"),
        (["audit", "https://a.test/", "--upstream-ca", "ca.pem"], "--upstream-ca means something only with --browser"),
        (["audit", "--har", "x.har", "--fail-on", "rejects"], "--fail-on means something only with --browser"),
    ])
    func usageErrorsSayWhatToDoAndExitWith2(_ args: [String], _ message: String) throws {
        let result = try Binary.run(args)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message))
        #expect(result.stderr.contains("--help"))
    }

    /// A policy file that cannot be read stops the site audit before any browser starts, naming the file.
    @Test func theSiteAuditNamesAPolicyFileItCannotRead() throws {
        let result = try Binary.run(
            ["audit", "https://a.test/", "--browser", "chromium", "--policy", "/nonexistent/site.policy"])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("error: cannot read /nonexistent/site.policy: "), "\(result.stderr)")
    }

    /// A corpus that cannot be read is named with its errno's text, not Foundation's error domain and code.
    @Test func conformanceNamesAFileItCannotRead() throws {
        let result = try Binary.run(["conformance", "/nonexistent/cases.json"])
        #expect(result.status == 2)
        #expect(
            result.stderr == "error: cannot read /nonexistent/cases.json: No such file or directory\n",
            "\(result.stderr)")
    }

    /// Named or found by default (the checkout the binary was built in), the repository's own corpora.
    @Test(arguments: [true, false])
    func conformanceCommandRunsTheRepositorysCorpora(named: Bool) throws {
        let folder = Binary.repositoryRoot + "/conformance"
        let files = named ? ["\(folder)/http-state.json", "\(folder)/wpt.json"] : []
        let result = try Binary.run(["conformance", "--quiet"] + files)
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("http-state: 218/218 counted cases pass"))
        #expect(result.stdout.hasSuffix("1007 passed, 0 failed (1015 cases, 8 informative not counted)\n"))
        // The informative cases are said to be disputed, not shown as a score that reads as a failure.
        #expect(!result.stdout.contains(" match"), "\(result.stdout)")
        #expect(result.stdout.contains("wpt: 789/789 counted cases pass; 4 informative (disputed expectations"))
    }
}

@Suite struct RulesCLITests {
    static let rules = Binary.repositoryRoot + "/rules"

    @Test func checkDescribesEachRuleInPlainWords() throws {
        let result = try Binary.run(["check", Self.rules + "/subdomain-login.rules"])
        #expect(result.status == 0)
        #expect(
            result.stdout == """
                \(Self.rules)/subdomain-login.rules:6 "the login cookie is Secure on https"
                  when  the host is bin.example.com or a subdomain of bin.example.com
                  and   the request is https
                  and   the cookie is named Bin-Auth-Token
                  then  turn Secure on
                \(Self.rules)/subdomain-login.rules:13 "share login with subdomains"
                  when  the host is bin.example.com or a subdomain of bin.example.com
                  and   the cookie is named Bin-Auth-Token
                  then  set Domain to .bin.example.com
                        turn HttpOnly on
                        set SameSite to Lax
                2 rules OK in 1 file

                """)
    }

    /// `try --route` tests an `upstream` condition as `run --route` would meet it: the route the URL takes decides;
    /// a URL no route takes is refused naming the routes. (URL, what the rule does, refused with)
    @Test(
        arguments: [
            ("https://app.localhost/api/me", "after:   a=1; Secure", nil),
            ("https://app.localhost/me", "rules:   (none matched)", nil),
            ("https://other.localhost/me", nil, "no --route takes /me on other.localhost"),
        ] as [(String, String?, String?)])
    func tryTestsAnUpstreamConditionThroughItsRoutes(_ url: String, _ said: String?, _ refusal: String?) throws {
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("upstream-\(UUID().uuidString).rules")
            .path
        try "rule \"api\" {\n    upstream api.staging.example\n    secure\n}\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let routes = [
            "--route", "app.localhost/=http://localhost:5173", "--route",
            "app.localhost/api/=https://api.staging.example/",
        ]
        let result = try Binary.run(["try", "--rules", rules, "--url", url] + routes + ["a=1"])
        if let said {
            #expect(result.status == 0 && result.stdout.contains(said), "\(result.stdout)")
        } else {
            #expect(result.status == 2 && result.stderr.contains(refusal!), "\(result.stderr)")
        }
    }

    @Test func checkOfTheWholeFolderPasses() throws {
        let result = try Binary.run(["check", Self.rules])
        #expect(result.status == 0)
        #expect(result.stdout.hasSuffix("9 rules OK in 4 files\n"))
    }

    @Test func checkReportsAnInvalidFileWithACaretAndExits2() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(getpid()).rules").path
        try "rule \"x\" {\n    secure\n    samsite lax\n}\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try Binary.run(["check", file])
        #expect(result.status == 2)
        #expect(
            result.stderr
                == "\(file):3:5: error: unknown directive 'samsite'; did you mean 'samesite'?\n        samsite lax\n        ^\n"
        )
    }

    @Test func tryShowsBeforeAfterRulesAndFindings() throws {
        let result = try Binary.run([
            "try", "--rules", Self.rules + "/subdomain-login.rules", "--url", "https://bin.example.com/login",
            "--format", "json", "Bin-Auth-Token=abc; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly",
            "other=1",
        ])
        #expect(result.status == 0)
        #expect(
            result.stdout == """
                {"before":"Bin-Auth-Token=abc; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly","after":"Bin-Auth-Token=abc; Path=/; Domain=.bin.example.com; Max-Age=604800; HttpOnly; Secure; SameSite=Lax","rules":["the login cookie is Secure on https","share login with subdomains"],"changes":[{"op":"set","attribute":"Domain","from":"bin.example.com","to":".bin.example.com"},{"op":"add","attribute":"Secure","from":null,"to":""},{"op":"add","attribute":"SameSite","from":null,"to":"Lax"}],"findings":["domain-leading-dot"],"engines":null,"notes":[]}
                {"before":"other=1","after":"other=1","rules":[],"changes":[],"findings":[],"engines":null,"notes":[]}

                """)
    }

    /// A fleet's and a comparison's usage mistakes are refused before any browser starts, exit 2, saying what to do
    /// (`LIST` is a file with a bad third line).
    @Test(arguments: [
        (
            ["audit", "--browser", "chromium", "--urls", "LIST"],
            "LIST:3: 'ftp://c.example/' is not an http:// or https:// URL with a host"
        ),
        (
            ["audit", "--browser", "chromium", "--urls", "LIST", "https://a.example/"],
            "give the sites either in --urls FILE or as one URL"
        ),
        (
            ["audit", "--browser", "chromium", "--shard", "1/2", "https://a.example/"],
            "--shard splits a --urls list: give --urls FILE"
        ),
        (
            ["audit", "--browser", "chromium", "--urls", "LIST", "--parallel", "0"],
            "--parallel must be a whole number from 1 to 64"
        ),
        (
            ["audit", "--browser", "chromium", "--fail-on", "new", "https://a.example/"],
            "--fail-on new compares with an earlier run: give --baseline PATH"
        ),
        (
            ["audit", "--browser", "chromium", "--baseline", "/nonexistent/run", "https://a.example/"],
            "--baseline: /nonexistent/run: no such file or folder"
        ),
        (["audit", "--browser", "all", "--urls", "LIST"], "--urls audits with one engine"),
        (["audit", "--urls", "LIST"], "--urls means something only with --browser"),
        (["report", "diff", "/nonexistent/a"], "give two folders: cookie-proxy report diff OLD NEW"),
        (["report", "diff", "/nonexistent/a", "/nonexistent/b"], "error: /nonexistent/a: no such file or folder"),
        (["report", "merge", "/nonexistent/a"], "give the merged fleet's folder: --out MERGED"),
        (["report", "merge", "/nonexistent/a", "--out", "/nonexistent/m"], "cannot read /nonexistent/a/fleet.json"),
        (["report", "sum"], "unknown action 'sum'; the actions are: diff, merge"),
    ])
    func aFleetOrComparisonMistakeIsRefusedWithWhatToDo(arguments: [String], says: String) throws {
        let list = NSTemporaryDirectory() + "cp-fleet-\(UUID().uuidString.prefix(8)).txt"
        try "https://a.example/\n# a comment\nftp://c.example/\n".write(toFile: list, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: list) }
        let result = try Binary.run(arguments.map { $0 == "LIST" ? list : $0 })
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(says.replacingOccurrences(of: "LIST", with: list)), "\(result.stderr)")
    }

    /// `--shard K/N` takes each site in exactly one of the N parts, and `JOB_COMPLETION_INDEX/N` is part index+1.
    /// (The part that holds the one site audits a closed loopback port: the browser reaches nothing, exit 2.)
    @Test func eachSiteIsInExactlyOneShardAndKubernetesIndexIsTheSameShard() throws {
        let list = NSTemporaryDirectory() + "cp-fleet-\(UUID().uuidString.prefix(8)).txt"
        try "http://127.0.0.1:9/\n".write(toFile: list, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: list) }
        var holding: [Int] = []
        for k in 1...4 {
            let args = ["audit", "--browser", "chromium", "--consent", "none", "--pages", "1", "--wait", "2"]
            let byNumber = try TestSupport.run(Binary.path, args + ["--urls", list, "--shard", "\(k)/4"])
            let byIndex = try TestSupport.run(
                Binary.path, args + ["--urls", list, "--shard", "JOB_COMPLETION_INDEX/4"],
                environment: ["JOB_COMPLETION_INDEX": "\(k - 1)"])
            for result in [byNumber, byIndex] {
                // Without --parallel, how many sites at once and why.
                #expect(result.stderr.contains(" site(s) at once: "), "\(result.stderr)")
                let line = result.stderr.split(separator: "\n").first { $0.hasPrefix("shard ") } ?? ""
                #expect(line.hasPrefix("shard \(k)/4: "), "\(result.stderr)")
                if line.hasPrefix("shard \(k)/4: 1 of the 1 site(s)") {
                    #expect(result.status == 2, "\(result.stderr)")
                } else {
                    #expect(
                        line.hasPrefix("shard \(k)/4: 0 of the 1 site(s)") && result.status == 0, "\(result.stderr)")
                }
            }
            if byNumber.stderr.contains("1 of the 1 site(s)") { holding.append(k) }
            #expect(byNumber.status == byIndex.status)
        }
        #expect(holding.count == 1)
    }
}
