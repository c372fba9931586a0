import HTTPGrammar
import HTTPHeads
import ProxyCore
import ProxyHTTP2
import ProxyPlatform
import ProxyTLS

/// The state of the upstream connection a client connection is making: which attempt it is (an answer for an
/// earlier one is ignored), through which upstream proxy, to which port instead of the origin's.
struct Dial {
    /// Counts attempts: the resolver's answer for an earlier one finds another number.
    var generation = 0
    /// The upstream proxy of the connection being made (`--upstream-proxy`).
    var hop: UpstreamHop?
    /// The port to connect to instead of the origin's: the local service's, for the onboarding host.
    var localPort: Int?
}

/// Making upstream connections: a kept or pooled one, else resolve (``Connector`` decides what is known without
/// DNS), try the addresses in order, CONNECT through an upstream proxy, TLS towards an intercepted origin.
extension ExchangeDriver {
    func startConnect(_ origin: Origin, fresh: Bool, via: UpstreamHop?) {
        dial.generation += 1
        dial.hop = via
        // A stream on the origin's shared HTTP/2 connection, when there is one with room: for a client that speaks
        // HTTP/2 (the upstream hears the protocol the client chose), or to an h2c origin.
        if !loop.http2Upstreams.isEmpty, !fresh, via == nil, machine.requestMayGoTyped,
            let shared = loop.http2Upstreams[EventLoop.PoolKey(origin: origin, tls: upstreamIsTLS)],
            let session = shared.shared?.session, session.canOpen
        {
            releaseParked()
            joinHTTP2(shared, session)
            machine.upstreamConnected(reused: true, speaking: .http2, &io)
            return
        }
        if let parked = unpark() {
            if !fresh && parked.origin == origin && (parked.tls != nil) == upstreamIsTLS {
                attach(parked)
                machine.upstreamConnected(reused: true, &io)
                return
            }
            loop.givePooled(parked, idleSince: parked.pooledAt)
        }
        if !fresh, let pooled = loop.takePooled(origin, tls: upstreamIsTLS) {
            attach(pooled)
            machine.upstreamConnected(reused: true, &io)
            return
        }
        dial.localPort = nil
        if let onboarding = loop.configuration.onboardingHost, origin.host == onboarding, origin.port == 80,
            !upstreamIsTLS, loop.server.localServicePort > 0
        {
            // The onboarding pages: served by the proxy's own local service, to devices on the LAN too.
            dial.hop = nil
            dial.localPort = loop.server.localServicePort
            connectNext(origin: origin, addresses: ["127.0.0.1"], lastError: 0)
            return
        }
        // Through an upstream proxy, it is the proxy that is connected to.
        let host = via?.proxy.address.host ?? origin.host
        if case .known(let addresses) = Connector.addresses(of: host, overrides: loop.configuration.resolveOverrides) {
            connectNext(origin: origin, addresses: addresses, lastError: 0)
        } else if let cached = loop.server.resolver.cached(host, now: loop.now) {
            connectNext(origin: origin, addresses: cached, lastError: 0)
        } else {
            let generation = dial.generation
            let bound = LoopBound(self, on: loop)
            loop.server.resolver.resolve(host) { result in
                bound.post { connection in
                    connection.resolved(result, host: host, origin: origin, via: via, generation: generation)
                }
            }
        }
    }

    /// The resolver's answer, back on the loop: connect, unless the connection has moved on meanwhile.
    func resolved(
        _ result: Result<[String], Sys.ResolveError>, host: String, origin: Origin, via: UpstreamHop?, generation: Int
    ) {
        guard !closed, dial.generation == generation, machine.phase == .connecting else { return }
        switch result {
        case .success(let addresses): connectNext(origin: origin, addresses: addresses, lastError: 0)
        case .failure(let error):
            machine.upstreamFailed(
                via.map { .proxy($0.proxy, for: origin, reason: "cannot be resolved: \(error.reason)") }
                    ?? .resolve(host: host, reason: error.reason), &io)
        }
        apply()
    }

    /// Tries the addresses in order; reports the last error when none connects.
    func connectNext(origin: Origin, addresses: [String], lastError: Int32) {
        // (An upstream proxy and the onboarding pages may well be on loopback: the rule is for origins.)
        guard
            var remaining = dial.hop != nil || dial.localPort != nil
                ? addresses
                : Connector.permitted(
                    addresses, fromNetwork: fromNetwork, allowLoopbackUpstream: loop.configuration.allowLoopbackUpstream
                )
        else {
            machine.upstreamFailed(.loopbackFromNetwork(origin), &io)
            return
        }
        var error = lastError
        while !remaining.isEmpty {
            let address = remaining.removeFirst()
            let (ufd, inProgress) = Sys.connect(address, dial.localPort ?? dial.hop?.proxy.address.port ?? origin.port)
            if ufd < 0 {
                error = -ufd
                continue
            }
            let upstream = UpstreamConnection(fd: ufd, origin: origin, loop: loop)
            upstream.connecting = inProgress
            upstream.remainingAddresses = remaining
            if upstreamIsTLS {
                // Intercepted, or an https route: verified against the system store (or --upstream-ca).
                guard let tlsSetup = loop.server.interception else {
                    Sys.close(ufd)
                    machine.upstreamFailed(.failed(origin, reason: "TLS towards upstreams is not set up"), &io)
                    return
                }
                do {
                    // HTTP/2 is offered to the origin when the client speaks it: the upstream hears the protocol the
                    // client chose (and gRPC, which needs HTTP/2 end to end, works).
                    upstream.tls = try TLSEngine(
                        client: tlsSetup.client, host: origin.host,
                        insecure: tlsSetup.insecureHosts.contains(origin.host), offerHTTP2: machine.requestMayGoTyped)
                } catch {
                    Sys.close(ufd)
                    machine.upstreamFailed(.failed(origin, reason: "TLS: \(error)"), &io)
                    return
                }
            }
            attach(upstream)
            if !inProgress { tcpConnected(upstream) }
            return
        }
        machine.upstreamFailed(Connector.failure(error, origin: origin, through: dial.hop), &io)
    }

