import HTTPHeads
import Testing

@testable import ProxyCore

/// An idle keep-alive connection holds nothing of its last exchange (the exchange is stored in the machine, not
/// freed with an object of its own): not its context, not a request head too large to be kept as the next one's
/// spare; after a response and after an answer of the proxy's own alike.
@Suite struct IdleConnectionTests {
    enum End: CaseIterable { case response, answer }

    @Test(arguments: [100, 20_000], End.allCases)
    func anIdleConnectionKeepsNothingOfItsLastExchange(_ padding: Int, _ end: End) {
        var configuration = ProxyConfiguration()
        configuration.ownPorts = [8080]
        var machine = ProxyConnectionMachine(
            configuration: configuration, clientAddress: "127.0.0.1", requestIDs: { 1 })
        var io = ConnectionIO()
        let pad = String(repeating: "p", count: padding)
        let request = "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX-Pad: \(pad)\r\n\r\n"
        machine.clientData(Array(request.utf8)[...], &io)
        #expect(machine.exchange.context.host == "example.com")
        switch end {
        case .response:
            machine.upstreamConnected(reused: false, &io)
            machine.upstreamData(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)[...], &io)
            #expect(String(decoding: io.toClient, as: UTF8.self).hasSuffix("\r\n\r\nok"))
        case .answer:
            machine.upstreamFailed(.refused(Origin(host: "example.com", port: 80)), &io)
            #expect(String(decoding: io.toClient, as: UTF8.self).hasPrefix("HTTP/1.1 502 "))
        }
        #expect(machine.phase == .idle)
        #expect(machine.exchange.context.host.isEmpty)
        #expect(machine.exchange.requestHeadBytes.capacity < 16384)
    }
}
