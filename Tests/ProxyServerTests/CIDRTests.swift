import HTTPGrammar
@testable import ProxyServer
import Testing

/// `--allow CIDR`: which client addresses a network admits.
@Suite struct CIDRTests {
    @Test(arguments: [
        ("192.168.1.0/24", "192.168.1.77", true), ("192.168.1.0/24", "192.168.2.1", false),
        ("10.0.0.0/8", "10.255.0.1", true), ("0.0.0.0/0", "203.0.113.9", true), ("192.168.1.5", "192.168.1.5", true),
        ("192.168.1.5", "192.168.1.6", false), ("192.168.1.0/24", "::ffff:192.168.1.9", true),
        ("fd00::/8", "fd12:3456::1", true), ("fd00::/8", "fe80::1", false), ("::1/128", "::1", true),
        ("2001:db8::/32", "2001:db8:0:0:0:0:0:1", true),
    ])
    func networksAdmitTheirAddressesOnly(_ network: String, _ address: String, _ admitted: Bool) throws {
        let cidr = try #require(CIDR(network))
        #expect(cidr.contains(address) == admitted)
    }

    @Test(arguments: ["192.168.1.0/33", "300.1.1.1/8", "not-an-address", "fd00::/129", "1.2.3/24", ""])
    func invalidNetworksAreRefused(_ text: String) {
        #expect(CIDR(text) == nil)
    }
}

/// Which addresses are this machine's own: clients (as the shim formats accepted peers) and upstream addresses a
/// client from the network may not be sent to.
@Suite struct LocalAddressTests {
    @Test(arguments: [
        ("127.0.0.1", true), ("127.10.20.30", true), ("::1", true), ("::ffff:127.0.0.1", true), ("10.0.0.1", false),
        ("1.127.0.0", false), ("::2", false), ("::ffff:10.0.0.1", false), ("fe80::1", false),
    ])
    func acceptedPeersOnLoopback(_ address: String, _ loopback: Bool) {
        #expect(HostName.isLoopback(address) == loopback)
    }

    @Test(arguments: [
        ("127.0.0.1", true), ("127.255.255.254", true), ("::1", true), ("0.0.0.0", true), ("0.1.2.3", true),
        ("::", true), ("0:0:0:0:0:0:0:1", true), ("::ffff:127.0.0.1", true), ("192.168.1.10", false),
        ("2001:db8::1", false),
    ])
    func upstreamAddressesThatReachThisMachineOnly(_ address: String, _ local: Bool) {
        #expect(LocalAddress.reachesThisMachineOnly(address) == local)
    }
}
