import Foundation
import TestSupport
import Testing

/// A hostile site's cookies and Location (Fixtures/upstream.py's `/hostile`: ESC sequences that clear the screen and
/// set the window title, BEL, BS, DEL, C1 as a raw byte and in UTF-8, a bidi override) through every text output a
/// person reads: none of those bytes reaches the terminal, each is shown escaped (`\x1b`, `\u{9b}`, `\x9b`).
@Suite(.serialized) struct HostileSiteEndToEndTests {
    /// What a terminal would act on: C0 controls but TAB and LF, DEL, C1 (raw and as UTF-8), the bidi and
    /// line-breaking controls.
    static func actionable(_ bytes: [UInt8]) -> [String] {
        var found: [String] = []
        for (i, b) in bytes.enumerated() {
            if b < 0x20 && b != 0x09 && b != 0x0A || b == 0x7F {
                found.append("byte 0x\(String(b, radix: 16)) at \(i)")
            }
            if b >= 0x80 && b <= 0x9F && (i == 0 || bytes[i - 1] != 0xC2) && !Self.continuation(bytes, i) {
                found.append("raw C1 0x\(String(b, radix: 16)) at \(i)")
            }
            if b == 0xC2 && i + 1 < bytes.count && (0x80...0x9F).contains(bytes[i + 1]) {
                found.append("U+00\(String(bytes[i + 1], radix: 16)) at \(i)")
            }
            if b == 0xE2 && i + 2 < bytes.count && bytes[i + 1] == 0x80 && (0xA8...0xAE).contains(bytes[i + 2]) {
                found.append("U+20\(String(bytes[i + 2], radix: 16)) at \(i)")
            }
            if b == 0xE2 && i + 2 < bytes.count && bytes[i + 1] == 0x81 && (0xA6...0xA9).contains(bytes[i + 2]) {
                found.append("U+20\(String(bytes[i + 2], radix: 16)) at \(i)")
            }
        }
        return found
    }

    /// Whether `bytes[i]` continues a multi-byte UTF-8 sequence (so 0x80–0x9F there is not a C1 byte).
    static func continuation(_ bytes: [UInt8], _ i: Int) -> Bool {
        var j = i - 1
        while j >= 0 && bytes[j] & 0xC0 == 0x80 && i - j < 4 { j -= 1 }
        guard j >= 0, bytes[j] >= 0xC2 else { return false }
        let width = bytes[j] >= 0xF0 ? 4 : bytes[j] >= 0xE0 ? 3 : 2
        return i - j < width && bytes[j] != 0xC2
    }

    @Test func theCheckOfThisSuiteFindsWhatATerminalWouldObey() {
        #expect(Self.actionable(Array("a\u{1B}[2J".utf8)).count == 1)
        #expect(Self.actionable([0x61, 0x9B]).count == 1)
        #expect(Self.actionable(Array("\u{9B}\u{202E}\u{2066}".utf8)).count == 3)
        #expect(Self.actionable(Array("é → 日本 🍪\ttab\n".utf8)).isEmpty)
    }

    /// `audit URL`'s text (stdout) and its error with the Location (stderr).
    @Test func auditTextShowsTheSitesControlsEscaped() throws {
        let upstream = try Upstream()
        let result = try run(Paths.binary, ["audit", "\(upstream.base)/hostile-redirect"])
        let out = Array(result.stdout)
        #expect(Self.actionable(out).isEmpty, "\(Self.actionable(out)) in \(result.text)")
        #expect(Self.actionable(Array(result.stderr.utf8)).isEmpty, "\(result.stderr)")
        #expect(result.text.contains("Location: /x\\x1b[2J\\x1b]0;owned\\x07"), "\(result.text)")
        #expect(result.text.contains("Set-Cookie: ev\\x1b[2J\\x1b[Hil=1"), "\(result.text)")
        #expect(result.stderr.contains("\\x1b[2J"), "\(result.stderr)")
    }

