internal import CProxyShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Blocking waits and whole reads and writes on a descriptor, for the commands' helper threads (a browser's pipe,
/// a loopback client, the line server); the proxy's own sockets go through the event loops instead. Built on the
/// shell's socket calls (``Sys``) and its one send loop (``Sys/send(_:_:_:_:)``).
public enum Descriptors {
    /// Whether `fd` is readable (or closed) within `milliseconds`.
    public static func waitReadable(_ fd: Int32, milliseconds: Int) -> Bool {
        CProxy_poll_readable(fd, Int32(clamping: milliseconds)) > 0
    }

    /// Whether `fd` is writable (or failed) within `milliseconds`.
    public static func waitWritable(_ fd: Int32, milliseconds: Int) -> Bool {
        CProxy_poll_writable(fd, Int32(clamping: milliseconds)) > 0
    }

    /// What one read of a socket gave.
    public enum Received {
        case bytes([UInt8])
        /// Nothing there yet (EAGAIN, EINTR).
        case none
        /// The peer closed its side.
        case closed
        case failed(SocketError)
    }

    /// One read of up to `maximum` bytes from the socket `fd`.
    public static func receive(_ fd: Int32, maximum: Int = 16_384) -> Received {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let n = buffer.withUnsafeMutableBytes { Sys.recv(fd, $0) }
        if n > 0 { return .bytes(Array(buffer[0..<n])) }
        if n == 0 { return .closed }
        let error = Int32(-n)
        return error == Sys.EAGAIN || error == Sys.EINTR ? .none : .failed(SocketError(errno: error))
    }

    /// Sends all of `bytes` on the socket `fd`, waiting up to `milliseconds` each time it is full.
    @discardableResult
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8], milliseconds: Int = 5000) -> SocketError? {
        var buffer = bytes
        var sent = 0
        var progress = false
        while true {
            if let error = Sys.send(fd, &buffer, &sent, &progress) { return SocketError(errno: error) }
            if buffer.isEmpty { return nil }
            guard waitWritable(fd, milliseconds: milliseconds) else {
                return SocketError(errno: Sys.EAGAIN, text: "the peer took nothing in time")
            }
        }
    }

    /// A listening TCP socket on the numeric `host` and `port` (0: any free one), and its port.
    public static func listen(host: String, port: Int) -> Result<(fd: Int32, port: Int), SocketError> {
        let fd = Sys.listen(host: host, port: port, reusePort: false)
        guard fd >= 0 else { return .failure(SocketError(errno: -fd)) }
        return .success((fd, Sys.localPort(fd)))
    }

    /// A connection accepted on the listening socket `fd`, if one is waiting.
    public static func accept(_ fd: Int32) -> Int32? {
        let conn = Sys.accept(fd).fd
        return conn >= 0 ? conn : nil
    }

    /// A non-blocking TCP connection to the numeric `host` and `port`, made within `milliseconds`.
    public static func connect(host: String, port: Int, milliseconds: Int) -> Result<Int32, SocketError> {
        let (fd, inProgress) = Sys.connect(host, port)
        guard fd >= 0 else { return .failure(SocketError(errno: -fd)) }
        if inProgress {
            guard waitWritable(fd, milliseconds: milliseconds) else {
                Sys.close(fd)
                return .failure(SocketError(errno: Sys.EAGAIN, text: "no connection in time"))
            }
            // SO_ERROR is cleared by reading it: read once.
            let error = Sys.socketError(fd)
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
    package init(errno: Int32, text: String? = nil) {
        self.errno = errno
        self.description = text ?? Sys.errorText(-errno)
    }
}
