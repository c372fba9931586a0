import ProxyCore
import ProxyHTTP2
import ProxyPlatform

/// What a shared upstream connection (``UpstreamConnection/Role/shared(_:)``) holds: its HTTP/2 session, the
/// exchanges with a stream on it, and the frames not yet sent (its ``UpstreamConnection/out`` indexes them).
final class SharedSession {
    let session: HTTP2ClientSession
    /// The exchanges with a stream on it, by their ``UpstreamExchange`` (none since ``UpstreamConnection/pooledAt``).
    var users: [ObjectIdentifier: ExchangeDriver] = [:]
    /// ``UpstreamConnection/flushShared()`` is running (it wakes users, who may flush again).
    var flushing = false
    var frames: [UInt8] = []

    init(_ session: HTTP2ClientSession) { self.session = session }
}

/// An upstream connection that speaks HTTP/2 is shared: the exchanges that go to its origin at once each have a
/// stream on it (``SharedSession/users``, by their ``UpstreamExchange``), as many as the origin's
/// SETTINGS_MAX_CONCURRENT_STREAMS allows, and the loop finds it by origin (``EventLoop/http2Upstreams``). The
/// connection reads its socket itself, all the time (a slow client holds back its own stream's window, not the
/// others'), hands each stream's response to its exchange, and writes the frames any of them made. It closes
/// when it fails (every exchange on it hears why) or has been idle for the pool's idle timeout.
extension UpstreamConnection {
    /// The connection speaks HTTP/2 from now on (`session`): the exchange of `client` takes the first stream, and
    /// the loop offers it to the next exchanges to the origin.
    func becomeShared(_ session: HTTP2ClientSession, firstUser client: ExchangeDriver) {
        role = .shared(SharedSession(session))
        let key = EventLoop.PoolKey(origin: origin, tls: tls != nil)
        if loop.http2Upstreams[key] == nil { loop.http2Upstreams[key] = self }
        client.joinHTTP2(self, session)
    }

    /// Events on the shared connection (its owner is nobody: ``handle(_:)`` sends them here).
    func handleShared(_ events: UInt32) {
        if events & (Poller.readable | Poller.hangup) != 0 {
            readShared()
        } else {
            flushShared()
        }
    }

    /// Reads the socket (`fed`: not; the TLS engine has been fed already, by the handshake), and the streams'
    /// responses go to their exchanges.
    func readShared(fed: Bool = false) {
        guard let session = shared?.session else { return }
        let n = fed ? 0 : loop.readBuffer.withUnsafeMutableBytes { Sys.recv(fd, $0) }
        var ok = true
        if n > 0 || fed {
            if let tls {
                if n > 0 { tls.feed(loop.readBuffer[0..<n]) }
                var plain: [UInt8] = []
                let status = tls.readPlaintext(into: &plain)
                tls.drainCiphertext(into: &out.records)
                if !plain.isEmpty { ok = session.receive(plain[...]) }
                switch status {
                case .ok: break
                case .closed: failShared("the upstream closed its TLS session")
                case .failed(let reason): failShared("TLS: \(reason)")
                }
            } else {
                ok = session.receive(loop.readBuffer[0..<n])
            }
        } else if n == 0 {
            failShared("the upstream closed the connection")
        } else if Int32(-n) != Sys.EAGAIN && Int32(-n) != Sys.EINTR {
            failShared(Sys.errorText(Int32(n)))
        }
        if !ok { failShared(session.failure ?? "protocol error") }
        dispatch()
        flushShared()
    }

    /// Each stream whose response grew, ended or failed goes to its exchange.
    func dispatch() {
        guard let shared else { return }
        let session = shared.session
        while !session.touched.isEmpty {
            var touched: [UpstreamExchange] = []
            swap(&touched, &session.touched)
            for exchange in touched {
                shared.users[ObjectIdentifier(exchange)]?.sharedResponse(self, exchange)
            }
        }
        if isClosed { return }
        // (``close()`` takes it out of the loop's table: it is offered to no new exchange.)
        if session.failure != nil || (session.goingAway && shared.users.isEmpty) { close() }
    }

    /// The frames any stream made go out; the socket's interest follows what is left. Request bodies went out
    /// with them: an exchange that stopped reading its client while its body waited reads again (the flow-control
    /// invariant of ``ExchangeDriver/updateInterest(_:)``: a send is followed by a new reading of the interests).
    func flushShared() {
        guard !isClosed, let shared, !shared.flushing else { return }
        shared.flushing = true
        defer { shared.flushing = false }
        shared.session.send(into: &shared.frames)
        var progress = false
        if let error = out.flush(&shared.frames, to: fd, tls: tls, progress: &progress) {
            failShared(Sys.errorText(-Int32(error)))
            dispatch()
            return
        }
        setInterest(Poller.readable | (out.pending(shared.frames) > 0 ? Poller.writable : 0))
        // A stream closes when its RST_STREAM is sent: its exchange hears it now.
        if !shared.session.touched.isEmpty { dispatch() }
        for user in shared.users.values where !user.closed && user.interest & Poller.readable == 0 {
            user.updateInterest(user.machine.status())
        }
    }

    /// The connection failed: every stream on it fails with the reason.
    private func failShared(_ why: String) {
        readClosed = true
        shared?.session.connectionFailed(why)
    }
}
