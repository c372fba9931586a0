import HTTPHeads

/// A response of the proxy's own (a refusal, an upstream failure, a timeout): the status, a one-line plain-text
/// reason as the body, and nothing a client could mistake for the upstream's. Every answer the proxy writes on a
/// proxied connection is built here: the connection machine's and the event loop's (`403` for a client not
/// admitted, `503` when full).
public struct ProxyAnswer: Sendable, Hashable {
    public var status: Int
    /// One line, without its line end (the body is this and LF).
    public var reason: String
    /// Extra header lines (an `Allow` for `405`, RFC 9110 §15.5.6).
    public var fields: [Field]
    /// The `Via` pseudonym (RFC 9110 §7.6.3), or nil for none.
    public var via: String?
    /// Whether the connection closes after it (`Connection: close`, RFC 9112 §9.6).
    public var close: Bool

    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(status: Int, reason: String, fields: [Field] = [], via: String? = nil, close: Bool) {
        self.status = status
        self.reason = reason
        self.fields = fields
        self.via = via
        self.close = close
    }

    /// A page of the proxy's own (`200`, HTML, closing the connection): the forward proxy's own URL opened in a
    /// browser. `head`: the answer to HEAD, without the body.
    public static func page(_ html: String, head: Bool) -> [UInt8] {
        let body = Array(html.utf8)
        var text = "HTTP/1.1 200 OK\r\n"
        for field in pageFields(length: body.count) { text += "\(field.name): \(field.value)\r\n" }
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8) + (head ? [] : body)
    }

    /// The fields of ``page(_:head:)`` for a body of `length` bytes.
    public static func pageFields(length: Int) -> [Field] {
        [
            Field("Content-Type", "text/html; charset=utf-8"), Field("Content-Length", String(length)),
            Field("Cache-Control", "no-store"),
        ]
    }

    /// What a listener without HTTP/2 writes to a connection that opened with HTTP/2's preface (RFC 9113 §3.4):
    /// an empty SETTINGS frame (the server's preface, so the client reads on), then GOAWAY with last stream 0,
    /// HTTP_1_1_REQUIRED (§7, `0xd`) and `reason` as its debug data (§6.8), which clients print.
    public static func http2Refused(_ reason: String) -> [UInt8] {
        let debug = Array(reason.utf8)
        let length = 8 + debug.count
        let settings: [UInt8] = [0, 0, 0, 0x04, 0, 0, 0, 0, 0]
        let goAwayHeader: [UInt8] = [
            UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), 0x07, 0, 0, 0, 0, 0,
        ]
        let goAwayPayload: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0x0D]
        return settings + goAwayHeader + goAwayPayload + debug
    }

    /// The whole response: status line, fields, body.
    public var bytes: [UInt8] {
        var text = "HTTP/1.1 \(status) \(Self.reasonPhrase(status))\r\n"
        for field in typedFields { text += "\(field.name): \(field.value)\r\n" }
        text += close ? "Connection: close\r\n\r\n" : "\r\n"
        return Array(text.utf8) + body
    }

    /// The reason phrase this proxy writes for a status it answers with, or for a status line it makes of an
    /// HTTP/2 response (RFC 9110 §15; HTTP/2 has none): empty for a status it does not know.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 103: return "Early Hints"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 414: return "URI Too Long"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return status >= 400 ? "Error" : ""
        }
    }
}
