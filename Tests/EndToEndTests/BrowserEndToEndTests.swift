import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real headless Chromium loading pages from a local upstream through the proxy.
@Suite(.serialized) struct BrowserEndToEndTests {
    static func chromium() -> String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Loads `url` in a fresh profile through `proxy`; returns the DOM Chromium ends up with. `home`: the HOME it
    /// runs with (and so its NSS database, ~/.pki/nssdb), when not the test runner's.
    static func load(_ url: String, proxy: Proxy, home: String? = nil) throws -> String {
        let browser = try #require(chromium(), "chromium is not installed (scripts/setup.sh installs it)")
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("cp-chromium-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let result = try run(
            browser,
            [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile)",
                "--proxy-server=\(proxy.url)", "--dump-dom", url,
            ], environment: home.map { ["HOME": $0] })
        return result.text
    }

    /// The story in reverse: a host-only cookie set by a.site.test does not reach b.site.test; with a rule that
    /// widens its Domain to the registrable domain, Chromium sends it to the sibling.
    @Test func aRuleThatWidensDomainLetsTheCookieReachASiblingSubdomain() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-browser-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try """
        rule "widen sid to the site" {
            host   a.site.test
            cookie sid
            domain ensure
        }
        """.write(toFile: "\(dir)/widen.rules", atomically: true, encoding: .utf8)
        let upstream = try Upstream()
        let resolve = ["--resolve", "a.site.test:127.0.0.1", "--resolve", "b.site.test:127.0.0.1"]
        let plain = try Proxy(resolve)
        let widening = try Proxy(resolve + ["--rules", "\(dir)/widen.rules"])
        let url =
            "http://a.site.test:\(upstream.port)/setcookie?c=sid%3D1%3B%20Max-Age%3D600&location=http%3A%2F%2Fb.site.test%3A\(upstream.port)%2Fread"
        let without = try Self.load(url, proxy: plain)
        #expect(without.contains("COOKIE[]"), "\(without)")
        let with = try Self.load(url, proxy: widening)
        #expect(with.contains("COOKIE[sid=1]"), "\(with)")
    }
}