    /// `audit --har`: names the HAR stores JSON-escaped (`\u001b`, `\n`) are decoded and shown escaped, never as a
    /// control or a line of their own.
    @Test func auditOfAHARShowsEscapedNamesDecodedFromIt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-hostile-har-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let har = #"""
            {"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[{"startedDateTime":"2026-12-07T10:00:00Z","time":1,
            "request":{"method":"GET","url":"https://a.example/\u001b[2J","httpVersion":"HTTP/1.1","headers":[],"cookies":[],"queryString":[],"headersSize":-1,"bodySize":0},
            "response":{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","headers":[{"name":"Set-Cookie","value":"x\u001b]0;owned\u0007=1; SameSite=None"},{"name":"Set-Cookie","value":"y\nforged: line=2"}],
            "cookies":[],"content":{"size":0,"mimeType":"text/html"},"redirectURL":"","headersSize":-1,"bodySize":0},"cache":{},"timings":{"send":0,"wait":1,"receive":0}}]}}
            """#
        try har.write(toFile: dir + "/h.har", atomically: true, encoding: .utf8)
        let result = try run(Paths.binary, ["audit", "--har", dir + "/h.har"])
        #expect(Self.actionable(Array(result.stdout)).isEmpty, "\(result.text)")
        #expect(result.text.contains("x\\x1b]0;owned\\x07=1"), "\(result.text)")
        #expect(!result.text.split(separator: "\n").contains { $0.hasPrefix("forged") }, "\(result.text)")
    }

    /// `parse` and `try` echo their input: what was pasted is shown, not obeyed.
    @Test(arguments: [
        ["parse", "--format", "text", "--url", "https://a.example/", "a\u{1B}[2J=1; Domain=\u{9B}x.example"],
        [
            "try", "--rules", "rules/", "--url", "https://bin.example.com/",
            "Bin-Auth-Token=\u{1B}]0;t\u{07}; Domain=bin.example.com",
        ],
        ["try", "--rules", "rules/", "--url", "https://a.example/", "--request", "Cookie: a\u{202E}=1; _ga=\u{1B}[8m"],
    ])
    func commandsThatEchoInputShowItEscaped(_ arguments: [String]) throws {
        let result = try run(Paths.binary, arguments)
        #expect(Self.actionable(Array(result.stdout)).isEmpty, "\(result.text)")
        #expect(result.text.contains("\\x1b") || result.text.contains("\\u{202e}"), "\(result.text)")
    }

    /// The text log on a real terminal (tmux's pseudo-terminal, read back): the site's ESC sequences are shown as
    /// text, so the screen is not cleared (the banner above stays), the window title is the pane's own, and each
    /// cookie is one line.
    @Test func theTextLogOnATerminalShowsTheSitesControlsAsText() throws {
        let upstream = try Upstream()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-hostile-pty-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A rule that logs every cookie and changes none.
        try "rule \"see all\" {\n    log\n}\n".write(toFile: dir + "/all.rules", atomically: true, encoding: .utf8)
        guard let terminal = try TerminalProxy("--ui off --rules \(dir)/all.rules", home: dir + "/home") else { return }
        let port = terminal.port
        try #require(port > 0)
        _ = try curl(["-s", "-x", "http://127.0.0.1:\(port)", "\(upstream.base)/hostile"])
        usleep(1_500_000)
        let pane = try terminal.pane()
        // The screen was not cleared: the banner is still above the log lines.
        #expect(pane.contains("cookie-proxy listening on "), "\(pane)")
        let lines = pane.split(separator: "\n").map(String.init).filter { $0.contains("GET \(upstream.base)/hostile") }
        #expect(lines.count == 5, "\(pane)")
        #expect(pane.contains("ev\\x1b[2J\\x1b[Hil"), "\(pane)")
        // (The title sequence's `;` ends the name-value pair: that line's cookie is nameless, its value redacted.)
        #expect(pane.contains("c1\\x9b2J"), "\(pane)")
        #expect(pane.contains("bidi\\u{202e}gpj"), "\(pane)")
        let title = try terminal.title()
        #expect(!title.contains("owned"), "\(title)")
    }
}
