import HTTPHeads

/// A TLS listener's first bytes when they are plain HTTP, and the answer they get (nginx's "The plain HTTP request
/// was sent to HTTPS port"): a person who typed `http://` gets told which URL works, where a TLS engine fed an HTTP
/// request line would only fail its handshake and close with nothing said.
public enum PlainHTTPOnTLSPort {
    /// Whether a connection's first bytes are an HTTP request rather than a TLS record. A TLS connection opens with a
    /// handshake record, content type 22 (RFC 8446 §5.1; SSL 2's hello opens with a length byte of 0x80 or more); an
    /// HTTP/1.x request opens with its method (RFC 9112 §3, methods are uppercase tokens in practice), and HTTP/2 with
    /// prior knowledge with `PRI` (RFC 9113 §3.4). An uppercase letter is never the first byte of a TLS record.
    public static func isPlainHTTP(_ first: UInt8) -> Bool { first &- 0x41 < 26 }

    /// The `400` for `request` (the first bytes read): it names the https URL of the same host and target when they
    /// are a whole request head the proxy's own reader accepts (one Host, an origin-form target), else the URL of
    /// `fallback` (the listener's address) and `/`.
    public static func response(to request: ArraySlice<UInt8>, fallback: Origin) -> [UInt8] {
        var authority = String(decoding: fallback.hostFieldValue(defaultPort: 443), as: UTF8.self)
        var target = "/"
        var parser = HTTPHeadParser()
        if let length = (try? parser.headLength(request)) ?? nil,
            let head = try? parser.parseRequest(Array(request.prefix(length)))
        {
            let hosts = head.head.values(.host)
            if hosts.count == 1, Authority.parse(Substring(hosts[0]), defaultPort: 443) != nil {
                authority = hosts[0]
            }
            if head.target.hasPrefix("/") { target = head.target }
        }
        let body =
            "400 Bad Request: this port speaks HTTPS, and a plain HTTP request was sent to it.\n"
            + "Use https://\(authority)\(target) instead.\n"
        return Array(
            ("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                + "\(body.utf8.count)\r\nConnection: close\r\n\r\n" + body).utf8)
    }
}
