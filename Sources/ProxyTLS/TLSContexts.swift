internal import COpenSSL

/// The server side of interception: one `SSL_CTX` whose certificate callback picks (or mints) the leaf for the
/// SNI host name, falling back to the CONNECT host; TLS 1.2 and 1.3; ALPN `http/1.1`, and `h2` as `http2` says.
public final class TLSServerContext: Sendable {
    private let owned: OpenSSLPointer
    var context: OpaquePointer { owned.raw }
    public let leaves: LeafCache
    public let http2: HTTP2Mode

    public init(leaves: LeafCache, http2: HTTP2Mode = .off) throws(TLSError) {
        self.http2 = http2
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError("SSL_CTX_new failed") }
        owned = OpenSSLPointer(raw: ctx)
        self.leaves = leaves
        _ = COpenSSL_CTX_set_min_proto_version(ctx, COpenSSL_TLS1_2_VERSION())
        _ = COpenSSL_CTX_set_mode(ctx, COpenSSL_MODE_RELEASE_BUFFERS())
        SSL_CTX_set_options(ctx, UInt64(COpenSSL_OP_NO_COMPRESSION()))
        SSL_CTX_set_cert_cb(ctx, tlsCertificateCallback, Unmanaged.passUnretained(leaves).toOpaque())
        SSL_CTX_set_alpn_select_cb(ctx, tlsALPNSelect, UnsafeMutableRawPointer(bitPattern: http2.rawValue + 1))
    }

    deinit { SSL_CTX_free(context) }
}

/// The client side towards upstreams: the system trust store (plus `--upstream-ca`), host-name verification,
/// SNI, ALPN `http/1.1`.
public final class TLSClientContext: Sendable {
    private let owned: OpenSSLPointer
    var context: OpaquePointer { owned.raw }

    public init(extraCAFile: String?) throws(TLSError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSError("SSL_CTX_new failed") }
        owned = OpenSSLPointer(raw: ctx)
        _ = COpenSSL_CTX_set_min_proto_version(ctx, COpenSSL_TLS1_2_VERSION())
        _ = COpenSSL_CTX_set_mode(ctx, COpenSSL_MODE_RELEASE_BUFFERS())
        SSL_CTX_set_default_verify_paths(ctx)
        if let extraCAFile, SSL_CTX_load_verify_locations(ctx, extraCAFile, nil) != 1 {
            throw TLSError("cannot load --upstream-ca \(extraCAFile)")
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
        _ = alpn.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
    }

    deinit { SSL_CTX_free(context) }
}

// C callbacks: free functions, so they carry no actor isolation.

private func tlsCertificateCallback(_ ssl: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    guard let ssl, let arg else { return 0 }
    let leaves = Unmanaged<LeafCache>.fromOpaque(arg).takeUnretainedValue()
    let engine = COpenSSL_get_app_data(ssl).map { Unmanaged<TLSEngine>.fromOpaque($0).takeUnretainedValue() }
    var host: String? = nil
    if let name = SSL_get_servername(ssl, COpenSSL_NAMETYPE_host_name()) { host = String(cString: name) }
    if host == nil || host!.isEmpty { host = engine?.fallbackHost }
    guard let host else { return 0 }
    let leaf: Certificate
    do {
        leaf = try leaves.leaf(for: host.lowercased())
    } catch {
        // Kept for the handshake's failure: OpenSSL itself only knows that the callback said no.
        engine?.certificateFailure = "no certificate for \(host.debugDescription): \(error)"
        return 0
    }
    guard SSL_use_certificate(ssl, leaf.pointer) == 1, SSL_use_PrivateKey(ssl, leaves.leafKey.pointer) == 1 else {
        return 0
    }
    return 1
}

/// Picks the protocol from the client's ALPN list (RFC 7301) by the context's ``HTTP2Mode`` (its raw value + 1 is
/// `arg`): `http/1.1` unless `h2` is preferred (`on`) or the client offers nothing else (`fallback`).
private func tlsALPNSelect(
    _ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outlen: UnsafeMutablePointer<UInt8>?,
    _ input: UnsafePointer<UInt8>?, _ inlen: UInt32, _ arg: UnsafeMutableRawPointer?
) -> Int32 {
    guard let input, let out, let outlen else { return COpenSSL_TLSEXT_ERR_NOACK() }
    let mode = HTTP2Mode(rawValue: Int(bitPattern: arg) - 1) ?? .off
    var http1: Int? = nil
    var h2: Int? = nil
    var i = 0
    while i < Int(inlen) {
        let length = Int(input[i])
        guard i + 1 + length <= Int(inlen) else { break }
        let name = UnsafeBufferPointer(start: input + i + 1, count: length)
        if name.elementsEqual("http/1.1".utf8) { http1 = http1 ?? i }
        if name.elementsEqual("h2".utf8) { h2 = h2 ?? i }
        i += 1 + length
    }
    let chosen: Int? =
        switch mode {
        case .off: http1
        case .fallback: http1 ?? h2
        case .on: h2 ?? http1
        }
    guard let chosen else { return COpenSSL_TLSEXT_ERR_NOACK() }
    out.pointee = input + chosen + 1
    outlen.pointee = input[chosen]
    return COpenSSL_TLSEXT_ERR_OK()
}

/// Whether clients of intercepted TLS may speak HTTP/2 (`--http2`), chosen by ALPN.
public enum HTTP2Mode: Int, Sendable, CaseIterable {
    /// `http/1.1` only.
    case off
    /// `http/1.1` when the client offers it, `h2` to a client that offers nothing else (gRPC): as HTTP Toolkit.
    case fallback
    /// `h2` when the client offers it.
    case on
}
