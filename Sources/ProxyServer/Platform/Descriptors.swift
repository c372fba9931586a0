internal import CProxyShims
import ProxyCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Blocking waits and whole reads and writes on a descriptor, for the commands' helper threads (a browser's pipe,
/// a loopback client, the line server); the proxy's own sockets go through the event loops instead. Built on the
/// shell's socket calls (``Sys``) and its one send loop (``Outbound/send(_:_:_:_:)``).
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
            if let error = Outbound.send(fd, &buffer, &sent, &progress) { return SocketError(errno: error) }
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

/// An HTTP/1.1 request to a loopback server (the inspector, a browser's WebDriver): its answer's status and body.
/// The answer ends at its Content-Length, or where the server closes (a server that keeps the connection open
/// after a sized answer is not waited for); each wait for more is at most `milliseconds`.
public enum LoopbackClient {
    public static func exchange(host: String, port: Int, request: [UInt8], milliseconds: Int = 10_000) -> Result<
        (status: Int, body: ArraySlice<UInt8>), SocketError
    > {
        let fd: Int32
        switch Descriptors.connect(host: host, port: port, milliseconds: 5000) {
        case .success(let connected): fd = connected
        case .failure(let error): return .failure(error)
        }
        defer { Sys.close(fd) }
        if let error = Descriptors.sendAll(fd, request) { return .failure(error) }
        var response: [UInt8] = []
        // Read with the proxy's own codec: the head, then its Content-Length (when it has one).
        var parser = HTTPHeadParser()
        var head: (status: Int, end: Int, length: Int?)? = nil
        func answer() -> Result<(status: Int, body: ArraySlice<UInt8>), SocketError> {
            guard let head else { return .failure(SocketError(errno: EPROTO, text: "not an HTTP response")) }
            let end = head.length.map { min(response.count, head.end + $0) } ?? response.count
            return .success((head.status, response[head.end..<end]))
        }
        while true {
            if let h = head, let length = h.length, response.count >= h.end + length { return answer() }
            switch Descriptors.receive(fd, maximum: 65536) {
            case .bytes(let bytes):
                response += bytes
                if head == nil, let end = try? parser.headLength(response[...]) {
                    guard let parsed = try? parser.parseResponse(Array(response[..<end])) else { return answer() }
                    let length = parsed.head.values(.contentLength).first.flatMap { Int($0) }
                    head = (parsed.status, end, length)
                }
            case .closed: return answer()
            case .failed(let error): return .failure(error)
            case .none:
                guard Descriptors.waitReadable(fd, milliseconds: milliseconds) else {
                    return .failure(SocketError(errno: Sys.EAGAIN, text: "no answer in time"))
                }
            }
        }
    }
}
