import ProxyTLS

/// The local CA's files as `cookie-proxy ca` handles them: made, found, exported. The CA itself (minting leaves,
/// its key's mode) is ProxyTLS's ``CertificateAuthority``.
public enum LocalCA {
    /// Makes the CA in `directory` (its key mode 0600), or refuses when one is there and `force` is not given: the
    /// certificate's and the key's paths.
    public static func create(in directory: String, force: Bool) throws(CATrust.Failure) -> (
        certificate: String, key: String
    ) {
        do {
            let ca = try CertificateAuthority.create(in: directory, force: force, commonName: CATrust.commonName())
            return (ca.certificatePath, ca.keyPath)
        } catch {
            throw CATrust.Failure(description: "\(error)")
        }
    }

    /// The CA certificate's path in `directory`, nil when there is no CA there yet.
    public static func certificatePath(in directory: String) -> String? {
        CertificateAuthority.exists(in: directory) ? directory + "/" + CertificateAuthority.certificateFile : nil
    }

    /// The CA certificate of `directory` as PEM text, or DER bytes.
    public static func certificate(in directory: String, pem: Bool) throws(CATrust.Failure) -> [UInt8] {
        do {
            let ca = try CertificateAuthority.load(from: directory)
            return pem ? try ca.certificatePEM() : try ca.certificateDER()
        } catch {
            throw CATrust.Failure(description: "\(error)")
        }
    }
}
