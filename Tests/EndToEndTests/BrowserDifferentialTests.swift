import Foundation
import Testing
import TestSupport

/// bench/browser-diff.py in the suite: a real Chromium beside `cookie-proxy parse` over both conformance corpora
/// and our own lines; a disagreement without a `chromium-…` finding fails. The comparison is tested first.
@Suite(.serialized) struct BrowserDifferentialTests {
    static let chromium = "/usr/lib/chromium/chromium"
    static let script = Paths.root + "/bench/browser-diff.py"

    @Test func theComparisonReportsAWrongValueForEveryField() throws {
        let result = try run(Paths.which("python3"), [Self.script, "--self-test"])
        #expect(result.status == 0, "\(result.text) \(result.stderr)")
        #expect(result.text.contains("reports each of 9 fields"))
    }

    @Test func everyDisagreementWithChromiumCarriesAFinding() throws {
        try Self.differential(
            engine: "chromium", browser: Self.chromium, python: Paths.which("python3"), agreementLine: "Chromium")
    }

    /// The same over WebDriver BiDi with Debian's Firefox ESR (the test's Python has `websockets`): a disagreement
    /// without a `firefox-…` finding fails.
    @Test func everyDisagreementWithFirefoxCarriesAFinding() throws {
        try Self.differential(
            engine: "firefox", browser: "/usr/bin/firefox-esr", python: HTTP2EndToEndTests.python,
            agreementLine: "Firefox")
    }

