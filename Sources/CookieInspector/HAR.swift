import CookieKit
import CookieRules
import HTTPHeads
import JSONStream

/// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) of the held exchanges: the heads as the client sent
/// and received them (no bodies: the proxy streams them and keeps none), with the Set-Cookie lines as the upstream
/// sent them in `response._originalHeaders` and what the rules did in `_cookieProxy` (HAR's custom fields start
/// with `_`).
extension InspectorViews {
    public func har(_ exchanges: [Exchange], version: String) -> JSONValue {
        .object([
            (
                "log",
                .object([
                    ("version", "1.2"),
                    ("creator", .object([("name", "cookie-proxy"), ("version", .string(version))])),
                    ("pages", .array([])),
                    ("entries", .array(exchanges.map(entry))),
                ])
            )
        ])
    }

    /// ``har(_:version:)`` written entry by entry: only one entry's tree exists at a time (the trees of a whole
    /// history at once take several times the memory of the text).
    public func harBytes(_ exchanges: [Exchange], version: String) -> [UInt8] {
        var out: [UInt8] = []
        JSONValue.object([("name", "cookie-proxy"), ("version", .string(version))]).write(to: &out)
        let creator = out
        out = Array("{\"log\":{\"version\":\"1.2\",\"creator\":".utf8) + creator
        out += Array(",\"pages\":[],\"entries\":[".utf8)
        for (i, e) in exchanges.enumerated() {
            if i > 0 { out.append(0x2C) }
            entry(e).write(to: &out)
        }
        out += Array("]}}".utf8)
        return out
    }

    func entry(_ e: Exchange) -> JSONValue {
        let a = e.analysis
        let wait = max(0, e.responseTime - e.requestTime)
        let (request, received, forwarded) = (e.request, e.received, e.forwarded)
        func fieldValue(_ head: HTTPHead, _ name: String) -> String? {
            head.fields.first { head.field($0, is: name) }.map { String(decoding: head.valueBytes($0), as: UTF8.self) }
        }
        let requestLine = String(decoding: request.bytes[request.startLine], as: UTF8.self)
        let statusLine = String(decoding: received.bytes[received.startLine], as: UTF8.self)
        let statusParts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        let contentLength = fieldValue(forwarded, "content-length").flatMap { Int64($0) }
        let contentType = fieldValue(forwarded, "content-type")
        let requestLength = fieldValue(request, "content-length").flatMap { Int64($0) }
        let query: [JSONValue] = {
            guard let mark = e.context.target.firstIndex(of: "?") else { return [] }
            return e.context.target[e.context.target.index(after: mark)...].split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return .object([
                    ("name", .string(String(parts[0]))), ("value", .string(parts.count > 1 ? String(parts[1]) : "")),
                ])
            }
        }()
        func pairs(_ list: [(String, String)]) -> JSONValue {
            .array(list.map { .object([("name", .string($0.0)), ("value", .string($0.1))]) })
        }
        let responseCookies: [JSONValue] =
            a.cookies.compactMap { line in
                guard let sent = e.dryRun ? line.received : line.forwarded else { return nil }
                return harCookie(sent)
            } + a.added.map(harCookie)
        // What the client spoke, for both: the response's status line is the upstream's (an HTTP/1.1 origin's, to an
        // HTTP/2 client).
        let requestVersion =
            e.context.clientProtocol.map(String.init) ?? String(requestLine.split(separator: " ").last ?? "HTTP/1.1")
        let responseVersion = e.context.clientProtocol.map(String.init) ?? String(statusParts.first ?? "HTTP/1.1")
        return .object([
            ("startedDateTime", .string(Self.timestamp(e.requestTime))),
            ("time", .int(wait)),
            (
                "request",
                .object([
                    ("method", .string(e.context.method)),
                    ("url", .string(Self.url(e))),
                    ("httpVersion", .string(requestVersion)),
                    (
                        "cookies",
                        .array(
                            a.requestCookies.flatMap { Self.pairs($0) }.map {
                                .object([("name", .string($0.name)), ("value", .string(value($0.value)))])
                            })
                    ),
                    ("headers", pairs(fields(request))),
                    ("queryString", .array(query)),
                    ("headersSize", .int(Int64(request.bytes.count))),
                    ("bodySize", .int(requestLength ?? 0)),
                ])
            ),
            (
                "response",
                .object([
                    ("status", .int(Int64(e.context.status ?? 0))),
                    ("statusText", .string(statusParts.count > 2 ? String(statusParts[2]) : "")),
                    ("httpVersion", .string(responseVersion)),
                    ("cookies", .array(responseCookies)),
                    ("headers", pairs(fields(forwarded))),
                    (
                        "content",
                        .object([
                            ("size", .int(contentLength ?? -1)), ("mimeType", .string(contentType ?? "")),
                            ("comment", "body not captured: the proxy streams bodies and keeps none"),
                        ])
                    ),
                    ("redirectURL", .string(fieldValue(received, "location") ?? "")),
                    ("headersSize", .int(Int64(forwarded.bytes.count))),
                    ("bodySize", .int(contentLength ?? -1)),
                    (
                        "_originalHeaders",
                        pairs(
                            fields(received).filter { $0.0.lowercased() == "set-cookie" })
                    ),
                ])
            ),
            ("cache", .object([])),
            ("timings", .object([("send", .int(0)), ("wait", .int(wait)), ("receive", .int(0))])),
            (
                "_cookieProxy",
                .object(
                    [
                        ("dryRun", .bool(e.dryRun)), ("client", .string(e.client)),
                        ("records", .array(a.cookies.map(record))),
                    ]
                        + (e.judgement.map {
                            [
                                ("engine", .string($0.engine.rawValue)),
                                ("site", .string($0.site.kind.rawValue)),
                                ("verdicts", .array($0.verdicts.map(verdictJSON))),
                            ]
                        } ?? []))
            ),
        ])
    }

    func harCookie(_ c: SetCookie) -> JSONValue {
        let attributes = c.attributes
        var fields: [(String, JSONValue)] = [
            ("name", .string(c.name)), ("value", .string(value(String(decoding: c.valueBytes, as: UTF8.self)))),
        ]
        if let path = attributes.path { fields.append(("path", .string(path))) }
        if let domain = attributes.domain { fields.append(("domain", .string(domain))) }
        if let expires = attributes.expires { fields.append(("expires", .string(Self.timestamp(expires * 1000)))) }
        fields.append(("httpOnly", .bool(attributes.httpOnly)))
        fields.append(("secure", .bool(attributes.secure)))
        return .object(fields)
    }

    /// What the rules did to one line, with the keys of the log's records (rules/README.md).
    func record(_ line: Exchange.CookieLine) -> JSONValue {
        let after = line.wouldBe ?? line.forwarded
        return .object([
            ("cookie", .string(line.name)),
            ("rules", .array(line.rules.map { .string($0) })),
            ("before", .string(redaction.text(line.received))),
            ("after", JSONValue(after.map { redaction.text($0) })),
            ("changes", .array(line.changes.map(changeJSON))),
            ("findings", .array(line.findings.map(findingJSON))),
            ("engines", JSONValue(EngineVerdict.summary(line.findings))),
            ("notes", .array(line.notes.map { .string($0) })),
        ])
    }
}
