import Foundation
import ProxyTLS
import Testing

/// A client and a server engine joined in memory (no socket): what one drains, the other is fed.
@Suite struct TLSEnginePairTests {
    /// A CA made for the test in a folder of its own, and the client context that trusts it.
    struct Setup {
        let directory: String
        let server: TLSServerContext
        let trusting: TLSClientContext
        let defaultTrust: TLSClientContext

        init() throws {
            directory = NSTemporaryDirectory() + "tls-pair-\(UUID().uuidString)"
            let ca = try CertificateAuthority.create(in: directory, force: false, commonName: "cookie-proxy test CA")
            server = try TLSServerContext(leaves: try LeafCache(ca: ca))
            trusting = try TLSClientContext(extraCAFile: ca.certificatePath)
            defaultTrust = try TLSClientContext(extraCAFile: nil)
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Moves ciphertext both ways until neither side has anything more to say; the handshake statuses at the end.
    static func handshake(_ client: TLSEngine, _ server: TLSEngine) -> (TLSEngine.Status, TLSEngine.Status) {
        var clientStatus = TLSEngine.Status.ok
        var serverStatus = TLSEngine.Status.ok
        for _ in 0..<20 {
            if !client.handshakeComplete { clientStatus = client.handshake() }
            var bytes: [UInt8] = []
            client.drainCiphertext(into: &bytes)
            if !bytes.isEmpty { server.feed(bytes[...]) }
            if !server.handshakeComplete { serverStatus = server.handshake() }
            var back: [UInt8] = []
            server.drainCiphertext(into: &back)
            if !back.isEmpty { client.feed(back[...]) }
            if bytes.isEmpty && back.isEmpty && (client.handshakeComplete || clientStatus != .ok) { break }
        }
        return (clientStatus, serverStatus)
    }

    static func send(_ text: String, from a: TLSEngine, to b: TLSEngine) -> String {
        _ = a.write(Array(text.utf8)[...])
        var cipher: [UInt8] = []
        a.drainCiphertext(into: &cipher)
        b.feed(cipher[...])
        var plain: [UInt8] = []
        _ = b.readPlaintext(into: &plain)
        return String(decoding: plain, as: UTF8.self)
    }

    @Test(arguments: ["app.test", "127.0.0.1", "::1"])
    func aClientThatTrustsTheCAGetsALeafForTheHostItNamed(_ host: String) throws {
        let setup = try Setup()
        defer { setup.remove() }
        let client = try TLSEngine(client: setup.trusting, host: host, insecure: false)
        let server = try TLSEngine(server: setup.server, connectHost: host)
        let (clientStatus, serverStatus) = Self.handshake(client, server)
        #expect(clientStatus == .ok)
        #expect(serverStatus == .ok)
        #expect(client.handshakeComplete && server.handshakeComplete)
        #expect(Self.send("GET / HTTP/1.1\r\n\r\n", from: client, to: server) == "GET / HTTP/1.1\r\n\r\n")
        #expect(Self.send("HTTP/1.1 200 OK\r\n\r\n", from: server, to: client) == "HTTP/1.1 200 OK\r\n\r\n")
    }

    /// A client refuses a leaf it cannot verify, and says why: one that does not trust the CA, and one that
    /// expects another name (without SNI, as from an IP-literal client, the leaf names the CONNECT host).
    @Test(arguments: [(true, "192.0.2.1", "app.test"), (false, "app.test", "app.test")])
    func aLeafTheClientCannotVerifyFailsTheHandshakeWithTheReason(
        _ trustsTheCA: Bool, _ clientHost: String, _ connectHost: String
    ) throws {
        let setup = try Setup()
        defer { setup.remove() }
        let client = try TLSEngine(
            client: trustsTheCA ? setup.trusting : setup.defaultTrust, host: clientHost, insecure: false)
        let server = try TLSEngine(server: setup.server, connectHost: connectHost)
        let (status, _) = Self.handshake(client, server)
        guard case .failed(let reason) = status else {
            Issue.record("a leaf for \(connectHost) was accepted by a client for \(clientHost): \(status)")
            return
        }
        #expect(reason.contains("certificate verification failed"), "\(reason)")
    }

    /// A host the certificate syntax could misread (a comma adds SAN entries) gets no leaf, and the server's
    /// failure says so rather than OpenSSL's generic one.
    @Test(arguments: ["a,DNS:evil.example", "exa mple.test"])
    func aHostThatIsNoHostNameGetsNoLeafAndTheFailureSaysWhy(_ host: String) throws {
        let setup = try Setup()
        defer { setup.remove() }
        // A client without SNI (an IP literal) makes the server mint for the CONNECT host.
        let ipClient = try TLSEngine(client: setup.trusting, host: "127.0.0.1", insecure: true)
        let server = try TLSEngine(server: setup.server, connectHost: host)
        let (_, serverStatus) = Self.handshake(ipClient, server)
        guard case .failed(let reason) = serverStatus else {
            Issue.record("a leaf was minted for \(host.debugDescription): \(serverStatus)")
            return
        }
        #expect(reason.contains("no certificate for"), "\(reason)")
        #expect(reason.contains("not a host name"), "\(reason)")
    }
}
