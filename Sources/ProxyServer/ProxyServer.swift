import Dispatch
import Foundation
import HTTPGrammar
import ProxyCore
import ProxyPlatform
import ProxyTLS
import Locking

/// The proxy server: one event loop per configured thread, all listening on the same address through
/// SO_REUSEPORT. Start with ``start()``, stop with ``shutdown(deadline:)``. `@unchecked`: what it changes after
/// being made (its loops, bound ports, configuration) is written by ``start()`` before any loop or other thread sees
/// the server, and every later change goes through an atomic counter or a lock.
public final class ProxyServer: @unchecked Sendable {
    public private(set) var configuration: ServerConfiguration
    let hooks: any ProxyHooks
    let resolver = Resolver()
    let activeConnections = AtomicCounter()
    let totalRequests = AtomicCounter()
    let interceptedConnections = AtomicCounter()
    private let http2Refusals = Locked<[String]>([])

    /// An HTTP/2 stream refused before anything of it was passed on, or a connection ended by a protocol error.
    func noteHTTP2Refusal(_ text: String) {
        http2Refusals.withLock { if $0.count < 100 { $0.append(text) } }
    }

    /// HTTP/2 refusals since the last call.
    public func takeHTTP2Refusals() -> [String] {
        http2Refusals.withLock {
            let t = $0; $0.removeAll(); return t
        }
    }
    /// Connections closed because their machine got an event its state cannot take (a bug; zero otherwise).
    let unexpectedEvents = AtomicCounter()
    private let tlsFailures = Locked<[String]>([])

    /// A TLS failure with a client (e.g. it does not trust the CA); the runtime reports these.
    func noteTLSFailure(_ text: String) {
        tlsFailures.withLock { if $0.count < 100 { $0.append(text) } }
    }

    /// Why the proxy ended an exchange or a connection before its end: a deadline (each an option of `cookie-proxy
    /// run`), or a client that went with its request unfinished (the upstream then gets a reset). Counted for the
    /// exit message; each is also noted with its exchange (``takeClosingNotes()``).
    public enum Closing: Int, CaseIterable, Sendable {
        case headerTimeout, connectTimeout, responseTimeout, upstreamReadTimeout, clientWriteTimeout
        case streamIdleTimeout, requestUnfinished

        /// What the exit message and the notes call it.
        public var name: String {
            switch self {
            case .headerTimeout: "header timeout"
            case .connectTimeout: "connect timeout"
            case .responseTimeout: "response timeout"
            case .upstreamReadTimeout: "upstream read timeout"
            case .clientWriteTimeout: "client write timeout"
            case .streamIdleTimeout: "stream idle timeout"
            case .requestUnfinished: "request unfinished (the upstream got a reset)"
            }
        }
    }
    /// A closing noted with what it closed: the exchange (`METHOD URL`, nil between exchanges), the client's
    /// address, and what happened.
    public struct ClosingNote: Sendable {
        public var closing: Closing
        public var exchange: String?
        /// The exchange's request id (nil between exchanges).
        public var requestID: UInt64? = nil
        public var client: String
        public var detail: String

        /// One line: `upstream read timeout: GET http://… (client 127.0.0.1): no byte from upstream … for 60 s …`.
        public var text: String { "\(closing.name): \(exchange.map { "\($0) " } ?? "")(client \(client)): \(detail)" }
    }
    private let closings = Locked<[Int]>(Array(repeating: 0, count: Closing.allCases.count))
    private let closingNotes = Locked<(notes: [ClosingNote], leftOut: Int)>(([], 0))

    /// Counts `closing`; `note` is kept for ``takeClosingNotes()`` (at most 100 wait between two takes; the rest
    /// are counted, so that what is said can say how many it left out).
    func noteClosing(_ closing: Closing, _ note: ClosingNote? = nil) {
        closings.withLock { $0[closing.rawValue] += 1 }
        if let note {
            closingNotes.withLock { if $0.notes.count < 100 { $0.notes.append(note) } else { $0.leftOut += 1 } }
        }
    }

