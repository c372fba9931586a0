internal import CProxyShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thin Swift wrappers over the C shims; errors are negative errno values as the shims return them.
package enum Sys {
    package static let EAGAIN = CProxy_errno_EAGAIN()
    package static let EINTR = CProxy_errno_EINTR()

    package static func errorText(_ negativeErrno: Int32) -> String { String(cString: strerror(-negativeErrno)) }

    package static func listen(host: String, port: Int, reusePort: Bool) -> Int32 {
        CProxy_listen(host, Int32(port), 1024, reusePort ? 1 : 0)
    }

    /// The accepted descriptor (or -errno), the peer's numeric address, and whether it is a loopback address
    /// (decided on the socket address, as ``HostName/isLoopback(_:)`` decides on its text).
    package static func accept(_ fd: Int32) -> (fd: Int32, address: String, loopback: Bool) {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            var port: Int32 = 0
            var loopback: Int32 = 0
            let c = CProxy_accept(fd, buffer.baseAddress!, 64, &port, &loopback)
            guard c >= 0 else { return (c, "", false) }
            return (c, String(cString: buffer.baseAddress!), loopback != 0)
        }
    }

    package static func connect(_ numericHost: String, _ port: Int) -> (fd: Int32, inProgress: Bool) {
        var inProgress: Int32 = 0
        let fd = CProxy_connect(numericHost, Int32(port), &inProgress)
        return (fd, inProgress != 0)
    }

    package static func socketError(_ fd: Int32) -> Int32 { CProxy_socket_error(fd) }
    package static func localPort(_ fd: Int32) -> Int { Int(CProxy_local_port(fd)) }
    package static func setNoDelay(_ fd: Int32) { _ = CProxy_set_nodelay(fd) }

    package static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        Int(CProxy_send(fd, bytes.baseAddress, bytes.count))
    }

    package static func recv(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        Int(CProxy_recv(fd, buffer.baseAddress, buffer.count))
    }

    package static func shutdownWrite(_ fd: Int32) { _ = CProxy_shutdown_write(fd) }
    /// Makes the next ``close(_:)`` of `fd` a reset (SO_LINGER 0) rather than an orderly close.
    package static func resetOnClose(_ fd: Int32) { _ = CProxy_set_reset_on_close(fd) }
    package static func close(_ fd: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(fd)
        #elseif canImport(Darwin)
            _ = Darwin.close(fd)
        #endif
    }

    /// Another descriptor of the same open socket (close-on-exec), or -errno.
    package static func duplicate(_ fd: Int32) -> Int32 {
        let d = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        return d < 0 ? -errno : d
    }

    /// Resolves a host name (blocking). Numeric addresses, IPv4 first; or an error text.
    package static func resolve(_ host: String) -> Result<[String], ResolveError> {
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

    package struct ResolveError: Error {
        package var reason: String
    }

    /// Sends `buffer[sent...]` on `fd`; the errno when the socket failed. A buffer sent whole is emptied (its
    /// storage kept); one sent far into is compacted.
    package static func send(_ fd: Int32, _ buffer: inout [UInt8], _ sent: inout Int, _ progress: inout Bool) -> Int32?
    {
        while sent < buffer.count {
            let s = sent
            let n = buffer.withUnsafeBytes { Sys.send(fd, UnsafeRawBufferPointer(rebasing: $0[s...])) }
            if n > 0 {
                sent += n
                progress = true
            } else if Int32(-n) == Sys.EAGAIN || Int32(-n) == Sys.EINTR {
                break
            } else {
                return Int32(-n)
            }
        }
        if sent == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            sent = 0
        } else if sent > 256 * 1024 {
            buffer.removeFirst(sent)
            sent = 0
        }
        return nil
    }
}
