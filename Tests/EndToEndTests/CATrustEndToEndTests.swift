import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `cookie-proxy ca install|uninstall` into real trust stores: a fresh NSS database that a real Chromium then
/// uses, and Debian's system store inside a mount namespace of the test's own (the machine's store is untouched).
@Suite(.serialized) struct CATrustEndToEndTests {
    static func ca(_ home: String, _ args: [String]) throws -> CommandResult {
        try run(
            Paths.binary, ["ca"] + args, environment: ["HOME": home, "COOKIE_PROXY_HOME": home + "/cookie-proxy"],
            timeout: 60)
    }

    @Test func afterNSSInstallChromiumLoadsAnInterceptedPageWithoutCertificateErrorsAndUninstallUndoesIt() throws {
        let home = try InterceptionEndToEndTests.home()
        let ca = try TestCA(names: ["app.test"])
        defer { InterceptionEndToEndTests.remove(home, ca) }
        let installed = try Self.ca(home, ["install", "--nss"])
        #expect(installed.status == 0, "\(installed.stderr)")
        #expect(installed.text.contains("created the CA in \(home)/cookie-proxy"), "\(installed.text)")
        #expect(installed.text.contains("to \(home)/.pki/nssdb, trusted for TLS servers"), "\(installed.text)")
        #expect(installed.text.contains("undo: cookie-proxy ca uninstall --nss"), "\(installed.text)")
        let again = try Self.ca(home, ["install", "--nss"])
        #expect(again.status == 1)
        #expect(again.text.contains("already trusted in \(home)/.pki/nssdb; nothing done"), "\(again.text)")

        let upstream = try Upstream(tls: (ca.cert, ca.key))
        let proxy = try Proxy(
            [
                "--intercept", "app.test", "--upstream-ca", ca.caCert, "--resolve", "app.test:127.0.0.1", "--log",
                "none",
            ],
            environment: ["COOKIE_PROXY_HOME": home + "/cookie-proxy"])
        let url = "https://app.test:\(upstream.port)/path/trusted"
        let trusted = try BrowserEndToEndTests.load(url, proxy: proxy, home: home)
        #expect(trusted.contains("GET /path/trusted"), "\(trusted.prefix(2000))")

        let removed = try Self.ca(home, ["uninstall", "--nss"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.text.contains("removed '"), "\(removed.text)")
        let listed = try run(Paths.which("certutil"), ["-L", "-d", "sql:\(home)/.pki/nssdb"])
        #expect(!listed.text.contains("cookie-proxy"), "\(listed.text)")
        let untrusted = try BrowserEndToEndTests.load(url, proxy: proxy, home: home)
        #expect(!untrusted.contains("GET /path/trusted"), "\(untrusted.prefix(2000))")
    }

    /// Debian's store, in a mount namespace whose /etc/ssl/certs is a copy and whose
    /// `--nss-db DIR` acts on that database only: a path that is no NSS database is refused (not created), and the
    /// undo printed names the same database.
    @Test func aNamedNSSDatabaseMustExistAndItsUndoNamesIt() throws {
        let home = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let mistyped = try Self.ca(home, ["install", "--nss-db", home + "/nssbd"])
        #expect(mistyped.status == 1, "\(mistyped.text)")
        #expect(mistyped.stderr.contains("\(home)/nssbd is not an NSS database (no cert9.db)"), "\(mistyped.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/nssbd"))
        let database = home + "/my db"
        try FileManager.default.createDirectory(atPath: database, withIntermediateDirectories: true)
        let created = try run(Paths.which("certutil"), ["-N", "-d", "sql:" + database, "--empty-password"])
        #expect(created.status == 0, "\(created.text)")
        let installed = try Self.ca(home, ["install", "--nss-db", database])
        #expect(installed.status == 0, "\(installed.stderr)")
        #expect(installed.text.contains("undo: cookie-proxy ca uninstall --nss-db '\(database)'"), "\(installed.text)")
        let removed = try Self.ca(home, ["uninstall", "--nss-db", database])
        #expect(removed.status == 0 && removed.text.contains("removed '"), "\(removed.text)")
    }

    /// /usr/local/share/ca-certificates is empty: openssl trusts the CA after install, not after uninstall.
    @Test(.enabled(if: getuid() == 0, "the system store needs root (and a mount namespace)"))
    func systemInstallMakesOpenSSLTrustTheCAAndUninstallUndoesIt() throws {
        let home = try InterceptionEndToEndTests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let env = "HOME=\(home) COOKIE_PROXY_HOME=\(home)/cookie-proxy"
        let bundle = "/etc/ssl/certs/ca-certificates.crt"
        let verify = "openssl verify -CAfile \(bundle) \(home)/cookie-proxy/ca-cert.pem"
        let script = """
            set -u
            mkdir -p \(home)/certs && cp -a /etc/ssl/certs/. \(home)/certs/
            mount --bind \(home)/certs /etc/ssl/certs
            mount -t tmpfs none /usr/local/share/ca-certificates
            \(env) \(Paths.binary) ca init >/dev/null
            \(verify) >/dev/null 2>&1 && echo "BEFORE trusted" || echo "BEFORE untrusted"
            \(env) \(Paths.binary) ca install --system; echo "INSTALL $?"
            \(verify) >/dev/null 2>&1 && echo "AFTER trusted" || echo "AFTER untrusted"
            \(env) \(Paths.binary) ca install --system; echo "AGAIN $?"
            \(env) \(Paths.binary) ca uninstall --system; echo "UNINSTALL $?"
            \(verify) >/dev/null 2>&1 && echo "UNDONE trusted" || echo "UNDONE untrusted"
            """
        let result = try run(Paths.which("unshare"), ["--mount", "--propagation", "private", "bash", "-c", script])
        let out = result.text
        for line in [
            "BEFORE untrusted", "INSTALL 0", "AFTER trusted", "AGAIN 1", "UNINSTALL 0", "UNDONE untrusted",
            "system: copied the CA to /usr/local/share/ca-certificates/cookie-proxy-local-ca.crt",
            "system: already trusted", "undo: sudo cookie-proxy ca uninstall --system",
        ] {
            #expect(out.contains(line), "\(line): \(out) \(result.stderr)")
        }
        // Nothing of it reached the machine's own store.
        #expect(!FileManager.default.fileExists(atPath: "/usr/local/share/ca-certificates/cookie-proxy-local-ca.crt"))
    }
}
