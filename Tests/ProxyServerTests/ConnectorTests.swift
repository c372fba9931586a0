import HTTPHeads
import ProxyCore
import Testing

@testable import ProxyServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The decisions of connecting, as tables (the sockets are the end-to-end tests').
@Suite struct ConnectorTests {
    @Test(arguments: [
        ("app.test", Connector.Addresses.known(["192.0.2.1"])), ("10.0.0.1", .known(["10.0.0.1"])),
        ("::1", .known(["::1"])), ("localhost", .known(["127.0.0.1", "::1"])),
        ("web.localhost", .known(["127.0.0.1", "::1"])), ("example.com", .lookUp), ("localhost.example", .lookUp),
    ])
    func hostsWithKnownAddressesSkipTheResolver(_ host: String, _ expected: Connector.Addresses) {
        #expect(Connector.addresses(of: host, overrides: ["app.test": "192.0.2.1"]) == expected)
    }

    @Test(arguments: [
        (["127.0.0.1"], true, false, nil as [String]?), (["127.0.0.1", "192.0.2.1"], true, false, ["192.0.2.1"]),
        (["::1", "0.0.0.0", "::ffff:127.0.0.1"], true, false, nil), (["127.0.0.1"], true, true, ["127.0.0.1"]),
        (["127.0.0.1"], false, false, ["127.0.0.1"]), ([], true, false, []),
    ])
    func clientsFromTheNetworkAreNotSentToThisMachine(
        _ addresses: [String], _ fromNetwork: Bool, _ allowLoopback: Bool, _ expected: [String]?
    ) {
        #expect(
            Connector.permitted(addresses, fromNetwork: fromNetwork, allowLoopbackUpstream: allowLoopback) == expected)
    }

    @Test(arguments: [
        (ECONNREFUSED, "refused"), (ETIMEDOUT, "timed out connecting"), (0, "no address"),
        (EHOSTUNREACH, "No route to host"),
    ])
    func aFailedConnectIsNamedByItsErrno(_ errno: Int32, _ text: String) {
        let origin = Origin(host: "example.com", port: 81)
        let message = Connector.failure(errno, origin: origin, through: nil).message
        #expect(message.contains(text), "\(message)")
        #expect(message.contains("example.com:81"), "\(message)")
    }
}
