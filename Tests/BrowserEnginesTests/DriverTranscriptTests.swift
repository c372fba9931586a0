import CookieKit
import Foundation
import SiteAudit
import Testing

@testable import BrowserEngines

/// Each driver replayed from a transcript of its real browser (`Transcripts/ENGINE.transcript`, recorded by
/// ``TranscriptRecordingTests`` — `scripts/record-browser-transcripts.sh`): the same scenario as the recording — four
/// lines asked as `parse --browser` asks them, then a page read as `audit --browser` reads one — must send what the
/// driver sent to the browser, byte for byte, and read from the browser's answers what the table says. No browser
/// runs.
@Suite struct DriverTranscriptTests {
    /// The lines asked, each where it is served.
    static let lines: [(line: String, url: String)] = [
        ("sid=abc123; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax", "https://shop.example/"),
        ("pref=dark; Domain=shop.example; Path=/", "http://shop.example/settings"),
        ("__Host-bad=1; Domain=shop.example; Path=/; Secure", "https://shop.example/"),
        ("chip=1; Secure; Path=/; SameSite=None; Partitioned", "https://shop.example/"),
    ]
    /// The page read as the audit reads one (quiet network), after the lines.
    static let page = "https://shop.example/page"

    /// What a driver gave in the scenario.
    struct Observed {
        var stored: [BrowserCookie?] = []
        /// The lines it said it refused after each asked line.
        var refused: [[RefusedLine]] = []
        var load = PageLoad(status: nil, problem: nil)
        var text: String?
        var store: [BrowserCookie] = []
        var screenshot: Data?
    }

    /// The scenario, on a live browser (recording) or a replay.
    static func scenario(_ probe: LineProbe) throws(BrowserFailure) -> Observed {
        var seen = Observed()
        for (line, url) in lines {
            seen.stored.append(try probe.check(line, url: RequestURL(url)!, readAt: nil))
            seen.refused.append(probe.driver.takeRefused())
        }
        seen.load = try probe.driver.open(page, wait: 10, until: .quiet)
        seen.text = try probe.driver.evaluate("document.body.textContent")
        try probe.driver.settle(quiet: 0.5, wait: 2)
        seen.store = try probe.driver.cookies()
        seen.screenshot = try probe.driver.screenshot()
        probe.driver.stop()
        return seen
    }

