import ProxyCore
import ProxyHTTP2
import ProxyPlatform
import ProxyTLS

/// The upstream side of a client connection: reading its upstream (through TLS and HTTP/2 when it speaks them),
/// taking one (kept for the client's next request, pooled, or closed), and the one kept between requests.
extension ExchangeDriver {
    /// Advances an upstream TLS engine: handshake (then the machine hears "connected"), then decrypted bytes.
    func upstreamTLSProgress(_ upstream: UpstreamConnection, _ tls: TLSEngine) {
        if !tls.handshakeComplete {
            let status = tls.handshake()
            tls.drainCiphertext(into: &upstream.out.records)
            if case .failed(let reason) = status {
                let origin = upstream.origin
                let certificate = tls.verificationFailure != nil
                detachUpstream(reusable: false)
                machine.upstreamFailed(
                    certificate ? .certificate(origin, reason: reason) : .failed(origin, reason: "TLS: \(reason)"), &io)
                return
            }
            if !tls.handshakeComplete { return }
            if tls.negotiatedProtocol == "h2" {
                // The origin chose HTTP/2 (offered when the client speaks it): the connection is shared from now
                // on, this exchange on its first stream; it reads its own socket (what came with the handshake
                // too).
                upstream.becomeShared(
                    HTTP2ClientSession(scheme: "https", limits: loop.configuration.proxy.parserLimits), firstUser: self)
                machine.upstreamConnected(reused: false, speaking: .http2, &io)
                upstream.readShared(fed: true)
                return
            }
            machine.upstreamConnected(reused: false, &io)
        }
        var plain: [UInt8] = []
        let status = tls.readPlaintext(into: &plain)
        tls.drainCiphertext(into: &upstream.out.records)
        if !plain.isEmpty { machine.upstreamData(plain[...], &io) }
        switch status {
        case .ok: break
        case .closed:
            upstream.readClosed = true
            machine.upstreamClosed(&io)
        case .failed(let reason):
            upstream.readClosed = true
            machine.upstreamFailed(.failed(upstream.origin, reason: "TLS: \(reason)"), &io)
        }
    }

    func upstreamReadable(_ upstream: UpstreamConnection) {
        if upstream.tunnelAnswer != nil, let hop = dial.hop {
            readTunnelAnswer(upstream, hop)
            apply()
            return
        }
        let n = loop.readBuffer.withUnsafeMutableBytes { Sys.recv(upstream.fd, $0) }
        if n > 0 {
            lastActivity = loop.now
            upstreamReadSince = loop.now
            if let tls = upstream.tls {
                tls.feed(loop.readBuffer[0..<n])
                upstreamTLSProgress(upstream, tls)
            } else {
                machine.upstreamData(loop.readBuffer[0..<n], &io)
            }
        } else if n == 0 {
            upstream.readClosed = true
            if let tls = upstream.tls, !tls.handshakeComplete {
                let origin = upstream.origin
                detachUpstream(reusable: false)
                machine.upstreamFailed(
                    .failed(origin, reason: "TLS: the upstream closed the connection during the handshake"), &io)
            } else {
                machine.upstreamClosed(&io)
            }
        } else if Int32(-n) != Sys.EAGAIN && Int32(-n) != Sys.EINTR {
            upstream.readClosed = true
            machine.upstreamFailed(.failed(upstream.origin, reason: Sys.errorText(Int32(n))), &io)
        }
        apply()
    }

    func upstreamConnectFinished(_ upstream: UpstreamConnection, error: Int32) {
        if error == 0 {
            upstream.connecting = false
            tcpConnected(upstream)
        } else {
            detachUpstream(reusable: false)
            connectNext(origin: upstream.origin, addresses: upstream.remainingAddresses, lastError: error)
        }
        apply()
    }

    // MARK: Upstream connections

    func attach(_ upstream: UpstreamConnection) {
        upstream.setOwner(self)
        self.upstream = upstream
        upstream.out.sent = 0
        upstream.out.shutdownPending = false
        if upstream.slot < 0 {
            loop.register(upstream, fd: upstream.fd, events: upstream.connecting ? Poller.writable : Poller.readable)
            upstream.interest = upstream.connecting ? Poller.writable : Poller.readable
        }
    }

    /// The upstream carries part of a request (``ConnectionIO/Command/resetUpstream``): it closes with a reset.
    /// Kept out of line: it is rare, and ``execute(_:)`` stays small enough to be inlined in ``apply()``.
    @inline(never)
    func resetUpstream() {
        loop.server.noteClosing(.requestUnfinished)
        // (A stream of a shared HTTP/2 connection is cancelled with RST_STREAM instead, by ``detachUpstream(reusable:)``.)
        if let upstream, !upstream.isShared { Sys.resetOnClose(upstream.fd) }
        detachUpstream(reusable: false)
    }

    func detachUpstream(reusable: Bool) {
        guard let upstream else { return }
        if upstream.isShared { return leaveHTTP2(upstream) }
        self.upstream = nil
        let unsent = upstream.out.pending(io.toUpstream) > 0
        // A request's worth of room stays for the next request; what a large body grew is let go.
        io.toUpstream.removeAll(keepingCapacity: io.toUpstream.capacity <= 4096)
        upstream.out.sent = 0
        upstream.out.shutdownPending = false
        if reusable && !unsent && !upstream.readClosed && !upstream.out.writeShut && !upstream.connecting
            && (upstream.tls?.handshakeComplete ?? true)
        {
            releaseParked()
            if loop.draining || closeAfterFlush || loop.parkedCount >= loop.parkLimit {
                loop.givePooled(upstream)
            } else {
                // Kept for this client's next request; any event on it now means the server closed it.
                parked = upstream
                loop.parkedCount += 1
                upstream.pooledAt = loop.now
                upstream.setInterest(Poller.readable)
            }
        } else {
            upstream.close()
        }
    }

    /// The parked upstream had an event: the server closed it (or sent bytes nobody asked for).
    func dropParked() {
        unpark()?.close()
    }

    /// The parked upstream, no longer parked.
    func unpark() -> UpstreamConnection? {
        guard let parked else { return nil }
        self.parked = nil
        loop.parkedCount -= 1
        return parked
    }

    /// Gives the parked upstream to the loop's pool (which closes it when draining or full).
    func releaseParked() {
        guard let parked = unpark() else { return }
        loop.givePooled(parked, idleSince: parked.pooledAt)
    }
}
