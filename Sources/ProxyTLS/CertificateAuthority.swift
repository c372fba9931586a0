internal import COpenSSL
import HTTPGrammar
import Locking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The local CA that signs leaf certificates for intercepted hosts: an EC P-256 key (mode 0600 on disk) and a
/// self-signed certificate, in the configuration folder.
public final class CertificateAuthority: Sendable {
    let key: PrivateKey
    let certificate: Certificate
    public let directory: String

    public static let keyFile = "ca-key.pem"
    public static let certificateFile = "ca-cert.pem"

    public var certificatePath: String { directory + "/" + Self.certificateFile }
    public var keyPath: String { directory + "/" + Self.keyFile }

    init(key: PrivateKey, certificate: Certificate, directory: String) {
        self.key = key
        self.certificate = certificate
        self.directory = directory
    }

    /// The configuration folder: `$COOKIE_PROXY_HOME`, else `$XDG_CONFIG_HOME/cookie-proxy`, else `~/.config/cookie-proxy`.
    public static func defaultDirectory(environment: [String: String]) -> String {
        if let home = environment["COOKIE_PROXY_HOME"], !home.isEmpty { return home }
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty { return xdg + "/cookie-proxy" }
        return (environment["HOME"] ?? "/root") + "/.config/cookie-proxy"
    }

    public static func exists(in directory: String) -> Bool {
        access(directory + "/" + keyFile, F_OK) == 0 || access(directory + "/" + certificateFile, F_OK) == 0
    }

    /// Creates a new CA in `directory` (refuses to overwrite one unless `force`).
    public static func create(in directory: String, force: Bool, commonName: String) throws(TLSError)
        -> CertificateAuthority
    {
        if exists(in: directory) && !force {
            throw TLSError(
                message:
                    "a CA already exists in \(directory); pass --force to replace it (clients trusting the old one will stop trusting the proxy)"
            )
        }
        try makeDirectory(directory)
        let key = try PrivateKey.generateP256()
        let cert = try Certificate.make(
            subject: [("O", "cookie-proxy"), ("CN", commonName)], issuer: nil, publicKey: key, signingKey: key,
            validFrom: -3600, validFor: 10 * 365 * 86_400,
            extensions: [
                (NID.basicConstraints, "critical,CA:TRUE,pathlen:0"), (NID.keyUsage, "critical,keyCertSign,cRLSign"),
                (NID.subjectKeyIdentifier, "hash"),
            ])
        try writeFile(directory + "/" + keyFile, try key.pem(), mode: 0o600)
        try writeFile(directory + "/" + certificateFile, try cert.pem(), mode: 0o644)
        return CertificateAuthority(key: key, certificate: cert, directory: directory)
    }

    /// Loads the CA from `directory`.
    public static func load(from directory: String) throws(TLSError) -> CertificateAuthority {
        let key = try PrivateKey.fromPEM(try readFile(directory + "/" + keyFile))
        let cert = try Certificate.fromPEM(try readFile(directory + "/" + certificateFile))
        return CertificateAuthority(key: key, certificate: cert, directory: directory)
    }

    public func certificatePEM() throws(TLSError) -> [UInt8] { try certificate.pem() }
    public func certificateDER() throws(TLSError) -> [UInt8] { try certificate.der() }
    /// Its name in trust stores (NSS nickname, keychain common name).
    public func commonName() throws(TLSError) -> String { try certificate.commonName() }

    static func makeDirectory(_ path: String) throws(TLSError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw TLSError(message: "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
    }

    static func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(TLSError) {
        let tmp = path + ".tmp"
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw TLSError(message: "cannot write \(path): \(String(cString: strerror(errno)))") }
        fchmod(fd, mode)
        let ok = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
        close(fd)
        guard ok, rename(tmp, path) == 0 else {
            unlink(tmp)
            throw TLSError(message: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func readFile(_ path: String) throws(TLSError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TLSError(message: "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }
}

/// Leaf certificates minted on the fly, one per host name, signed by the CA with one shared leaf key, cached.
public final class LeafCache: Sendable {
    let ca: CertificateAuthority
    let leafKey: PrivateKey
    private let cache = Locked<[String: Certificate]>([:])

    public init(ca: CertificateAuthority) throws(TLSError) {
        self.ca = ca
        self.leafKey = try PrivateKey.generateP256()
    }

    /// The SHA-256 of the SubjectPublicKeyInfo every leaf shares (a pin, RFC 7469 §2.4). A browser run for one
    /// audit trusts the proxy's leaves by it (Chromium's `--ignore-certificate-errors-spki-list`, in base64)
    /// without the CA entering any trust store.
    public func publicKeySHA256() throws(TLSError) -> [UInt8] { try leafKey.publicKeySHA256() }

    /// How many leaves were minted (for the benchmark and the banner).
    public var count: Int { cache.withLock { $0.count } }

    /// The leaf for `host`, which must be a DNS name or an IP literal (``HostName``): the name goes into OpenSSL's
    /// SAN syntax, where a comma would add names of the client's choosing.
    func leaf(for host: String) throws(TLSError) -> Certificate {
        if let cached = cache.withLock({ $0[host] }) { return cached }
        guard let kind = HostName.kind(host) else { throw TLSError("not a host name: \(host.debugDescription)") }
        let isIP = kind != .dnsName
        let cert = try Certificate.make(
            subject: [("CN", String(host.prefix(64)))], issuer: ca.certificate, publicKey: leafKey, signingKey: ca.key,
            validFrom: -3600, validFor: 397 * 86_400,
            extensions: [
                (NID.subjectAltName, isIP ? "IP:\(host)" : "DNS:\(host)"), (NID.basicConstraints, "critical,CA:FALSE"),
                (NID.keyUsage, "critical,digitalSignature,keyEncipherment"), (NID.extendedKeyUsage, "serverAuth"),
                (NID.subjectKeyIdentifier, "hash"), (NID.authorityKeyIdentifier, "keyid:always"),
            ])
        cache.withLock { $0[host] = cert }
        return cert
    }
}
