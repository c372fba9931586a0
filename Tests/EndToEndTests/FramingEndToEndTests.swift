import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The recording upstream of Fixtures/recorder.py: every byte each connection sent, in a folder of its own.
final class Recorder: Sendable {
    let process: TestProcess
    let port: Int
    let directory: String

    init() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent(
                "cp-rec-\(getpid())-\(UUID().uuidString.prefix(8))"
            )
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        process = try TestProcess(Paths.which("python3"), ["-u", Paths.fixtures + "/recorder.py", "0", directory])
        port = Int(try process.waitForLine(startingWith: "PORT ").dropFirst(5))!
    }

    /// What each connection sent, in the order the connections came.
    var connections: [[UInt8]] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted {
            Int($0.dropFirst(5).dropLast(4)) ?? 0 < Int($1.dropFirst(5).dropLast(4)) ?? 0
        }
        return names.compactMap { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }
    }

    var received: String { connections.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n--\n") }
}

/// RFC 9112 §11.2 through the real binary: a raw client sends the smuggling shapes, a recording upstream that
/// reads leniently shows exactly what reached it.
@Suite(.serialized) struct FramingEndToEndTests {
    static func send(_ proxy: Proxy, _ text: String) throws -> String {
        String(decoding: try RawClient.exchange(port: proxy.port, send: [Array(text.utf8)], timeout: 5), as: UTF8.self)
    }

    /// A refused request's connection closes in stages (RFC 9112 §9.6, nginx's lingering close): the proxy shuts
    /// its side after the `400` (the client reads the answer to the end of the stream) and drops what the client
    /// still sends until it closes. Closing at once would answer those bytes with a reset, and a client that writes
    /// before it reads (an HTTP/2 client after a GOAWAY, one that pipelines) fails on the write and never reads
    /// its answer: here the client's later writes succeed.
    @Test(arguments: [
        "POST http://127.0.0.1:9/ HTTP/1.1\\r\\nHost: 127.0.0.1:9\\r\\nTransfer-Encoding: gzip\\r\\n\\r\\n",
        "GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n",
    ])
    func aRefusedClientThatKeepsSendingIsReadUntilItCloses(_ head: String) throws {
        let proxy = try Proxy(["--quiet", "--log", "none"])
        let result = try run(Paths.which("python3"), [Paths.fixtures + "/linger_client.py", "\(proxy.port)", head])
        #expect(result.text == "HTTP/1.1 400 Bad Request\nsent\n", "\(result.text) \(result.stderr)")
    }

    @Test(arguments: [
        (
            "POST http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "400"
        ),
        (
            "POST http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nTransfer-Encoding: xchunked\r\nContent-Length: 4\r\n\r\n5c\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "400"
        ),
        (
            "POST http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nTransfer-Encoding: ,\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "400"
        ),
        (
            "POST http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nX: 1\rContent-Length: 0\r\nContent-Length: 40\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "400"
        ),
        (
            "POST http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "400"
        ),
        (
            "GET http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nX: a\r\n Content-Length: 40\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "400"
        ),
        (
            "GET http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nHost: other\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "400"
        ),
        (
            "POST http://127.0.0.1:PORT/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "400"
        ),
        (
            "POST http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nTransfer-Encoding: foo, chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            "501"
        ),
    ])
    func smugglingRequestsAreRefusedAndNeverReachTheUpstream(_ template: String, _ status: String) throws {
        let recorder = try Recorder()
        let proxy = try Proxy(["--quiet"])
        let reply = try Self.send(proxy, template.replacingOccurrences(of: "PORT", with: "\(recorder.port)"))
        #expect(reply.hasPrefix("HTTP/1.1 \(status) "), "\(reply)")
        usleep(100_000)
        #expect(recorder.connections.allSatisfy { $0.isEmpty }, "\(recorder.received)")
    }

