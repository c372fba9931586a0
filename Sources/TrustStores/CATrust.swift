import Foundation
import ProxyPlatform
import ProxyTLS
import Terminal

/// `cookie-proxy ca install|uninstall`: puts the local CA into (or takes it out of) the trust stores clients use,
/// with the platform's own tools — each store is checked first, so a second install says so instead of adding the
/// certificate again, and every change is printed with the command that undoes it.
public enum CATrust {
    public enum Store: String, CaseIterable, Sendable {
        /// Debian/Ubuntu's system store (update-ca-certificates): curl, Python, OpenSSL clients.
        case system
        /// NSS databases: Chromium's (~/.pki/nssdb) and Firefox profiles'.
        case nss
        /// The macOS keychain (the login keychain; the System keychain with --system).
        case keychain
        /// Booted iOS simulators (`xcrun simctl keychain booted`).
        case simulator
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// What one store said: done (with its undo), already so, or a failure.
    public struct Outcome {
        public var changed: Bool
        public var message: String
    }

    /// The local CA's name in trust stores: `cookie-proxy local CA (HOST)`, so that two machines' CAs are told apart.
    public static func commonName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, 255)
        let host = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return "cookie-proxy local CA (\(host))"
    }

    #if os(macOS)
        public static let platformDefault: [Store] = [.keychain]
    #else
        public static let platformDefault: [Store] = [.nss]
    #endif

    /// The Debian system store's copy (update-ca-certificates takes `*.crt` under this folder).
    static let systemFolder = "/usr/local/share/ca-certificates"
    static let systemFile = systemFolder + "/cookie-proxy-local-ca.crt"

    public struct Context {
        public var certificatePath: String
        public var certificatePEM: String
        /// The certificate's nickname in NSS and its common name in the keychain.
        public var name: String
        public var home: String
        public var nssDatabases: [String]
        /// The databases were named (`--nss-db`): each must exist already (a mistyped path is not created), and the
        /// undo names them.
        public var nssNamed = false

        public init(
            certificatePath: String, certificatePEM: String, name: String, home: String, nssDatabases: [String],
            nssNamed: Bool = false
        ) {
            (self.certificatePath, self.certificatePEM, self.name) = (certificatePath, certificatePEM, name)
            (self.home, self.nssDatabases, self.nssNamed) = (home, nssDatabases, nssNamed)
        }

        /// The options that name the databases this context's NSS commands act on.
        var nssOptions: String {
            nssNamed ? nssDatabases.map { "--nss-db \(Shell.quoted($0))" }.joined(separator: " ") : "--nss"
        }
    }

    /// `ca install` / `ca uninstall` on `stores` (the platform's default when empty), in order, each outcome said on
    /// stdout; stops at the first failure (said on stderr). Install creates the CA first when there is none.
    /// Returns the exit status: 0 something changed, 1 nothing did (every store was already so) or a store failed.
    public static func change(
        install: Bool, stores named: [Store], nssDatabases nss: [String], system: Bool, directory: String,
        commonName: String
    ) throws -> Int32 {
        var stores = named
        #if os(macOS)
            // On macOS --system is the System keychain: one store, not two.
            if stores.contains(.system) { stores.removeAll { $0 == .keychain } }
        #endif
        if stores.isEmpty { stores = platformDefault }
        if !CertificateAuthority.exists(in: directory) {
            guard install else {
                Console.err("error: no CA in \(directory); nothing to uninstall")
                return 1
            }
            let ca = try CertificateAuthority.create(in: directory, force: false, commonName: commonName)
            Console.out("created the CA in \(directory) (private key mode 0600): \(ca.certificatePath)")
        }
        let ca = try CertificateAuthority.load(from: directory)
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "/root"
        let context = Context(
            certificatePath: ca.certificatePath,
            certificatePEM: String(decoding: try ca.certificatePEM(), as: UTF8.self),
            name: try ca.commonName(), home: home,
            nssDatabases: nss.isEmpty ? defaultNSSDatabases(home: home) : nss, nssNamed: !nss.isEmpty)
        var changed = false
        for store in stores {
            do {
                let outcome =
                    install
                    ? try self.install(store, context, system: system) : try uninstall(store, context, system: system)
                Console.out(TerminalText(lines: outcome.message))
                changed = changed || outcome.changed
            } catch {
                Console.err("error: \(error)")
                return 1
            }
        }
        return changed ? 0 : 1
    }

    public static func install(_ store: Store, _ c: Context, system: Bool) throws(Failure) -> Outcome {
        switch store {
        case .system: return try installSystem(c)
        case .nss: return try installNSS(c)
        case .keychain: return try installKeychain(c, system: system)
        case .simulator: return try installSimulator(c)
        }
    }

    public static func uninstall(_ store: Store, _ c: Context, system: Bool) throws(Failure) -> Outcome {
        switch store {
        case .system: return try uninstallSystem(c)
        case .nss: return try uninstallNSS(c)
        case .keychain: return try uninstallKeychain(c, system: system)
        case .simulator:
            // simctl can add a root certificate but not remove one; resetting the keychain removes every one.
            return Outcome(
                changed: false,
                message:
                    "simulator: simctl cannot remove a single certificate; to remove it (and every other added one) run: xcrun simctl keychain booted reset"
            )
        }
    }

    // MARK: Debian system store

    private static func installSystem(_ c: Context) throws(Failure) -> Outcome {
        #if os(macOS)
            return try installKeychain(c, system: true)
        #else
            let tool = try which("update-ca-certificates", package: "ca-certificates")
            if let existing = try? String(contentsOfFile: systemFile, encoding: .utf8) {
                if normalisedPEM(existing) == normalisedPEM(c.certificatePEM) {
                    return Outcome(changed: false, message: "system: already trusted (\(systemFile)); nothing done")
                }
                throw Failure(
                    description:
                        "system: \(systemFile) holds another cookie-proxy CA (the CA was created again); run 'cookie-proxy ca uninstall --system' first"
                )
            }
            guard getuid() == 0 else {
                throw Failure(description: "system: the system store needs root: sudo cookie-proxy ca install --system")
            }
            do {
                try FileManager.default.createDirectory(atPath: systemFolder, withIntermediateDirectories: true)
                try c.certificatePEM.write(toFile: systemFile, atomically: true, encoding: .utf8)
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: systemFile)
            } catch {
                throw Failure(description: "system: cannot write \(systemFile): \(error.localizedDescription)")
            }
            let result = try Shell.run(tool, [])
            guard result.status == 0 else {
                try? FileManager.default.removeItem(atPath: systemFile)
                throw Failure(description: "system: update-ca-certificates failed: \(result.output)")
            }
            return Outcome(
                changed: true,
                message:
                    "system: copied the CA to \(systemFile) and ran update-ca-certificates; undo: sudo cookie-proxy ca uninstall --system"
            )
        #endif
    }

    private static func uninstallSystem(_ c: Context) throws(Failure) -> Outcome {
        #if os(macOS)
            return try uninstallKeychain(c, system: true)
        #else
            guard FileManager.default.fileExists(atPath: systemFile) else {
                return Outcome(changed: false, message: "system: not installed (\(systemFile) absent); nothing done")
            }
            guard getuid() == 0 else {
                throw Failure(
                    description: "system: the system store needs root: sudo cookie-proxy ca uninstall --system")
            }
            let tool = try which("update-ca-certificates", package: "ca-certificates")
            do {
                try FileManager.default.removeItem(atPath: systemFile)
            } catch {
                throw Failure(description: "system: cannot remove \(systemFile): \(error.localizedDescription)")
            }
            let result = try Shell.run(tool, ["--fresh"])
            guard result.status == 0 else {
                throw Failure(description: "system: update-ca-certificates --fresh failed: \(result.output)")
            }
            return Outcome(
                changed: true, message: "system: removed \(systemFile) and ran update-ca-certificates --fresh")
        #endif
    }

    // MARK: NSS

    /// Chromium's database (created if missing) and every Firefox profile's, unless named with --nss-db.
    public static func defaultNSSDatabases(home: String) -> [String] {
        var found = [home + "/.pki/nssdb"]
        for root in [home + "/.mozilla/firefox", home + "/snap/firefox/common/.mozilla/firefox"] {
            let profiles = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
            for profile in profiles.sorted() where FileManager.default.fileExists(atPath: "\(root)/\(profile)/cert9.db")
            {
                found.append("\(root)/\(profile)")
            }
        }
        return found
    }

    private static func installNSS(_ c: Context) throws(Failure) -> Outcome {
        let certutil = try which("certutil", package: "libnss3-tools")
        var lines: [String] = []
        var changed = false
        for database in c.nssDatabases {
            if !FileManager.default.fileExists(atPath: database + "/cert9.db") {
                if c.nssNamed {
                    // A named database is one that exists: a mistyped path would otherwise become a new, unused one.
                    throw Failure(
                        description:
                            "nss: \(database) is not an NSS database (no cert9.db); check the path, or create one with: certutil -N -d sql:\(database) --empty-password"
                    )
                }
                do {
                    try FileManager.default.createDirectory(
                        atPath: database, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                } catch {
                    throw Failure(description: "nss: cannot create \(database): \(error.localizedDescription)")
                }
                let created = try Shell.run(certutil, ["-N", "-d", "sql:" + database, "--empty-password"])
                guard created.status == 0 else {
                    throw Failure(description: "nss: cannot create a database in \(database): \(created.output)")
                }
            }
            let listed = try Shell.run(certutil, ["-L", "-d", "sql:" + database, "-n", c.name, "-a"])
            if listed.status == 0 {
                guard normalisedPEM(listed.output) == normalisedPEM(c.certificatePEM) else {
                    throw Failure(
                        description:
                            "nss: \(database) holds another certificate named '\(c.name)' (the CA was created again); run 'cookie-proxy ca uninstall \(c.nssOptions)' first"
                    )
                }
                lines.append("nss: already trusted in \(database); nothing done")
                continue
            }
            // "C,,": a CA trusted to issue server certificates (TLS), nothing else.
            let added = try Shell.run(
                certutil, ["-A", "-d", "sql:" + database, "-n", c.name, "-t", "C,,", "-i", c.certificatePath])
            guard added.status == 0 else {
                throw Failure(description: "nss: certutil could not add the CA to \(database): \(added.output)")
            }
            changed = true
            lines.append("nss: added '\(c.name)' to \(database), trusted for TLS servers")
        }
        if changed {
            lines.append("     undo: cookie-proxy ca uninstall \(c.nssOptions) (restart the browser to see it)")
        }
        return Outcome(changed: changed, message: lines.joined(separator: "\n"))
    }

    private static func uninstallNSS(_ c: Context) throws(Failure) -> Outcome {
        let certutil = try which("certutil", package: "libnss3-tools")
        var lines: [String] = []
        var changed = false
        for database in c.nssDatabases where FileManager.default.fileExists(atPath: database + "/cert9.db") {
            guard try Shell.run(certutil, ["-L", "-d", "sql:" + database, "-n", c.name]).status == 0 else {
                lines.append("nss: not in \(database); nothing done")
                continue
            }
            let deleted = try Shell.run(certutil, ["-D", "-d", "sql:" + database, "-n", c.name])
            guard deleted.status == 0 else {
                throw Failure(description: "nss: certutil could not remove the CA from \(database): \(deleted.output)")
            }
            changed = true
            lines.append("nss: removed '\(c.name)' from \(database)")
        }
        if lines.isEmpty { lines.append("nss: no NSS database found; nothing done") }
        return Outcome(changed: changed, message: lines.joined(separator: "\n"))
    }

    // MARK: macOS keychain and simulators (written from security(1) and simctl's help; not run on this machine)

    private static func keychainPath(_ c: Context, system: Bool) -> String {
        system ? "/Library/Keychains/System.keychain" : c.home + "/Library/Keychains/login.keychain-db"
    }

    private static func installKeychain(_ c: Context, system: Bool) throws(Failure) -> Outcome {
        let security = try which("security", package: nil)
        let keychain = keychainPath(c, system: system)
        if try Shell.run(security, ["find-certificate", "-c", c.name, keychain]).status == 0 {
            return Outcome(changed: false, message: "keychain: already in \(keychain); nothing done")
        }
        // -r trustRoot: trusted as a root; -d (admin trust settings) for the System keychain.
        let args =
            (system ? ["add-trusted-cert", "-d"] : ["add-trusted-cert"])
            + ["-r", "trustRoot", "-k", keychain, c.certificatePath]
        let added = try Shell.run(security, args)
        guard added.status == 0 else {
            throw Failure(description: "keychain: security add-trusted-cert failed: \(added.output)")
        }
        let undo =
            system ? "sudo cookie-proxy ca uninstall --keychain --system" : "cookie-proxy ca uninstall --keychain"
        return Outcome(changed: true, message: "keychain: added the CA to \(keychain) as a trusted root; undo: \(undo)")
    }

    private static func uninstallKeychain(_ c: Context, system: Bool) throws(Failure) -> Outcome {
        let security = try which("security", package: nil)
        let keychain = keychainPath(c, system: system)
        guard try Shell.run(security, ["find-certificate", "-c", c.name, keychain]).status == 0 else {
            return Outcome(changed: false, message: "keychain: not in \(keychain); nothing done")
        }
        _ = try Shell.run(
            security, (system ? ["remove-trusted-cert", "-d"] : ["remove-trusted-cert"]) + [c.certificatePath])
        let deleted = try Shell.run(security, ["delete-certificate", "-c", c.name, keychain])
        guard deleted.status == 0 else {
            throw Failure(description: "keychain: security delete-certificate failed: \(deleted.output)")
        }
        return Outcome(changed: true, message: "keychain: removed the CA from \(keychain)")
    }

    private static func installSimulator(_ c: Context) throws(Failure) -> Outcome {
        let xcrun = try which("xcrun", package: nil)
        // simctl cannot list what a simulator trusts: a marker in the configuration folder remembers the install.
        let marker = URL(fileURLWithPath: c.certificatePath).deletingLastPathComponent().path + "/simulator-installed"
        if let recorded = try? String(contentsOfFile: marker, encoding: .utf8),
            normalisedPEM(recorded) == normalisedPEM(c.certificatePEM)
        {
            return Outcome(
                changed: false,
                message:
                    "simulator: already added to the booted simulators (\(marker)); delete that file to add it again")
        }
        let added = try Shell.run(xcrun, ["simctl", "keychain", "booted", "add-root-cert", c.certificatePath])
        guard added.status == 0 else {
            throw Failure(
                description:
                    "simulator: xcrun simctl keychain booted add-root-cert failed (is a simulator booted?): \(added.output)"
            )
        }
        try? c.certificatePEM.write(toFile: marker, atomically: true, encoding: .utf8)
        return Outcome(
            changed: true,
            message:
                "simulator: added the CA to the booted simulators; undo: xcrun simctl keychain booted reset (removes every added certificate)"
        )
    }

    // MARK: Helpers

    /// The base64 of a PEM's certificates, without headers or white space: two spellings of one certificate compare
    /// equal.
    static func normalisedPEM(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
            .filter { !$0.isWhitespace }
    }

    static func which(_ tool: String, package: String?) throws(Failure) -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") + ["/usr/sbin", "/sbin", "/usr/bin"]
        where FileManager.default.isExecutableFile(atPath: "\(dir)/\(tool)") {
            return "\(dir)/\(tool)"
        }
        throw Failure(
            description: "\(tool) is not installed" + (package.map { " (Debian: apt-get install \($0))" } ?? ""))
    }
}

/// Runs a tool to completion: its exit status and what it printed (standard output and error together).
public enum Shell {
    public static func run(_ path: String, _ arguments: [String]) throws(CATrust.Failure) -> (
        status: Int32, output: String
    ) {
        do {
            return try ChildProcess.run(path, arguments)
        } catch {
            throw CATrust.Failure(description: error.description)
        }
    }

    /// `text` as one word for a POSIX shell: as it is when it holds only safe bytes, else in single quotes.
    public static func quoted(_ text: String) -> String {
        let safe = text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/._-+:@%=,".contains($0)) }
        return safe && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
