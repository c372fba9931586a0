import HTTPGrammar

/// A TLS listener's first bytes when they are plain HTTP, and the answer they get (nginx's "The plain HTTP request
/// was sent to HTTPS port"): a person who typed `http://` gets told which URL works, where a TLS engine fed an HTTP
/// request line would only fail its handshake and close with nothing said.
public enum PlainHTTPOnTLSPort {
    /// Whether a connection's first bytes are an HTTP request rather than a TLS record. A TLS connection opens with a
    /// handshake record, content type 22 (RFC 8446 §5.1; SSL 2's hello opens with a length byte of 0x80 or more); an
    /// HTTP/1.x request opens with its method (RFC 9112 §3, methods are uppercase tokens in practice), and HTTP/2 with
    /// prior knowledge with `PRI` (RFC 9113 §3.4). An uppercase letter is never the first byte of a TLS record.
    public static func isPlainHTTP(_ first: UInt8) -> Bool { first &- 0x41 < 26 }

    /// The `400` for `request` (the first bytes read, at least the request line when it came whole): it names the
    /// https URL of the same host and target, read from the request when they are a plain authority and
    /// origin-form target, else the URL of `fallback` (the listener's address).
    public static func response(to request: ArraySlice<UInt8>, fallback: Origin) -> [UInt8] {
        let url = "https://" + authority(request, fallback: fallback) + target(request)
        let body =
            "400 Bad Request: this port speaks HTTPS, and a plain HTTP request was sent to it.\n"
            + "Use \(url) instead.\n"
        return Array(
            ("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                + "\(body.utf8.count)\r\nConnection: close\r\n\r\n" + body).utf8)
    }

    /// The request's `Host` value when it is a host[:port], else the listener's.
    static func authority(_ request: ArraySlice<UInt8>, fallback: Origin) -> String {
        for line in lines(request).dropFirst() {
            guard let colon = line.firstIndex(of: 0x3A) else { continue }
            let name = line[..<colon]
            guard ByteClass.equalsLowercase(name, "host".utf8) else { continue }
            let value = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
            if value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
                Authority.parse(Substring(value), defaultPort: 443) != nil
            {
                return value
            }
            break
        }
        return String(decoding: fallback.hostFieldValue(defaultPort: 443), as: UTF8.self)
    }

    /// The request line's target when it is origin-form printable ASCII, else `/`.
    static func target(_ request: ArraySlice<UInt8>) -> String {
        guard let line = lines(request).first else { return "/" }
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].first == 0x2F, parts[1].count <= 2048,
            parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return "/" }
        return String(decoding: parts[1], as: UTF8.self)
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let start = bytes.firstIndex { $0 != 0x20 && $0 != 0x09 } ?? bytes.endIndex
        let end = bytes.lastIndex { $0 != 0x20 && $0 != 0x09 }.map { $0 + 1 } ?? start
        return bytes[start..<max(start, end)]
    }

    private static func lines(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        for i in bytes.indices where bytes[i] == 0x0A {
            var end = i
            if end > start && bytes[end - 1] == 0x0D { end -= 1 }
            if end == start { break }  // the head's end
            result.append(bytes[start..<end])
            start = i + 1
        }
        return result
    }
}
