@testable import ProxyCore
import HTTPHeads
import Testing

@Suite struct HTTPCodecTests {
    static let request = Array(
        "GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\nX-Odd:  spaced value \r\nSet-Cookie: x\r\n\r\nBODY"
            .utf8)

    /// The parser finds the same head whether bytes come one at a time or all at once.
    @Test(arguments: [1, 2, 7, 1000])
    func headIsFoundTheSameWayWhateverTheChunkSize(_ chunk: Int) throws {
        var parser = HTTPHeadParser()
        var buffer: [UInt8] = []
        var found: Int? = nil
        var offset = 0
        while found == nil && offset < Self.request.count {
            buffer += Self.request[offset..<min(offset + chunk, Self.request.count)]
            offset += chunk
            found = try parser.headLength(buffer[...])
        }
        let length = try #require(found)
        #expect(length == Self.request.count - 4)
        let head = try parser.parseRequest(Array(buffer[0..<length]))
        #expect(head.method == "GET")
        #expect(head.target == "http://example.com/a?b")
        #expect(head.version == .http1_1)
        #expect(head.head.fields.count == 3)
        #expect(head.head.value(head.head.fields[1]) == "spaced value")
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", "invalid character in header field name", 20),
        ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", "obsolete line folding in header field", 25),
        ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", "header line without a colon", 16),
        ("GET /  HTTP/1.1\r\n\r\n", "request line is not 'METHOD target HTTP/1.1'", 0),
        ("GET / HTTP/2.0\r\n\r\n", "unsupported HTTP version", 6),
        ("G(T / HTTP/1.1\r\n\r\n", "invalid method", 0),
        ("GET / HTTP/1.1\r\n: empty\r\n\r\n", "header field with an empty name", 16),
        ("GET / HTTP/1.1\r\nA: b\u{01}c\r\n\r\n", "control character in header field value", 20),
        ("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", "CR not followed by LF in message head", 20),
        ("GET /\u{7F} HTTP/1.1\r\n\r\n", "invalid request target", 5),
    ])
    func malformedRequestHeadsAreRefusedWithAReason(_ text: String, _ reason: String, _ offset: Int) {
        let parser = HTTPHeadParser()
        #expect(throws: HTTPParseError(kind: .malformed, description: reason, offset: offset)) {
            try parser.parseRequest(Array(text.utf8))
        }
    }

    @Test func oversizedHeadsAreRefusedBeforeTheyEnd() {
        var parser = HTTPHeadParser(limits: HTTPParserLimits(maximumHeadBytes: 1024, maximumFieldCount: 10))
        let big = Array(("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 2000)).utf8)
        #expect(throws: HTTPParseError.self) { _ = try parser.headLength(big[...]) }
    }

    @Test(
        arguments: [
            ("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", nil),
            ("Transfer-Encoding: gzip\r\n", nil),
            ("Content-Length: 5\r\nContent-Length: 6\r\n", nil),
            ("Content-Length: -1\r\n", nil),
            ("Content-Length: 5, 5\r\n", BodyFraming.contentLength(5)),
            ("Content-Length: 0\r\n", BodyFraming.none),
            ("Transfer-Encoding: gzip, chunked\r\n", BodyFraming.chunked),
            ("", BodyFraming.none),
        ] as [(String, BodyFraming?)])
    func requestFramingRefusesSmugglingShapes(_ fields: String, _ expected: BodyFraming?) throws {
        let head = try HTTPHeadParser().parseHead(Array("POST / HTTP/1.1\r\n\(fields)\r\n".utf8))
        if let expected {
            #expect(try BodyFraming.forRequest(head) == expected)
        } else {
            #expect(throws: HTTPParseError.self) { try BodyFraming.forRequest(head) }
        }
    }

    @Test(arguments: [
        ("HEAD", 200, "Content-Length: 10\r\n", BodyFraming.none),
        ("GET", 204, "", .none), ("GET", 304, "Content-Length: 10\r\n", .none), ("GET", 101, "", .none),
        ("GET", 200, "", .untilClose), ("GET", 200, "Transfer-Encoding: chunked\r\n", .chunked),
        ("GET", 200, "Content-Length: 3\r\n", .contentLength(3)),
    ])
    func responseFramingFollowsRFC9112Section6_3(
        _ method: String, _ status: Int, _ fields: String, _ expected: BodyFraming
    )
        throws
    {
        let head = try HTTPHeadParser().parseHead(Array("HTTP/1.1 \(status) X\r\n\(fields)\r\n".utf8))
        #expect(try BodyFraming.forResponse(head, status: status, requestMethod: method) == expected)
    }

    static let chunked = Array(
        "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\nNEXT".utf8)

    @Test(arguments: [1, 3, 1000])
    func chunkedBodiesEndAtTheLastChunkAndTrailersWhateverTheChunkSize(_ step: Int) throws {
        var reader = BodyReader(.chunked)
        var consumed = 0
        var payload: [UInt8] = []
        var offset = 0
        while !reader.isComplete && offset < Self.chunked.count {
            let slice = Self.chunked[offset..<min(offset + step, Self.chunked.count)]
            consumed += try withUnsafeMutablePointer(to: &payload) { try reader.consume(slice, payload: $0) }
            offset += step
        }
        #expect(reader.isComplete)
        #expect(consumed == Self.chunked.count - 4)
        #expect(String(decoding: payload, as: UTF8.self) == "Wikipedia in\r\n\r\nchunks.")
    }

    /// RFC 9112 §7.1.2 and RFC 9110 §6.5: a trailer section read into fields (for a writer that sends trailers in its
    /// own form) has each value without its surrounding whitespace, and none of the fields a trailer section must not
    /// carry (§6.5.1: framing, routing, the connection's own), whatever the chunk size.
    @Test(arguments: [
        ("0\r\n\r\n", ""),
        ("0\r\nX-Sum: 9\r\n\r\n", "X-Sum: 9\r\n"),
        ("0\r\ngrpc-status:0\r\ngrpc-message: \t ok go \t\r\n\r\n", "grpc-status: 0\r\ngrpc-message: ok go\r\n"),
        ("0\r\nHost: b\r\nA: 1\r\nContent-Length: 5\r\nTE: trailers\r\nConnection: x\r\nB:\r\n\r\n", "A: 1\r\nB: \r\n"),
    ])
    func aTrailerSectionIsReadIntoFieldsWithoutTheForbiddenOnes(_ body: String, _ expected: String) throws {
        for step in [1, 2, 1000] {
            var reader = BodyReader(.chunked)
            var trailers = FieldSection()
            var payload: [UInt8] = []
            let bytes = Array(("4\r\nWiki\r\n" + body).utf8)
            var offset = 0
            while !reader.isComplete && offset < bytes.count {
                let slice = bytes[offset..<min(offset + step, bytes.count)]
                offset += try withUnsafeMutablePointer(to: &payload) { p in
                    try withUnsafeMutablePointer(to: &trailers) { try reader.consume(slice, payload: p, trailers: $0) }
                }
            }
            #expect(reader.isComplete)
            var lines: [UInt8] = []
            trailers.writeLines(into: &lines)
            #expect(String(decoding: lines, as: UTF8.self) == expected, "step \(step)")
            #expect(String(decoding: payload, as: UTF8.self) == "Wiki")
        }
    }

    @Test(arguments: ["x\r\n", "4\r\nWikiXX", "5\r\nab"])
    func badOrTruncatedChunkedBodiesAreNotComplete(_ text: String) {
        var reader = BodyReader(.chunked)
        let result = Result { try reader.consume(Array(text.utf8)[...]) }
        #expect((try? result.get()) == nil || !reader.isComplete)
    }
}

@Suite struct RequestTargetSchemeTests {
    @Test(arguments: [
        ("http://a/", RequestRoute.SchemePrefix.http),
        ("HTTP://a", .http),
        ("hTtP://example.test:8080/x", .http),
        ("https://a/", .https),
        ("HTTPS://a", .https),
        ("http:/a", .other),
        ("https:/a", .other),
        ("http", .other),
        ("", .other),
        ("ftp://a/", .other),
        ("/path", .other),
        ("http:\u{0F}/a", .other),  // | 0x20 would make 0x0F a '/': the separators are compared exactly
        ("httpx://a", .other),
    ])
    func absoluteFormSchemesAreRecognisedInAnyCase(_ target: String, _ expected: RequestRoute.SchemePrefix) {
        #expect(RequestRoute.schemePrefix(target) == expected)
    }
}

@Suite struct ConnectionOptionsTests {
    @Test(arguments: [
        ("", false, false, false, [String]()),
        ("Connection: close\r\n", true, false, false, []),
        ("Connection: Keep-Alive, X-Trace\r\n", false, true, false, ["x-trace"]),
        ("Connection: upgrade, TRANSFER-ENCODING\r\n", false, false, true, []),
        ("Connection: , ,close ,\r\nConnection: KEEP-ALIVE,x-a\r\n", true, true, false, ["x-a"]),
        ("Connection: closed, keep-alives\r\n", false, false, false, ["closed", "keep-alives"]),
    ])
    func optionsAreReadOnTheBytesInAnyCase(
        _ fields: String, _ close: Bool, _ keepAlive: Bool, _ upgrade: Bool, _ names: [String]
    ) throws {
        let head = try HTTPHeadParser().parseRequest(Array("GET / HTTP/1.1\r\nHost: a\r\n\(fields)\r\n".utf8)).head
        let options = head.connectionOptions()
        #expect(options.close == close && options.keepAlive == keepAlive && options.upgrade == upgrade)
        #expect(options.fieldNames == names)
    }
}

/// A chunked body's errors say where in the framed bytes they are, fed whole or a byte at a time.
@Suite struct ChunkedErrorOffsetTests {
    @Test(arguments: [
        ("5\r\nhello\r\nZ\r\n", 10), ("5\r\nhelloX", 8), ("3;=x\r\n", 2), ("0\r\nBad Name: x\r\n\r\n", 6),
        ("1\nx", 1),
    ])
    func chunkedFramingErrorsCarryTheirOffset(_ body: String, _ offset: Int) {
        let bytes = Array(body.utf8)
        var fed = ChunkedDecoder()
        var found: Int? = nil
        for k in bytes.indices {
            do {
                _ = try fed.consume(bytes[k...k], payload: nil)
            } catch {
                found = error.offset
                break
            }
        }
        #expect(found == offset)
        var whole = ChunkedDecoder()
        var wholeOffset: Int? = nil
        do {
            _ = try whole.consume(bytes[...], payload: nil)
        } catch {
            wholeOffset = error.offset
        }
        #expect(wholeOffset == offset)
    }
}

/// An outgoing head is a value: edits to a copy leave the original's bytes as they were, however many lines either
/// edits (the edited lines share one buffer until a copy edits).
@Suite struct OutgoingHeadTests {
    static let received = try! HTTPHeadParser().parseHead(
        Array("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-A: b\r\nSet-Cookie: c=2\r\n\r\n".utf8))

    static func bytes(_ head: OutgoingHead) -> String {
        var out: [UInt8] = []
        head.serialize(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Lines the proxy writes (added fields, a new start line) go into the edited lines' buffer: each reads back,
    /// is edited and removed like a received line, and a copy that writes, however much, leaves the original as
    /// it was.
    @Test(arguments: [0, 1, 30])
    func writtenLinesReadEditAndCopyLikeReceivedOnes(_ more: Int) {
        var head = OutgoingHead(Self.received)
        Array("HTTP/1.1 201 Created".utf8).withUnsafeBufferPointer { head.replaceStartLine($0) }
        head.append(name: "Via", value: "1.1 cookie-proxy")
        head.replaceValue(at: 0, with: Array("a=1; Secure".utf8))
        head.append(name: "X-New", value: "first")
        var copy = head
        let long = String(repeating: "m", count: 50)
        for k in 0..<more { copy.append(name: "X-More-\(k)", value: long) }
        copy.replaceValue(at: 4, with: Array("second, longer".utf8))
        copy.removeAll("via")

        #expect(head.startLine == Array("HTTP/1.1 201 Created".utf8))
        #expect(head.name(at: 3) == "Via" && head.name(at: 3, is: "via") && head.known(at: 3) == .other)
        #expect(head.value(at: 3) == Array("1.1 cookie-proxy".utf8))
        #expect(head.valueBytes(at: 4) == Array("first".utf8)[...])
        head.withValueBytes(at: 4) { #expect(Array($0) == Array("first".utf8)) }
        #expect(
            Self.bytes(head)
                == "HTTP/1.1 201 Created\r\nSet-Cookie: a=1; Secure\r\nX-A: b\r\nSet-Cookie: c=2\r\nVia: 1.1 cookie-proxy\r\nX-New: first\r\n\r\n"
        )
        let extra = (0..<more).map { "X-More-\($0): \(long)\r\n" }.joined()
        #expect(
            Self.bytes(copy)
                == "HTTP/1.1 201 Created\r\nSet-Cookie: a=1; Secure\r\nX-A: b\r\nSet-Cookie: c=2\r\nX-New: second, longer\r\n\(extra)\r\n"
        )
        #expect(copy.name(at: 3) == "X-New" && copy.value(at: 3) == Array("second, longer".utf8))
        #expect(copy.startLine == head.startLine)
    }

    @Test(arguments: [1, 2, 40])
    func editsToACopyLeaveTheOriginalAsItWas(_ edits: Int) {
        var original = OutgoingHead(Self.received)
        original.replaceValue(at: 0, with: Array("a=1; Secure".utf8))
        var copy = original
        for k in 0..<edits {
            // Long values grow the copy's buffer past its first size.
            copy.replaceValue(at: 2, with: Array("c=\(k)\(String(repeating: "x", count: 40))".utf8))
        }
        copy.replaceValue(at: 0, with: Array("a=9".utf8))
        #expect(
            Self.bytes(original) == "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Secure\r\nX-A: b\r\nSet-Cookie: c=2\r\n\r\n")
        let last = "c=\(edits - 1)\(String(repeating: "x", count: 40))"
        #expect(Self.bytes(copy) == "HTTP/1.1 200 OK\r\nSet-Cookie: a=9\r\nX-A: b\r\nSet-Cookie: \(last)\r\n\r\n")
        #expect(copy.value(at: 2) == Array(last.utf8))
        // The original's buffer holds its own edit alone: the copy wrote into a buffer of its own.
        #expect(original.editedBytes == Array("Set-Cookie: a=1; Secure\r\n".utf8))
        #expect(original.valueBytes(at: 0) == Array("a=1; Secure".utf8)[...])
        copy.withValueBytes(at: 0) { #expect(Array($0) == Array("a=9".utf8)) }
    }
}
