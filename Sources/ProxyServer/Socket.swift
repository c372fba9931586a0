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

    static func accept(_ fd: Int32) -> (fd: Int32, address: String, port: Int) {
        var buffer = [CChar](repeating: 0, count: 64)
        var port: Int32 = 0
        let c = CProxy_accept(fd, &buffer, 64, &port)
        let address = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return (c, address, Int(port))
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
    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

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

/// An epoll instance (level-triggered) and an eventfd to wake it from other threads.
final class Poller {
    let epfd: Int32
    let wakeFD: Int32
    static let wakeToken: UInt64 = .max
    static let readable = CProxy_EPOLLIN | CProxy_EPOLLRDHUP
    static let writable = CProxy_EPOLLOUT
    static let hangup = CProxy_EPOLLHUP | CProxy_EPOLLERR
    private var events = [CProxy_Event](repeating: CProxy_Event(), count: 256)

    init() {
        epfd = CProxy_epoll_create()
        wakeFD = CProxy_eventfd()
        precondition(epfd >= 0 && wakeFD >= 0, "cannot create epoll/eventfd")
        _ = CProxy_epoll_ctl(epfd, 0, wakeFD, CProxy_EPOLLIN, Self.wakeToken)
    }

    deinit {
        Sys.close(epfd)
        Sys.close(wakeFD)
    }

    func add(_ fd: Int32, _ events: UInt32, token: UInt64) { _ = CProxy_epoll_ctl(epfd, 0, fd, events, token) }
    func modify(_ fd: Int32, _ events: UInt32, token: UInt64) { _ = CProxy_epoll_ctl(epfd, 1, fd, events, token) }

    func wake() { _ = CProxy_eventfd_signal(wakeFD) }
    func drainWake() { _ = CProxy_eventfd_drain(wakeFD) }

    /// Waits for events; calls `body(token, events)` for each.
    func wait(timeoutMilliseconds: Int32, _ body: (UInt64, UInt32) -> Void) {
        let n = events.withUnsafeMutableBufferPointer {
            CProxy_epoll_wait(epfd, $0.baseAddress, 256, timeoutMilliseconds)
        }
        guard n > 0 else { return }
        for i in 0..<Int(n) { body(events[i].token, events[i].events) }
    }
}