    /// How many exchanges or connections each kind of closing ended so far (those that happened).
    public var closingCounts: [(Closing, Int)] {
        let counts = closings.withLock { $0 }
        return Closing.allCases.compactMap { counts[$0.rawValue] > 0 ? ($0, counts[$0.rawValue]) : nil }
    }

    /// The notes of closings since the last call.
    public func takeClosingNotes() -> (notes: [ClosingNote], leftOut: Int) {
        closingNotes.withLock {
            let t = $0
            $0 = ([], 0)
            return t
        }
    }

    /// Client connections ended by a socket error, by errno (a reset, a broken pipe).
    private let clientSocketErrors = Locked<[Int32: Int]>([:])

    func noteClientSocketError(_ errno: Int32) {
        clientSocketErrors.withLock { $0[errno, default: 0] += 1 }
    }

    /// How many client connections ended on each socket error so far, as `strerror` text and count, most first.
    public var clientSocketErrorCounts: [(String, Int)] {
        clientSocketErrors.withLock { $0 }.sorted { $0.value > $1.value }.map { (Sys.errorText(-$0.key), $0.value) }
    }

    /// TLS failures since the last call.
    public func takeTLSFailures() -> [String] {
        tlsFailures.withLock {
            let t = $0; $0.removeAll(); return t
        }
    }
    public var intercepted: Int { interceptedConnections.load() }
    private let requestIDs = AtomicCounter()
    private var loops: [EventLoop] = []
    private let finished = DispatchGroup()
    /// The port actually bound (useful with port 0).
    public private(set) var boundPort = 0
    /// Every listener's bound port, in ``ServerConfiguration/listeners``' order.
    public private(set) var boundPorts: [Int] = []

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// TLS interception: the server context (CA, leaf cache), the client context towards upstreams, and the
    /// hosts whose upstream certificates are not verified (`--insecure-upstream`).
    public struct Interception: Sendable {
        public var server: TLSServerContext
        public var client: TLSClientContext
        public var insecureHosts: Set<String>
        /// A TLS listener's: the same leaves, `h2` preferred as any https origin's (interception prefers what the
        /// origin would: `--http2`'s mode).
        public var listener: TLSServerContext
        public init(
            server: TLSServerContext, client: TLSClientContext, insecureHosts: Set<String>,
            listener: TLSServerContext? = nil
        ) {
            self.server = server
            self.client = client
            self.insecureHosts = insecureHosts
            self.listener = listener ?? server
        }
    }
    let interception: Interception?
    let localService: (any LocalService)?
    /// The local service's bound port (useful with port 0); 0 when there is none.
    public private(set) var localServicePort = 0

    public init(
        configuration: ServerConfiguration, hooks: any ProxyHooks = NoHooks(), interception: Interception? = nil,
        localService: (any LocalService)? = nil
    ) {
        var c = configuration
        c.proxy.ownPorts.insert(c.listenPort)
        c.proxy.ownHosts.insert(c.listenHost)
        c.proxy.interceptionAvailable = interception != nil
        self.configuration = c
        self.hooks = hooks
        self.interception = interception
        self.localService = configuration.localServiceAddress == nil ? nil : localService
    }

    public var connections: Int { activeConnections.load() }
    public var requests: Int { totalRequests.load() }
    /// Connections closed on an event their state could not take; nonzero only when there is a bug.
    public var unexpectedEventCount: Int { unexpectedEvents.load() }
    func nextRequestID() -> UInt64 { UInt64(requestIDs.add(1)) }