    static func transcript(_ browser: Browser) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Transcripts")
            .appendingPathComponent("\(browser.rawValue).transcript").path
    }

    /// A driver over the recorded transcript, started as the recording's was.
    static func replaying(_ browser: Browser, _ channel: TranscriptChannel, first: String) throws(BrowserFailure)
        -> any BrowserDriver
    {
        switch browser {
        case .chromium: return try ChromiumDriver(channel: channel, pinned: false)
        case .firefox: return try FirefoxDriver(channel: channel, acceptsAnyCertificate: true)
        case .webkit:
            // The MiniBrowser's path and the line server's port, as the recording's machine had them.
            struct New: Decodable {
                struct Capabilities: Decodable {
                    struct Match: Decodable {
                        var options: WebKitDriver.BrowserOptions
                        enum CodingKeys: String, CodingKey { case options = "webkitgtk:browserOptions" }
                    }
                    var alwaysMatch: Match
                }
                var capabilities: Capabilities
            }
            let body = first.split(separator: " ", maxSplits: 4).last.map(String.init) ?? ""
            guard let new = decodeJSON(New.self, body) else { throw BrowserFailure("no new session at the start") }
            return try WebKitDriver(channel: channel, browserOptions: new.capabilities.alwaysMatch.options)
        }
    }

    /// What each browser stores for each line (nil: nothing), as its recording shows: the draft's fields, and the
    /// partition.
    struct Stored: Equatable, CustomStringConvertible {
        var name, value, domain, path, sameSite: String
        var hostOnly, secure, httpOnly, persistent: Bool
        var partition: String?
        init(_ c: BrowserCookie) {
            (name, value, domain, path, sameSite) = (c.name, c.value, c.bareDomain, c.path, c.draftSameSite)
            (hostOnly, secure, httpOnly, persistent, partition) = (
                c.hostOnly, c.secure, c.httpOnly, c.persistent, c.partitionKey
            )
        }
        init(
            _ name: String, _ value: String, _ domain: String, hostOnly: Bool, path: String = "/",
            secure: Bool = false, httpOnly: Bool = false, sameSite: String = "Default", persistent: Bool = false,
            partition: String? = nil
        ) {
            (self.name, self.value, self.domain, self.path, self.sameSite) = (name, value, domain, path, sameSite)
            (self.hostOnly, self.secure, self.httpOnly, self.persistent, self.partition) = (
                hostOnly, secure, httpOnly, persistent, partition
            )
        }
        var description: String {
            "\(name)=\(value) \(hostOnly ? "host" : "domain") \(domain) \(path) secure:\(secure) httpOnly:\(httpOnly)"
                + " \(sameSite) persistent:\(persistent) partition:\(partition ?? "-")"
        }
    }

    struct Expectation: Sendable, CustomTestStringConvertible {
        var browser: Browser
        var stored: [Stored?]
        /// The reasons the browser gave for refusing the third line (empty: it does not say).
        var refusal: [String]
        /// The document's status as the driver read it (nil: its protocol does not say).
        var status: Int?
        var testDescription: String { browser.rawValue }
    }

    static let sid = Stored(
        "sid", "abc123", "shop.example", hostOnly: true, httpOnly: true, sameSite: "Lax", persistent: true)
    static let pref = Stored("pref", "dark", "shop.example", hostOnly: false)
    static let expectations: [Expectation] = [
        Expectation(
            browser: .chromium,
            stored: [
                sid, pref, nil,
                Stored(
                    "chip", "1", "shop.example", hostOnly: true, secure: true, sameSite: "None",
                    partition: "https://shop.example"),
            ], refusal: ["InvalidPrefix"], status: 200),
        Expectation(
            browser: .firefox,
            stored: [
                sid, pref, nil,
                Stored("chip", "1", "shop.example", hostOnly: true, secure: true, sameSite: "None"),
            ], refusal: [], status: 200),
        // WebKitGTK's libsoup does not check the __Host- prefix (RFC 6265bis §4.1.3.2): it keeps the domain cookie.
        Expectation(
            browser: .webkit,
            stored: [
                sid, pref, Stored("__Host-bad", "1", "shop.example", hostOnly: false, secure: true),
                Stored("chip", "1", "shop.example", hostOnly: true, secure: true, sameSite: "None"),
            ], refusal: [], status: nil),
    ]

    @Test(arguments: expectations)
    func aReplayedDriverReadsWhatItsBrowserSaid(_ expected: Expectation) throws {
        let channel = try TranscriptChannel(contentsOf: Self.transcript(expected.browser))
        let first = try #require(
            (try? String(contentsOfFile: Self.transcript(expected.browser), encoding: .utf8))?.split(separator: "\n")
                .first.map(String.init))
        let driver = try Self.replaying(expected.browser, channel, first: first)
        let seen = try Self.scenario(LineProbe(driver: driver, server: nil))
        #expect(seen.stored.map { $0.map(Stored.init) } == expected.stored)
        Self.check(seen, expected)
        #expect(channel.finished, "the replay left recorded entries untaken")
    }

    /// What the scenario must show, recorded or replayed.
    static func check(_ seen: Observed, _ expected: Expectation) {
        #expect(seen.refused[2].map(\.reasons) == (expected.refusal.isEmpty ? [] : [expected.refusal]))
        if !expected.refusal.isEmpty {
            #expect(seen.refused[2].first?.line == lines[2].line)
            #expect(seen.refused[2].first?.url == lines[2].url)
        }
        #expect(seen.refused.enumerated().allSatisfy { $0.offset == 2 || $0.element.isEmpty })
        #expect(seen.load == PageLoad(status: expected.status, problem: nil))
        #expect(seen.text == "ok")
        // The store after the lines: the last line's cookie (each line's jar was emptied before it).
        #expect(seen.store.map(\.name) == ["chip"])
        #expect(seen.screenshot.map { Array($0.prefix(8)) } == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    }
}

/// Records the transcripts the replays read, from the real browsers: run with COOKIE_PROXY_RECORD_TRANSCRIPTS=1
/// (`scripts/record-browser-transcripts.sh`), which also checks each browser against the same table.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["COOKIE_PROXY_RECORD_TRANSCRIPTS"] == "1"))
struct TranscriptRecordingTests {
    @Test(arguments: DriverTranscriptTests.expectations)
    func recordTheRealBrowser(_ expected: DriverTranscriptTests.Expectation) throws {
        let folder = NSTemporaryDirectory() + "transcripts-\(getpid())-\(expected.browser.rawValue)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var environment = ProcessInfo.processInfo.environment
        environment["COOKIE_PROXY_BROWSER_TRANSCRIPTS"] = folder
        let seen = try DriverTranscriptTests.scenario(LineProbe(expected.browser, environment: environment))
        #expect(seen.stored.map { $0.map(DriverTranscriptTests.Stored.init) } == expected.stored)
        DriverTranscriptTests.check(seen, expected)
        let written = try FileManager.default.contentsOfDirectory(atPath: folder)
        try #require(written.count == 1)
        let target = DriverTranscriptTests.transcript(expected.browser)
        try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.copyItem(atPath: folder + "/" + written[0], toPath: target)
    }
}
