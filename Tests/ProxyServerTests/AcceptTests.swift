import HTTPGrammar
import Testing

@testable import ProxyPlatform
@testable import ProxyServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Accepting: the admission check reads the peer's loopback-ness from the socket address, and must decide as
/// ``HostName/isLoopback(_:)`` does on the address's text (which `--allow` and the log see).
@Suite struct AcceptTests {
    /// A local address that is not loopback (an interface's IPv4 address), when the machine has one.
    static let interfaceAddress: String? = {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var next = list
        while let entry = next {
            next = entry.pointee.ifa_next
            guard let sa = entry.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            var text = [CChar](repeating: 0, count: 64)
            let address = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            var copy = address
            inet_ntop(AF_INET, &copy, &text, 64)
            let found = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if !found.hasPrefix("127.") { return found }
        }
        return nil
    }()

    /// Connects from `source` to the listener on `listenHost` and accepts the connection.
    static func accept(listenHost: String, source: String) -> (address: String, loopback: Bool)? {
        let listener = Sys.listen(host: listenHost, port: 0, reusePort: false)
        guard listener >= 0 else { return nil }
        defer { Sys.close(listener) }
        let port = Sys.localPort(listener)
        let v6 = source.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var storage = sockaddr_storage()
        func fill(_ host: String, _ port: Int) -> socklen_t {
            storage = sockaddr_storage()
            return withUnsafeMutableBytes(of: &storage) { raw -> socklen_t in
                if v6 {
                    let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                    a.pointee.sin6_family = sa_family_t(AF_INET6)
                    a.pointee.sin6_port = in_port_t(UInt16(port).bigEndian)
                    inet_pton(AF_INET6, host, &a.pointee.sin6_addr)
                    return socklen_t(MemoryLayout<sockaddr_in6>.size)
                }
                let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                a.pointee.sin_family = sa_family_t(AF_INET)
                a.pointee.sin_port = in_port_t(UInt16(port).bigEndian)
                inet_pton(AF_INET, host, &a.pointee.sin_addr)
                return socklen_t(MemoryLayout<sockaddr_in>.size)
            }
        }
        var length = fill(source, 0)
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { return nil }
        // The listener's address as the client reaches it: a dual-stack "::" listener is reached at the IPv4
        // loopback mapped into IPv6 by an IPv4 client, which connects to 127.0.0.1 itself.
        let target =
            listenHost == "::" ? (v6 ? "::1" : "127.0.0.1") : listenHost == "0.0.0.0" ? "127.0.0.1" : listenHost
        length = fill(target, port)
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard connected == 0 else { return nil }
        for _ in 0..<200 {
            let (c, address, loopback) = Sys.accept(listener)
            if c >= 0 {
                Sys.close(c)
                return (address, loopback)
            }
            usleep(5000)
        }
        return nil
    }

    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1", true), ("127.0.0.1", "127.3.4.5", true), ("0.0.0.0", "127.0.0.9", true),
        ("::1", "::1", true), ("::", "127.0.0.7", true),
    ])
    func aLoopbackPeerIsKnownByItsSocketAddress(_ listenHost: String, _ source: String, _ loopback: Bool) throws {
        let accepted = try #require(Self.accept(listenHost: listenHost, source: source))
        #expect(accepted.loopback == loopback, "\(accepted.address)")
        #expect(accepted.loopback == HostName.isLoopback(accepted.address), "\(accepted.address)")
        if listenHost == "::" { #expect(accepted.address == "::ffff:\(source)") }
    }

    @Test func aPeerOnAnInterfaceAddressIsNotLoopback() throws {
        let source = try #require(Self.interfaceAddress, "this machine has an IPv4 interface besides loopback")
        let accepted = try #require(Self.accept(listenHost: "0.0.0.0", source: source))
        #expect(accepted.address == source)
        #expect(!accepted.loopback)
        #expect(!HostName.isLoopback(accepted.address))
    }
}
