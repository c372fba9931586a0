internal import COpenSSL
import HTTPGrammar

/// One TLS connection over memory BIOs (no socket): ciphertext in with ``feed(_:)``, plaintext out with
/// ``readPlaintext(into:)``; plaintext in with ``write(_:)``, ciphertext out with ``drainCiphertext(into:)``.
/// The I/O shell moves the ciphertext; this owner frees the `SSL` (and its BIOs) in `deinit`.
public final class TLSEngine {
    let ssl: OpaquePointer
    let readBIO: OpaquePointer  // network → SSL
    let writeBIO: OpaquePointer  // SSL → network
    /// For a server engine: the host to mint a leaf for when the client sends no SNI (the CONNECT host).
    public let fallbackHost: String
    public private(set) var handshakeComplete = false
    /// Why a server engine had no certificate to present (set by the certificate callback).
    var certificateFailure: String?

    public enum Status: Equatable, Sendable {
        case ok
        /// The peer closed the TLS session (close_notify) or the stream ended.
        case closed
        case failed(String)
    }

    /// A server-side engine for an intercepted CONNECT to `host`.
    public init(server context: TLSServerContext, connectHost host: String) throws(TLSError) {
        (ssl, readBIO, writeBIO) = try Self.makeSSL(context.context)
        fallbackHost = host
        SSL_set_accept_state(ssl)
        _ = COpenSSL_set_app_data(ssl, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A client-side engine towards an upstream: SNI and host-name verification for `host` unless `insecure`;
    /// ALPN `h2,http/1.1` when `offerHTTP2` (the context's `http/1.1` otherwise).
    public init(client context: TLSClientContext, host: String, insecure: Bool, offerHTTP2: Bool = false)
        throws(TLSError)
    {
        (ssl, readBIO, writeBIO) = try Self.makeSSL(context.context)
        fallbackHost = host
        SSL_set_connect_state(ssl)
        if offerHTTP2 {
            let alpn: [UInt8] = [2] + Array("h2".utf8) + [8] + Array("http/1.1".utf8)
            _ = alpn.withUnsafeBufferPointer { SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count)) }
        }
        let isIP = HostName.isIPLiteral(host)
        if !isIP { _ = COpenSSL_set_tlsext_host_name(ssl, host) }
        if insecure {
            SSL_set_verify(ssl, SSL_VERIFY_NONE, nil)
        } else if isIP {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            SSL_set1_host(ssl, host)
        }
    }

    deinit { SSL_free(ssl) }  // frees both BIOs

    /// The protocol ALPN chose in the handshake (`h2`, `http/1.1`), if any.
    public var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// An `SSL` with a memory BIO each way (the `SSL` owns them once set).
    private static func makeSSL(_ context: OpaquePointer) throws(TLSError) -> (
        OpaquePointer, OpaquePointer, OpaquePointer
    ) {
        guard let ssl = SSL_new(context) else { throw TLSError("SSL_new failed") }
        guard let r = BIO_new(BIO_s_mem()), let w = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError("BIO_new failed")
        }
        SSL_set_bio(ssl, r, w)
        return (ssl, r, w)
    }

    /// Ciphertext from the network.
    public func feed(_ bytes: ArraySlice<UInt8>) {
        _ = bytes.withUnsafeBytes { BIO_write(readBIO, $0.baseAddress, Int32($0.count)) }
    }

    /// Drives the handshake; `.ok` also while it needs more bytes (check ``handshakeComplete``).
    public func handshake() -> Status {
        if handshakeComplete { return .ok }
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            handshakeComplete = true
            return .ok
        }
        return status(rc, during: "handshake")
    }

    /// Appends decrypted bytes; `.closed` when the peer ended the session.
    public func readPlaintext(into out: inout [UInt8]) -> Status {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n > 0 {
                out.append(contentsOf: buffer[0..<Int(n)])
                continue
            }
            return status(n, during: "read")
        }
    }

    /// Encrypts plaintext (memory BIOs never block, so all of it is taken).
    public func write(_ bytes: ArraySlice<UInt8>) -> Status {
        guard !bytes.isEmpty else { return .ok }
        let n = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        return n > 0 ? .ok : status(n, during: "write")
    }

    /// Moves pending ciphertext to `out`.
    public func drainCiphertext(into out: inout [UInt8]) {
        let pending = Int(COpenSSL_BIO_pending(writeBIO))
        guard pending > 0 else { return }
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: pending))
        _ = out.withUnsafeMutableBytes { BIO_read(writeBIO, $0.baseAddress! + start, Int32(pending)) }
    }

    /// Sends close_notify.
    public func close() { SSL_shutdown(ssl) }

    /// Why verification of the peer failed, if it did.
    public var verificationFailure: String? {
        let result = SSL_get_verify_result(ssl)
        guard result != X509_V_OK else { return nil }
        return String(cString: X509_verify_cert_error_string(result))
    }

    private func status(_ rc: Int32, during what: String) -> Status {
        let error = SSL_get_error(ssl, rc)
        if error == COpenSSL_ERROR_WANT_READ() || error == COpenSSL_ERROR_WANT_WRITE() {
            ERR_clear_error()
            return .ok
        }
        if error == COpenSSL_ERROR_ZERO_RETURN() { return .closed }
        if let failure = verificationFailure { return .failed("certificate verification failed: \(failure)") }
        if let certificateFailure { return .failed(certificateFailure) }
        return .failed(TLSError("TLS \(what) failed").description)
    }
}

/// Whether `host` is an IPv6 literal or a dotted-quad IPv4 address (an IP SAN, no SNI, IP verification).
