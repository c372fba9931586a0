internal import CProxyShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Blocking waits and whole reads and writes on a descriptor, for the commands' helper threads (a browser's pipe,
/// a loopback client, the line server); the proxy's own sockets go through the event loops instead.
public enum Descriptors {
    /// Whether `fd` is readable (or closed) within `milliseconds`.
    public static func waitReadable(_ fd: Int32, milliseconds: Int) -> Bool {
        CProxy_poll_readable(fd, Int32(clamping: milliseconds)) > 0
    }

    /// Whether `fd` is writable (or failed) within `milliseconds`.
    public static func waitWritable(_ fd: Int32, milliseconds: Int) -> Bool {
        CProxy_poll_writable(fd, Int32(clamping: milliseconds)) > 0
    }

    /// Up to `maximum` bytes from the socket `fd`: nil when it is closed or failed, empty when nothing is there yet.
    public static func receive(_ fd: Int32, maximum: Int = 16_384) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let n = buffer.withUnsafeMutableBytes { CProxy_recv(fd, $0.baseAddress, $0.count) }
        if n > 0 { return Array(buffer[0..<n]) }
        return n == -Int(CProxy_errno_EAGAIN()) || n == -Int(CProxy_errno_EINTR()) ? [] : nil
    }

    /// Sends all of `bytes` on the socket `fd`, waiting up to `milliseconds` each time it is full; the errno of a
    /// failure, or nil.
    @discardableResult
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8], milliseconds: Int = 5000) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { CProxy_send(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                offset += n
            } else if n == -Int(CProxy_errno_EAGAIN()) || n == -Int(CProxy_errno_EINTR()) {
                guard waitWritable(fd, milliseconds: milliseconds) else { return CProxy_errno_EAGAIN() }
            } else {
                return Int32(-n)
            }
        }
        return nil
    }

    /// A listening TCP socket on the numeric `host` and `port` (0: any free one), and its port; or the errno.
    public static func listen(host: String, port: Int) -> Result<(fd: Int32, port: Int), SocketError> {
        let fd = CProxy_listen(host, Int32(port), 64, 0)
        guard fd >= 0 else { return .failure(SocketError(errno: -fd)) }
        return .success((fd, Int(CProxy_local_port(fd))))
    }

    /// A connection accepted on the listening socket `fd`, if one is waiting.
    public static func accept(_ fd: Int32) -> Int32? {
        var address = [CChar](repeating: 0, count: 64)
        var peerPort: Int32 = 0
        var loopback: Int32 = 0
        let conn = CProxy_accept(fd, &address, address.count, &peerPort, &loopback)
        return conn >= 0 ? conn : nil
    }

    /// A non-blocking TCP connection to the numeric `host` and `port`, made within `milliseconds`.
    public static func connect(host: String, port: Int, milliseconds: Int) -> Result<Int32, SocketError> {
        var inProgress: Int32 = 0
        let fd = CProxy_connect(host, Int32(port), &inProgress)
        guard fd >= 0 else { return .failure(SocketError(errno: -fd)) }
        if inProgress != 0 {
            guard waitWritable(fd, milliseconds: milliseconds) else {
                Sys.close(fd)
                return .failure(SocketError(errno: CProxy_errno_EAGAIN(), text: "no connection in time"))
            }
            // SO_ERROR is cleared by reading it: read once.
            let error = CProxy_socket_error(fd)
            guard error == 0 else {
                Sys.close(fd)
                return .failure(SocketError(errno: error))
            }
        }
        return .success(fd)
    }

}

/// A socket call that failed: its errno and text.
public struct SocketError: Error, CustomStringConvertible {
    public let errno: Int32
    public let description: String
    init(errno: Int32, text: String? = nil) {
        self.errno = errno
        self.description = text ?? Sys.errorText(-errno)
    }
}

/// Signals taken synchronously: blocked in the calling thread (and the threads it starts afterwards, which inherit
/// the mask), then waited for with a timeout.
public struct BlockedSignals {
    private var set = sigset_t()

    /// Blocks `numbers` in this thread.
    public init(_ numbers: [Int32]) {
        sigemptyset(&set)
        for n in numbers { sigaddset(&set, n) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits up to `milliseconds` for one of them: its number, or 0.
    public mutating func wait(milliseconds: Int) -> Int32 {
        max(0, CProxy_wait_signal(&set, Int32(clamping: milliseconds)))
    }
}

/// A request to a loopback server that closes the connection after its answer (the inspector does): the bytes it
/// answered, read to the end.
public enum LoopbackClient {
    public static func exchange(host: String, port: Int, request: [UInt8]) -> Result<[UInt8], SocketError> {
        let fd: Int32
        switch Descriptors.connect(host: host, port: port, milliseconds: 5000) {
        case .success(let connected): fd = connected
        case .failure(let error): return .failure(error)
        }
        defer { Sys.close(fd) }
        if let error = Descriptors.sendAll(fd, request) { return .failure(SocketError(errno: error)) }
        var response: [UInt8] = []
        while true {
            guard let bytes = Descriptors.receive(fd, maximum: 65536) else { break }
            if bytes.isEmpty {
                guard Descriptors.waitReadable(fd, milliseconds: 10_000) else {
                    return .failure(SocketError(errno: CProxy_errno_EAGAIN(), text: "no answer in time"))
                }
                continue
            }
            response += bytes
        }
        return .success(response)
    }
}