    /// Binds the listening sockets and starts the loops' threads.
    public func start() throws(StartError) {
        // Per listener, a socket for each loop.
        var sockets: [[Int32]] = []
        var ports: [Int] = []
        for listen in configuration.listeners {
            do {
                let (fds, port) = try bind(listen)
                sockets.append(fds)
                ports.append(port)
            } catch {
                for f in sockets.joined() { Sys.close(f) }
                throw error
            }
        }
        let fds = sockets[0]
        let port = ports[0]
        boundPort = port
        boundPorts = ports
        var localFD: Int32 = -1
        if localService != nil, let address = configuration.localServiceAddress {
            localFD = Sys.listen(host: address.host, port: address.port, reusePort: false)
            if localFD == -EADDRINUSE && configuration.localServiceAnyPortIfTaken {
                localFD = Sys.listen(host: address.host, port: 0, reusePort: false)
            }
            if localFD < 0 {
                for f in sockets.joined() { Sys.close(f) }
                let reason =
                    localFD == -EADDRINUSE
                    ? "the address is in use (pick another with --ui HOST:PORT)" : Sys.errorText(localFD)
                throw StartError(
                    description: "cannot listen on \(address.host):\(address.port) for the inspector: \(reason)")
            }
            localServicePort = Sys.localPort(localFD)
            // Requests through the proxy to the service's own port are refused as addressed to the proxy itself.
            configuration.proxy.ownPorts.insert(localServicePort)
        }
        // Requests addressed to the ports actually bound are the proxy's own (set before any loop runs).
        for (listen, bound) in zip(configuration.listeners, ports) {
            configuration.proxy.ownPorts.insert(bound)
            configuration.proxy.ownHosts.insert(listen.host)
        }
        // A TLS listener's leaf for a client without SNI: its address's, `localhost` for every address.
        let tlsHosts = configuration.listeners.map { listen -> String? in
            guard listen.tls else { return nil }
            return HostName.isUnspecified(listen.host) ? "localhost" : listen.host
        }
        for (index, _) in fds.enumerated() {
            let loop = EventLoop(server: self)
            for (k, listener) in sockets.enumerated() { loop.start(listenFD: listener[index], tlsHost: tlsHosts[k]) }
            if loops.isEmpty && localFD >= 0 { loop.startLocal(listenFD: localFD) }
            loops.append(loop)
        }
        for loop in loops {
            finished.enter()
            let group = finished
            // The thread holds the server (and so its loops) until its loop has stopped: connections and loops
            // refer to their loop and server `unowned(unsafe)`.
            let thread = Thread {
                withExtendedLifetime(self) { loop.run() }
                group.leave()
            }
            thread.name = "cookie-proxy-loop"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// One listener's sockets, one per loop (SO_REUSEPORT) or one shared, and the port bound.
    private func bind(_ listen: ServerConfiguration.Listen) throws(StartError) -> ([Int32], Int) {
        var port = listen.port
        var fds: [Int32] = []
        let perLoop = configuration.poller.listenerPerLoop
        if perLoop && port != 0 {
            // Sockets bound with SO_REUSEPORT share a port with any other such socket of the same user: a second
            // proxy would silently take half of the first one's connections. A socket bound without it first
            // fails with EADDRINUSE when anything listens there; it is closed before the loops' sockets bind.
            let probe = Sys.listen(host: listen.host, port: port, reusePort: false)
            if probe >= 0 { Sys.close(probe) } else { throw Self.listenError(probe, listen.host, port) }
        }
        for index in 0..<max(1, configuration.loops) {
            let fd =
                perLoop || index == 0
                ? Sys.listen(host: listen.host, port: port, reusePort: perLoop)
                : Sys.duplicate(fds[0])
            if fd < 0 {
                for f in fds { Sys.close(f) }
                throw Self.listenError(fd, listen.host, port)
            }
            if port == 0 { port = Sys.localPort(fd) }
            fds.append(fd)
        }
        return (fds, port)
    }

    private static func listenError(_ error: Int32, _ host: String, _ port: Int) -> StartError {
        let reason =
            error == -EADDRINUSE
            ? "the address is in use (another proxy running? pick --listen HOST:PORT)"
            : error == -EINVAL ? "'\(host)' is not a numeric IPv4 or IPv6 address" : Sys.errorText(error)
        return StartError(description: "cannot listen on \(HostPort.format(host, port)): \(reason)")
    }

    /// Stops accepting, lets in-flight exchanges finish for up to `deadline` seconds, then closes the rest.
    /// Returns when every loop has stopped.
    public func shutdown(deadline: Double) {
        for loop in loops { loop.post { loop.beginDrain() } }
        if finished.wait(timeout: .now() + deadline) == .timedOut {
            for loop in loops { loop.post { loop.closeAll() } }
            _ = finished.wait(timeout: .now() + 2)
        }
    }
}
