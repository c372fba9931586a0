@testable import ProxyCore
import ExchangeFacts
import HTTPGrammar
import HTTPHeads
import Testing

/// One event loop's head storage (``HeadStorage``), shared by its connections: every head is parsed and rewritten
/// into storage the previous head used, and nothing of one head shows in another, nor does reuse change a head a
/// hook kept.
@Suite struct HeadStorageTests {
    /// What the hooks saw: each outgoing head with the bytes it serialised to then and, without keeping the
    /// head, where its received bytes and its request line lay. Responses are edited as rules edit them: the first
    /// Set-Cookie gets a new value and a line is added (`X-Lines`, the head's line count), so that each head
    /// writes lines of its own into the storage's buffer for them.
    final class Hooks: ProxyHooks, ExchangeStage, @unchecked Sendable {
        let keepHeads: Bool
        var kept: [(head: OutgoingHead, bytes: [UInt8], written: [UInt8])] = []
        var receivedAt: [UnsafeRawPointer?] = []
        /// The buffer each head's written lines went to, and the first of them while anything holds it.
        var writtenTo: [ObjectIdentifier] = []
        weak var firstWritten: EditedLines?
        init(keepHeads: Bool) { self.keepHeads = keepHeads }
        func shouldIntercept(host: String, port: Int) -> Bool { false }
        func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) { saw(head) }
        func makeStage() -> any ExchangeStage { self }
        func willForwardResponse(_ head: inout OutgoingHead, context: ExchangeContext) {
            if let i = (0..<head.count).first(where: { head.name(at: $0, is: .setCookie) }) {
                head.replaceValue(at: i, with: head.value(at: i) + Array("; Secure".utf8))
            }
            head.append(name: "X-Lines", value: String(head.count))
            saw(head)
        }
        func saw(_ head: OutgoingHead) {
            receivedAt.append(head.source.bytes.withUnsafeBytes { $0.baseAddress })
            if let buffer = head.writtenStorage {
                if writtenTo.isEmpty { firstWritten = buffer }
                writtenTo.append(ObjectIdentifier(buffer))
            }
            guard keepHeads else { return }
            var bytes: [UInt8] = []
            head.serialize(into: &bytes)
            kept.append((head, bytes, head.editedBytes))
        }
    }

    struct Connection {
        var machine: ProxyConnectionMachine
        var io = ConnectionIO()
        init(_ storage: HeadStorage, _ hooks: Hooks) {
            var configuration = ProxyConfiguration()
            configuration.ownPorts = [8080]
            machine = ProxyConnectionMachine(
                configuration: configuration, hooks: hooks, clientAddress: "127.0.0.1", requestIDs: { 1 },
                headStorage: storage)
        }
        /// A request, then its response; what went upstream and what reached the client.
        mutating func exchange(_ request: String, _ response: String) -> (upstream: String, client: String) {
            machine.clientData(Array(request.utf8)[...], &io)
            machine.upstreamConnected(reused: false, &io)
            let upstream = String(decoding: io.toUpstream, as: UTF8.self)
            machine.upstreamData(Array(response.utf8)[...], &io)
            let client = String(decoding: io.toClient, as: UTF8.self)
            io = ConnectionIO()
            return (upstream, client)
        }
    }

    /// Heads of different lengths and field counts, long ones first: a field, a line or a byte left over from the
    /// head before would show in the next one's output.
    static let requests = [
        "GET http://example.com/a-long-path?with=query HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nX-One: 1\r\nX-Two: 2\r\nUser-Agent: test\r\n\r\n",
        "GET http://example.com/b HTTP/1.1\r\nHost: example.com\r\n\r\n",
        "GET http://example.com/c HTTP/1.1\r\nHost: example.com\r\nX-Three: 3\r\n\r\n",
    ]
    static let responses = [
        "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2\r\nX-Long: \(String(repeating: "z", count: 200))\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Four: 4\r\n\r\nhey",
    ]
    static let upstream = [
        "GET /a-long-path?with=query HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nX-One: 1\r\nX-Two: 2\r\nUser-Agent: test\r\nVia: 1.1 cookie-proxy\r\n\r\n",
        "GET /b HTTP/1.1\r\nHost: example.com\r\nVia: 1.1 cookie-proxy\r\n\r\n",
        "GET /c HTTP/1.1\r\nHost: example.com\r\nX-Three: 3\r\nVia: 1.1 cookie-proxy\r\n\r\n",
    ]
    static let client = [
        "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/; Secure\r\nSet-Cookie: b=2\r\nX-Long: \(String(repeating: "z", count: 200))\r\nContent-Length: 2\r\nVia: 1.1 cookie-proxy\r\nX-Lines: 5\r\n\r\nok",
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nVia: 1.1 cookie-proxy\r\nX-Lines: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Four: 4\r\nVia: 1.1 cookie-proxy\r\nX-Lines: 3\r\n\r\nhey",
    ]

    /// Two connections of one loop, their exchanges interleaved, with and without a hook keeping every head.
    @Test(arguments: [false, true])
    func connectionsSharingTheStorageForwardOnlyTheirOwnHeads(keepHeads: Bool) {
        let storage = HeadStorage()
        let hooks = Hooks(keepHeads: keepHeads)
        var a = Connection(storage, hooks)
        var b = Connection(storage, hooks)
        for round in 0..<2 {
            for i in 0..<3 {
                let j = (i + round + 1) % 3
                let x = a.exchange(Self.requests[i], Self.responses[i])
                let y = b.exchange(Self.requests[j], Self.responses[j])
                #expect(x.upstream == Self.upstream[i])
                #expect(x.client == Self.client[i])
                #expect(y.upstream == Self.upstream[j])
                #expect(y.client == Self.client[j])
            }
        }
        // Every head a hook kept still serialises as it did when it was forwarded.
        #expect(hooks.kept.count == (keepHeads ? 24 : 0))
        for (head, bytes, written) in hooks.kept {
            var now: [UInt8] = []
            head.serialize(into: &now)
            #expect(now == bytes)
            #expect(head.editedBytes == written)
        }
    }

    /// The storage is reused: with no head kept elsewhere, each head after the first response (the largest, which
    /// grows the storage once) is received into the buffer the head before it used, and every head's lines are
    /// written into one buffer, on one connection and across two; a kept head's buffers are never reused.
    @Test(arguments: [false, true])
    func eachHeadIsReceivedIntoTheStorageOfTheOneBeforeUnlessThatIsKept(keepHeads: Bool) {
        let storage = HeadStorage()
        let hooks = Hooks(keepHeads: keepHeads)
        var a = Connection(storage, hooks)
        var b = Connection(storage, hooks)
        _ = a.exchange(Self.requests[0], Self.responses[0])
        _ = b.exchange(Self.requests[1], Self.responses[1])
        _ = a.exchange(Self.requests[2], Self.responses[2])
        let addresses = hooks.receivedAt
        #expect(addresses.count == 6)
        let distinct = { (a: ArraySlice<UnsafeRawPointer?>) in
            Set(a.map { $0.map { Int(bitPattern: $0) } ?? 0 }).count
        }
        if keepHeads {
            #expect(distinct(addresses[...]) == 6)
        } else {
            #expect(distinct(addresses[1...]) == 1)
        }
        // Every head writes lines (a request line and Via, or a Set-Cookie value, Via and X-Lines): all into one
        // buffer, alive from the first head on (a new buffer at a freed one's address would have let it go),
        // unless the heads are kept.
        #expect(hooks.writtenTo.count == 6)
        #expect(Set(hooks.writtenTo).count == (keepHeads ? 6 : 1))
        #expect(hooks.firstWritten != nil)
    }
}
