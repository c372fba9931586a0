internal import CProxyShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thin Swift wrappers over the C shims; errors are negative errno values as the shims return them.
enum Sys {
    static let EAGAIN = CProxy_errno_EAGAIN()
    static let EINTR = CProxy_errno_EINTR()

    static func errorText(_ negativeErrno: Int32) -> String { String(cString: strerror(-negativeErrno)) }

    static func listen(host: String, port: Int, reusePort: Bool) -> Int32 {
        CProxy_listen(host, Int32(port), 1024, reusePort ? 1 : 0)
    }

    /// The accepted descriptor (or -errno), the peer's numeric address, and whether it is a loopback address
    /// (decided on the socket address, as ``HostName/isLoopback(_:)`` decides on its text).
    static func accept(_ fd: Int32) -> (fd: Int32, address: String, loopback: Bool) {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            var port: Int32 = 0
            var loopback: Int32 = 0
            let c = CProxy_accept(fd, buffer.baseAddress!, 64, &port, &loopback)
            guard c >= 0 else { return (c, "", false) }
            return (c, String(cString: buffer.baseAddress!), loopback != 0)
        }
    }

    static func connect(_ numericHost: String, _ port: Int) -> (fd: Int32, inProgress: Bool) {
        var inProgress: Int32 = 0
        let fd = CProxy_connect(numericHost, Int32(port), &inProgress)
        return (fd, inProgress != 0)
    }

    static func socketError(_ fd: Int32) -> Int32 { CProxy_socket_error(fd) }
    static func localPort(_ fd: Int32) -> Int { Int(CProxy_local_port(fd)) }
    static func setNoDelay(_ fd: Int32) { _ = CProxy_set_nodelay(fd) }

    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        Int(CProxy_send(fd, bytes.baseAddress, bytes.count))
    }

    static func recv(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        Int(CProxy_recv(fd, buffer.baseAddress, buffer.count))
    }

    static func shutdownWrite(_ fd: Int32) { _ = CProxy_shutdown_write(fd) }
    /// Makes the next ``close(_:)`` of `fd` a reset (SO_LINGER 0) rather than an orderly close.
    static func resetOnClose(_ fd: Int32) { _ = CProxy_set_reset_on_close(fd) }
    static func close(_ fd: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(fd)
        #elseif canImport(Darwin)
            _ = Darwin.close(fd)
        #endif
    }

    /// Another descriptor of the same open socket (close-on-exec), or -errno.
    static func duplicate(_ fd: Int32) -> Int32 {
        let d = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        return d < 0 ? -errno : d
    }

    /// Resolves a host name (blocking). Numeric addresses, IPv4 first; or an error text.
    static func resolve(_ host: String) -> Result<[String], ResolveError> {
        var out = [CChar](repeating: 0, count: 64 * 8)
        let n = CProxy_resolve(host, &out, 8)
        if n < 0 {
            return .failure(ResolveError(reason: String(cString: CProxy_gai_strerror(n))))
        }
        if n == 0 { return .failure(ResolveError(reason: "no addresses")) }
        return .success(
            (0..<Int(n)).map { i in
                out.withUnsafeBufferPointer { String(cString: $0.baseAddress! + 64 * i) }
            })
    }

    struct ResolveError: Error {
        var reason: String
    }
}

/// Which system interface waits for the loops' events.
public enum PollerKind: String, Sendable, CaseIterable {
    case epoll, kqueue, poll

    /// epoll on Linux, kqueue on macOS and the BSDs.
    public static var native: PollerKind {
        switch CProxy_poller_native_kind() {
        case Int32(CPROXY_POLLER_EPOLL): .epoll
        case Int32(CPROXY_POLLER_KQUEUE): .kqueue
        default: .poll
        }
    }

    /// `COOKIE_PROXY_POLLER` (epoll, kqueue or poll), else the native one; a value this system lacks is an error.
    public static func fromEnvironment(_ environment: [String: String]) -> Result<PollerKind, PollerError> {
        guard let text = environment["COOKIE_PROXY_POLLER"], !text.isEmpty else { return .success(native) }
        guard let kind = PollerKind(rawValue: text) else {
            return .failure(PollerError(description: "COOKIE_PROXY_POLLER=\(text): say epoll, kqueue or poll"))
        }
        guard kind == .poll || kind == native else {
            return .failure(
                PollerError(description: "COOKIE_PROXY_POLLER=\(text): this system has \(native.rawValue) and poll"))
        }
        return .success(kind)
    }

    var code: Int32 {
        switch self {
        case .epoll: Int32(CPROXY_POLLER_EPOLL)
        case .kqueue: Int32(CPROXY_POLLER_KQUEUE)
        case .poll: Int32(CPROXY_POLLER_POLL)
        }
    }

    /// Whether each loop can have a listening socket of its own (SO_REUSEPORT shares connections between them, on
    /// Linux). Elsewhere, and with the portable poll poller (so that this path runs on Linux too), the loops share
    /// one listening socket, each through a descriptor of its own.
    var listenerPerLoop: Bool { self != .poll && CProxy_reuseport_balances() != 0 }
}

public struct PollerError: Error, CustomStringConvertible {
    public var description: String
}

/// A level-triggered poller (CProxyShims: epoll, kqueue or poll) with a wake-up other threads may signal.
final class Poller {
    private let handle: OpaquePointer
    let kind: PollerKind
    static let wakeToken: UInt64 = .max
    static let readable = CProxy_EV_IN | CProxy_EV_RDHUP
    static let writable = CProxy_EV_OUT
    static let hangup = CProxy_EV_HUP | CProxy_EV_ERR
    private var events = [CProxy_Event](repeating: CProxy_Event(), count: 256)

    init(kind: PollerKind) {
        var created: OpaquePointer?
        let rc = CProxy_poller_create(kind.code, &created)
        precondition(rc == 0 && created != nil, "cannot create the \(kind.rawValue) poller: \(Sys.errorText(rc))")
        handle = created!
        self.kind = kind
    }

    deinit { CProxy_poller_destroy(handle) }

    func add(_ fd: Int32, _ events: UInt32, token: UInt64) { _ = CProxy_poller_add(handle, fd, events, token) }
    func modify(_ fd: Int32, _ events: UInt32, token: UInt64) {
        _ = CProxy_poller_modify(handle, fd, events, token)
    }
    /// Before `fd` is closed.
    func remove(_ fd: Int32) { _ = CProxy_poller_remove(handle, fd) }

    func wake() { _ = CProxy_poller_wake(handle) }
    func drainWake() { _ = CProxy_poller_drain_wake(handle) }

    /// Waits for events; calls `body(token, events)` for each.
    func wait(timeoutMilliseconds: Int32, _ body: (UInt64, UInt32) -> Void) {
        let n = events.withUnsafeMutableBufferPointer {
            CProxy_poller_wait(handle, $0.baseAddress, 256, timeoutMilliseconds)
        }
        guard n > 0 else { return }
        for i in 0..<Int(n) { body(events[i].token, events[i].events) }
    }
}
