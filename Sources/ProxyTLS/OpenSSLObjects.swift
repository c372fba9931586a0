internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An OpenSSL failure with the text of OpenSSL's error queue (drained at the call site).
public struct TLSError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ what: String) {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        description = reasons.isEmpty ? what : "\(what): \(reasons.joined(separator: "; "))"
    }

    init(message: String) { description = message }
}

/// A pointer to an OpenSSL object this module made and no longer changes (a key, a certificate, an `SSL_CTX` once
/// set up): OpenSSL (1.1.0 and later) makes using such objects from several threads at once safe, locking what it
/// changes inside them itself (reference counts, a context's session cache). The one place ProxyTLS vouches for
/// sendability instead of the compiler; every owner below holds its pointer in one.
struct OpenSSLPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// The one owner of an `EVP_PKEY`.
final class PrivateKey: Sendable {
    private let owned: OpenSSLPointer
    var pointer: OpaquePointer { owned.raw }

    init(owning pointer: OpaquePointer) { owned = OpenSSLPointer(raw: pointer) }
    deinit { EVP_PKEY_free(pointer) }

    /// A new EC P-256 key (about 20 µs).
    static func generateP256() throws(TLSError) -> PrivateKey {
        guard let key = COpenSSL_EC_P256_generate() else { throw TLSError("cannot generate an EC P-256 key") }
        return PrivateKey(owning: key)
    }

    static func fromPEM(_ pem: [UInt8]) throws(TLSError) -> PrivateKey {
        let bio = try MemoryBIO(pem)
        guard let key = PEM_read_bio_PrivateKey(bio.pointer, nil, nil, nil) else {
            throw TLSError("cannot read the private key")
        }
        return PrivateKey(owning: key)
    }

    /// The SHA-256 of the key's SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) in DER: what a pin names (RFC 7469 §2.4,
    /// Chromium's `--ignore-certificate-errors-spki-list`).
    func publicKeySHA256() throws(TLSError) -> [UInt8] {
        let length = i2d_PUBKEY(pointer, nil)
        guard length > 0 else { throw TLSError("cannot encode the public key") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PUBKEY(pointer, &p)
        }
        guard written == length else { throw TLSError("cannot encode the public key") }
        var digest = [UInt8](repeating: 0, count: 32)
        guard SHA256(der, der.count, &digest) != nil else { throw TLSError("cannot hash the public key") }
        return digest
    }

    func pem() throws(TLSError) -> [UInt8] {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PrivateKey(bio.pointer, pointer, nil, nil, 0, nil, nil) == 1 else {
            throw TLSError("cannot write the private key")
        }
        return bio.contents()
    }
}

/// The one owner of an `X509`.
final class Certificate: Sendable {
    private let owned: OpenSSLPointer
    var pointer: OpaquePointer { owned.raw }

    init(owning pointer: OpaquePointer) { owned = OpenSSLPointer(raw: pointer) }
    deinit { X509_free(pointer) }

    static func fromPEM(_ pem: [UInt8]) throws(TLSError) -> Certificate {
        let bio = try MemoryBIO(pem)
        guard let cert = PEM_read_bio_X509(bio.pointer, nil, nil, nil) else {
            throw TLSError("cannot read the certificate")
        }
        return Certificate(owning: cert)
    }

    func pem() throws(TLSError) -> [UInt8] {
        let bio = try MemoryBIO()
        guard PEM_write_bio_X509(bio.pointer, pointer) == 1 else { throw TLSError("cannot write the certificate") }
        return bio.contents()
    }

    /// The subject's common name (CN).
    func commonName() throws(TLSError) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let n = X509_NAME_get_text_by_NID(X509_get_subject_name(pointer), NID_commonName, &buffer, 256)
        guard n > 0 else { throw TLSError("the certificate has no common name") }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    func der() throws(TLSError) -> [UInt8] {
        let length = i2d_X509(pointer, nil)
        guard length > 0 else { throw TLSError("cannot encode the certificate") }
        var out = [UInt8](repeating: 0, count: Int(length))
        _ = out.withUnsafeMutableBufferPointer { buffer in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_X509(pointer, &p)
        }
        return out
    }

    /// Builds and signs a certificate (X.509 v3) with the given extensions (`nid`, value as for openssl.cnf).
    static func make(
        subject: [(String, String)], issuer: Certificate?, publicKey: PrivateKey, signingKey: PrivateKey,
        validFrom: Int, validFor: Int, extensions: [(Int32, String)]
    ) throws(TLSError) -> Certificate {
        guard let x = X509_new() else { throw TLSError("X509_new failed") }
        let cert = Certificate(owning: x)
        X509_set_version(x, 2)
        var serial: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &serial) { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) }
        ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial >> 1)
        X509_gmtime_adj(X509_getm_notBefore(x), validFrom)
        X509_gmtime_adj(X509_getm_notAfter(x), validFor)
        guard let name = X509_NAME_new() else { throw TLSError("X509_NAME_new failed") }
        defer { X509_NAME_free(name) }
        for (field, value) in subject {
            X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0)
        }
        X509_set_subject_name(x, name)
        X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0.pointer) } ?? name)
        X509_set_pubkey(x, publicKey.pointer)
        var ctx = X509V3_CTX()
        COpenSSL_X509V3_set_ctx_nodb(&ctx)
        X509V3_set_ctx(&ctx, issuer?.pointer ?? x, x, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else {
                throw TLSError("cannot add certificate extension \(value)")
            }
            X509_add_ext(x, ext, -1)
            X509_EXTENSION_free(ext)
        }
        guard X509_sign(x, signingKey.pointer, EVP_sha256()) > 0 else { throw TLSError("cannot sign the certificate") }
        return cert
    }
}

/// A memory BIO (owned; freed in `deinit`).
final class MemoryBIO {
    let pointer: OpaquePointer

    init() throws(TLSError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError("BIO_new failed") }
        pointer = bio
    }

    convenience init(_ bytes: [UInt8]) throws(TLSError) {
        try self.init()
        _ = bytes.withUnsafeBytes { BIO_write(pointer, $0.baseAddress, Int32($0.count)) }
    }

    deinit { BIO_free(pointer) }

    func contents() -> [UInt8] {
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = COpenSSL_BIO_get_mem_data(pointer, &data)
        guard let data, length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: length))
    }
}

enum NID {
    static let subjectAltName = NID_subject_alt_name
    static let basicConstraints = NID_basic_constraints
    static let keyUsage = NID_key_usage
    static let extendedKeyUsage = NID_ext_key_usage
    static let subjectKeyIdentifier = NID_subject_key_identifier
    static let authorityKeyIdentifier = NID_authority_key_identifier
}

/// SHA-256 (FIPS 180-4) of `bytes`: the digests of an audit's evidence files (`manifest.json`).
public func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    _ = SHA256(bytes, bytes.count, &digest)
    return digest
}
