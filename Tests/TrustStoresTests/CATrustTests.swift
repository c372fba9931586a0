import Foundation
import TrustStores
import Testing

/// The trust stores' plumbing without the executable: which NSS databases `ca install --nss` acts on, and how the
/// undo commands it prints quote a path.
@Suite struct CATrustTests {
    /// Chromium's database always; every Firefox profile (Debian's and the snap's) that has one, in name order; a
    /// profile folder without `cert9.db` is not one.
    @Test func theNSSDatabasesAreChromiumsAndEachFirefoxProfilesThatHasOne() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("cp-nss-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        for (folder, database) in [
            (".mozilla/firefox/b.default-esr", true), (".mozilla/firefox/a.other", true),
            (".mozilla/firefox/Crash Reports", false), ("snap/firefox/common/.mozilla/firefox/c.snap", true),
        ] {
            try FileManager.default.createDirectory(
                atPath: home + "/" + folder, withIntermediateDirectories: true)
            if database {
                _ = FileManager.default.createFile(atPath: home + "/" + folder + "/cert9.db", contents: Data())
            }
        }
        #expect(
            CATrust.defaultNSSDatabases(home: home) == [
                home + "/.pki/nssdb", home + "/.mozilla/firefox/a.other", home + "/.mozilla/firefox/b.default-esr",
                home + "/snap/firefox/common/.mozilla/firefox/c.snap",
            ])
    }

    /// (text, as one word for a POSIX shell)
    @Test(arguments: [
        ("/home/a/.pki/nssdb", "/home/a/.pki/nssdb"), ("/home/a b/db", "'/home/a b/db'"), ("it's", "'it'\\''s'"),
        ("", "''"), ("$(x)", "'$(x)'"),
    ])
    func aPathIsQuotedForTheUndoCommand(_ text: String, _ quoted: String) {
        #expect(Shell.quoted(text) == quoted)
    }
}