    /// Shapes that reach the upstream only once they have one reading: chunk lines a lenient server would read
    /// otherwise are refused part-way (the upstream sees a truncated body and a close, never the smuggled request).
    @Test(arguments: [
        "5 xyz\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
        "0x5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
        "5\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
        "3;a=\"x\r\nabc\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    ])
    func invalidChunkLinesNeverLetASecondRequestThrough(_ body: String) throws {
        let recorder = try Recorder()
        let proxy = try Proxy(["--quiet"])
        let head =
            "POST http://127.0.0.1:\(recorder.port)/ HTTP/1.1\r\nHost: 127.0.0.1:\(recorder.port)\r\nTransfer-Encoding: chunked\r\n\r\n"
        let reply = try Self.send(proxy, head + body)
        #expect(reply.hasPrefix("HTTP/1.1 400 Bad Request"), "\(reply)")
        usleep(100_000)
        #expect(!recorder.received.contains("smuggled"), "\(recorder.received)")
    }

    /// What is accepted reaches the upstream with CRLF line ends and one framing field, as curl and a raw client
    /// would expect it.
    @Test func acceptedShapesReachTheUpstreamNormalised() throws {
        let recorder = try Recorder()
        let proxy = try Proxy(["--quiet"])
        let p = recorder.port
        let reply = try Self.send(
            proxy,
            "POST http://127.0.0.1:\(p)/a HTTP/1.1\nHost: 127.0.0.1:\(p)\nContent-Length: 5, 5\nConnection: close\n\nhello"
        )
        #expect(reply.hasPrefix("HTTP/1.1 200 OK"), "\(reply)")
        usleep(100_000)
        let sent = recorder.received
        #expect(sent.hasPrefix("POST /a HTTP/1.1\r\nHost: 127.0.0.1:\(p)\r\n"), "\(sent)")
        #expect(sent.contains("\r\nContent-Length: 5\r\n"))
        #expect(!sent.contains("5, 5"))
        #expect(!sent.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        #expect(sent.hasSuffix("\r\n\r\nhello"))
        // A real client's chunked upload goes through untouched.
        let upload = try curl([
            "-x", proxy.url, "-H", "Transfer-Encoding: chunked", "--data-binary", "payload",
            "http://127.0.0.1:\(p)/upload",
        ])
        #expect(upload.text == "ok")
        usleep(100_000)
        #expect(recorder.received.contains("\r\nTransfer-Encoding: chunked\r\n"))
        #expect(recorder.received.contains("\r\n\r\n7\r\npayload\r\n0\r\n\r\n"))
    }

    @Test(arguments: [
        ("/resp/bare-cr", "HTTP/1.1 502 Bad Gateway", "CR not followed by LF"),
        ("/resp/101", "HTTP/1.1 502 Bad Gateway", "switched protocols without being asked"),
    ])
    func responsesWithTwoReadingsAreA502NamingTheUpstream(_ path: String, _ status: String, _ reason: String) throws {
        let recorder = try Recorder()
        let proxy = try Proxy(["--quiet"])
        let result = try curl(["-i", "-x", proxy.url, "http://127.0.0.1:\(recorder.port)\(path)"])
        #expect(result.text.hasPrefix(status), "\(result.text)")
        #expect(result.text.contains("127.0.0.1:\(recorder.port)"))
        #expect(result.text.contains(reason))
        #expect(!result.text.contains("smuggled"))
    }

    @Test func responsesAreForwardedWithOneFramingFieldAndCRLF() throws {
        let recorder = try Recorder()
        let proxy = try Proxy(["--quiet"])
        let base = "http://127.0.0.1:\(recorder.port)"
        let both = try curl(["-i", "-x", proxy.url, base + "/resp/cl-te"])
        #expect(both.text.contains("Transfer-Encoding: chunked\r\n"))
        #expect(!both.text.lowercased().contains("content-length"))
        #expect(both.text.hasSuffix("\r\n\r\nok"))
        let bareLF = try RawClient.exchange(
            port: proxy.port,
            send: [
                Array(
                    "GET \(base)/resp/bare-lf HTTP/1.1\r\nHost: 127.0.0.1:\(recorder.port)\r\nConnection: close\r\n\r\n"
                        .utf8)
            ])
        let text = String(decoding: bareLF, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\nSet-Cookie: a=b; Path=/\r\nContent-Length: 2\r\n"), "\(text)")
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
    }

    /// `--reverse`: every request goes to the upstream, whatever host it names; CONNECT is 405; nothing ever
    /// connects anywhere else (a decoy listener on another port stays untouched).
    @Test func reverseModeConnectsToNothingButItsUpstream() throws {
        let upstream = try Recorder()
        let decoy = try Recorder()
        let proxy = try Proxy(["--quiet", "--reverse", "http://127.0.0.1:\(upstream.port)"])
        let d = decoy.port
        let requests = [
            "GET http://127.0.0.1:\(d)/abs HTTP/1.1\r\nHost: 127.0.0.1:\(d)\r\nConnection: close\r\n\r\n",
            "GET https://127.0.0.1:\(d)/abs-https HTTP/1.1\r\nHost: 127.0.0.1:\(d)\r\nConnection: close\r\n\r\n",
            "GET /origin-form HTTP/1.1\r\nHost: 127.0.0.1:\(d)\r\nConnection: close\r\n\r\n",
            "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:\(d)\r\nConnection: close\r\n\r\n",
        ]
        for request in requests {
            let reply = try Self.send(proxy, request)
            #expect(reply.hasPrefix("HTTP/1.1 200 OK"), "\(request): \(reply)")
        }
        let connect = try Self.send(proxy, "CONNECT 127.0.0.1:\(d) HTTP/1.1\r\nHost: 127.0.0.1:\(d)\r\n\r\n")
        #expect(connect.hasPrefix("HTTP/1.1 405 Method Not Allowed"), "\(connect)")
        #expect(connect.contains("Allow: "))
        usleep(150_000)
        #expect(decoy.connections.isEmpty, "\(decoy.received)")
        let seen = upstream.received
        for path in ["GET /abs HTTP/1.1", "GET /abs-https HTTP/1.1", "GET /origin-form HTTP/1.1", "OPTIONS * HTTP/1.1"]
        {
            #expect(seen.contains(path + "\r\n"), "\(seen)")
        }
    }
}