    /// The same over classic WebDriver with Debian's WebKitGTK (WebKitWebDriver starting the MiniBrowser under
    /// xvfb-run): a disagreement without a `webkit-…` finding fails (a line whose path no document can have is
    /// counted as unreadable over WebDriver, not compared).
    @Test func everyDisagreementWithWebKitCarriesAFinding() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/xvfb-run") else {
            Issue.record("xvfb-run is not installed (scripts/setup.sh --tests installs xvfb)")
            return
        }
        try Self.differential(
            engine: "webkit", browser: "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser",
            python: Paths.which("python3"), agreementLine: "WebKit", wrapper: ["/usr/bin/xvfb-run", "-a"])
    }

    /// `parse --browser` with each engine and with all three: a verdict per engine, in the draft's fields, and in
    /// text where they disagree (`Max-Age=+10`: Chromium and WebKit keep a persistent cookie, Firefox a session one
    /// as the draft).
    @Test(arguments: ["chromium", "firefox", "webkit", "all"])
    func parseAsksEachEngine(_ engine: String) throws {
        let line = "a=b; Max-Age=+10"
        let url = "https://app.example.test/x/y"
        let result = try run(Paths.binary, ["parse", "--browser", engine, "--url", url, line], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any], "\(result.text)")
        let expected = ["chromium": ["persistent"], "firefox": [String](), "webkit": ["persistent"]]
        for name in engine == "all" ? ["chromium", "firefox", "webkit"] : [engine] {
            let verdict = try #require(object[name] as? [String: Any], "\(name): \(result.text)")
            #expect(verdict["differences"] as? [String] == expected[name], "\(name): \(result.text)")
            #expect((verdict["stored"] as? [String: Any])?["path"] as? String == "/x", "\(name): \(result.text)")
        }
        if engine == "all" {
            let text = try run(Paths.binary, ["parse", "--format", "text", "--browser", "all", "--url", url, line])
            #expect(
                text.text.contains(
                    "asked     DISAGREE: Chromium, WebKit store it (persistent); Firefox stores it (session)"),
                "\(text.text)")
        }
    }

    /// An IP Domain, asked of the three engines at loopback over IPv4 and IPv6 (one line per run: WebKit's jar cannot
    /// be emptied for an IPv6 host): written as the host is, Chromium and Firefox make the cookie host-only, and
    /// WebKit too for IPv4 but refuses every IPv6 Domain; written another way, all three refuse it (they compare the
    /// text). Each case is the lint's finding, per engine.
    @Test(arguments: [
        ("http://[::1]/", "a=b; Domain=[::1]", ["hostOnly"], ["hostOnly"], ["stored"]),
        ("http://[::1]/", "a=b; Domain=[0:0::1]", ["stored"], ["stored"], ["stored"]),
        ("http://[::1]/", "a=b; Domain=[0:0:0:0:0:0:0:1]", ["stored"], ["stored"], ["stored"]),
        ("http://127.0.0.1/", "a=b; Domain=127.0.0.1", ["hostOnly"], ["hostOnly"], ["hostOnly"]),
        ("http://127.0.0.1/", "a=b; Domain=127.1", ["stored"], ["stored"], ["stored"]),
    ])
    func anIPDomainIsAskedOfEveryEngine(
        _ url: String, _ line: String, _ chromium: [String], _ firefox: [String], _ webkit: [String]
    ) throws {
        let result = try run(Paths.binary, ["parse", "--browser", "all", "--url", url, line], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any], "\(result.text)")
        let findings = object["findings"] as? [String] ?? []
        for (engine, expected) in [("chromium", chromium), ("firefox", firefox), ("webkit", webkit)] {
            let verdict = try #require(object[engine] as? [String: Any], "\(engine): \(result.text)")
            #expect(verdict["differences"] as? [String] == expected, "\(engine): \(result.text)")
            // The lint names what this engine does.
            let code =
                expected != ["stored"]
                ? "\(engine)-ip-domain-host-only"
                : engine == "webkit" && url.contains("[")
                    ? "webkit-drops-ipv6-domain"
                    : "\(engine)-drops-ip-domain-written-otherwise"
            #expect(findings.contains(code), "\(engine): \(findings)")
        }
    }

    /// A browser that is not there is an error naming the package, exit 2 (not a silent skip).
    @Test func aMissingEngineExitsTwoNamingThePackage() throws {
        let result = try run(
            Paths.binary, ["parse", "--browser", "firefox", "a=b"],
            environment: ["COOKIE_PROXY_FIREFOX": "/nonexistent/firefox"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("COOKIE_PROXY_FIREFOX=/nonexistent/firefox is not an executable file"))
        let unknown = try run(Paths.binary, ["parse", "--browser", "netscape", "a=b"])
        #expect(unknown.status == 2 && unknown.stderr.contains("one of chromium, firefox, webkit"), "\(unknown.stderr)")
    }

    /// bench/browser-diff.py with one engine over both corpora and our lines: no disagreement without a finding of
    /// that engine's (the agreement figure itself is in docs/browser-differences.md).
    static func differential(
        engine: String, browser: String, python: String, agreementLine: String, wrapper: [String] = []
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: browser) else {
            Issue.record("\(browser) is not installed (scripts/setup.sh --tests installs it)")
            return
        }
        let conformance = Paths.root + "/conformance"
        let command = wrapper + [python]
        let result = try run(
            command[0],
            Array(command.dropFirst()) + [
                Self.script, "--engine", engine, "--\(engine)", browser, "--binary", Paths.binary, "--cases",
                Paths.root + "/bench/browser-diff-cases.tsv", conformance + "/http-state.json",
                conformance + "/wpt.json",
            ], timeout: 900)
        #expect(result.status == 0, "\(result.text) \(result.stderr)")
        #expect(result.text.contains("0 unexplained"), "\(result.text)")
        let line = result.text.split(separator: "\n").first { $0.hasPrefix("agreement with \(agreementLine):") }
        #expect(line != nil, "\(result.text)")
    }

    /// `parse --browser chromium` asks the machine's Chromium: its verdict beside the draft's, field by field.
    @Test(arguments: [
        ("https://app.example.test/", "sid=1; Domain=example.test; Secure; HttpOnly; SameSite=Lax", [String]()),
        // Chromium honours the plus sign (docs/browser-differences.md): a persistent cookie, the draft a session one.
        ("https://app.example.test/", "a=b; Max-Age=+10", ["persistent"]),
        // Neither stores a cookie for another site.
        ("https://app.example.test/", "x=1; Domain=other.test", []),
        // The host is matched as the Host field reads it: case and a trailing root dot do not matter.
        ("https://App.Example.test./", "d=1; Domain=example.test", []),
        // A loopback URL reaches the local server through its port.
        ("http://127.0.0.1:9/x/y", "p=1; Path=/x", []),
    ])
    func parseShowsWhatThisMachinesChromiumStored(_ url: String, _ line: String, _ differences: [String]) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.chromium) else {
            Issue.record("Chromium is not installed at \(Self.chromium) (scripts/setup.sh installs it)")
            return
        }
        let result = try run(Paths.binary, ["parse", "--browser", "chromium", "--url", url, line])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any], "\(result.text)")
        let chromium = try #require(object["chromium"] as? [String: Any], "\(result.text)")
        #expect(chromium["differences"] as? [String] == differences, "\(result.text)")
        #expect(chromium["agrees"] as? Bool == differences.isEmpty, "\(result.text)")
        // What Chromium stored is reported in the draft's own fields (or null when it stored nothing).
        let stored = chromium["stored"] as? [String: Any]
        #expect((stored == nil) == (object["rejected"] is String), "\(result.text)")
        if let stored { #expect(stored["name"] as? String == object["name"] as? String) }
    }
}