    /// TCP is up: through an upstream proxy that is to open a tunnel, CONNECT goes first; else the origin is
    /// reached.
    func tcpConnected(_ upstream: UpstreamConnection) {
        guard let hop = dial.hop, hop.tunnel else {
            originReachable(upstream)
            return
        }
        // A few hundred bytes into a socket that has sent nothing yet: its buffer takes them whole.
        let request = hop.connectRequest(to: upstream.origin)
        let sent = request.withUnsafeBytes { Sys.send(upstream.fd, $0) }
        guard sent == request.count else {
            let origin = upstream.origin
            detachUpstream(reusable: false)
            let reason = sent < 0 ? "failed: \(Sys.errorText(Int32(sent)))" : "took only part of the CONNECT request"
            machine.upstreamFailed(.proxy(hop.proxy, for: origin, reason: reason), &io)
            return
        }
        upstream.tunnelAnswer = []
    }

    /// The upstream proxy's answer to CONNECT: a 2xx opens the tunnel (RFC 9110 §9.3.6), anything else is a 502
    /// that quotes it. Bytes after the answer's head are the origin's.
    func readTunnelAnswer(_ upstream: UpstreamConnection, _ hop: UpstreamHop) {
        let origin = upstream.origin
        let n = loop.readBuffer.withUnsafeMutableBytes { Sys.recv(upstream.fd, $0) }
        if n < 0 && (Int32(-n) == Sys.EAGAIN || Int32(-n) == Sys.EINTR) { return }
        func fail(_ reason: String) {
            detachUpstream(reusable: false)
            machine.upstreamFailed(.proxy(hop.proxy, for: origin, reason: reason), &io)
        }
        if n == 0 { return fail("closed the connection before answering CONNECT") }
        if n < 0 { return fail("failed: \(Sys.errorText(Int32(n)))") }
        upstream.tunnelAnswer?.append(contentsOf: loop.readBuffer[0..<n])
        let answer = upstream.tunnelAnswer ?? []
        // The answer is read by the codec that reads every response (its limits, its one reading of a head).
        var parser = HTTPHeadParser(limits: loop.configuration.proxy.parserLimits)
        let end: Int
        let response: ResponseHead
        do {
            guard let length = try parser.headLength(answer[...]) else { return }
            end = length
            response = try parser.parseResponse(Array(answer[..<end]))
        } catch {
            let start = String(decoding: answer.prefix { $0 != 0x0D && $0 != 0x0A }.prefix(80), as: UTF8.self)
            return fail("answered CONNECT with something that is not HTTP (\(error.description)): '\(start)'")
        }
        guard (200..<300).contains(response.status) else {
            let line = String(decoding: response.head.bytes[response.head.startLine], as: UTF8.self)
            return fail("answered CONNECT with '\(line)'")
        }
        upstream.tunnelAnswer = nil
        let leftover = answer[end...]
        originReachable(upstream)
        guard !leftover.isEmpty, self.upstream === upstream else { return }
        if let tls = upstream.tls {
            tls.feed(leftover)
            upstreamTLSProgress(upstream, tls)
        } else {
            machine.upstreamData(leftover, &io)
        }
    }

    /// The origin can be spoken to: plain upstreams are ready; TLS ones start their handshake first.
    func originReachable(_ upstream: UpstreamConnection) {
        if let tls = upstream.tls {
            upstreamTLSProgress(upstream, tls)
        } else {
            // An h2c origin (`--reverse h2c://…`): HTTP/2 with prior knowledge (RFC 9113 §3.3), shared.
            // (A route that is not h2c to the same origin speaks HTTP/1.1 to it, as configured.)
            if loop.configuration.h2cUpstreams.contains(upstream.origin) && machine.requestMayGoTyped {
                upstream.becomeShared(
                    HTTP2ClientSession(scheme: "http", limits: loop.configuration.proxy.parserLimits), firstUser: self)
                machine.upstreamConnected(reused: false, speaking: .http2, &io)
                return
            }
            machine.upstreamConnected(reused: false, &io)
        }
    }
}
