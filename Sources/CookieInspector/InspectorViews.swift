import CookieKit
import CookieRules
import HTTPGrammar
import HTTPHeads
import JSONStream
import Locking

/// The inspector's JSON: the list, one exchange in detail, the jar a browser would hold, the rules, HAR. Values
/// are redacted as in the log (a keyed hash) unless the redaction shows them.
public struct InspectorViews: Sendable {
    public var redaction: Redaction

    public init(redaction: Redaction) { self.redaction = redaction }

    /// The fields every view of an exchange starts with.
    func exchangeFields(_ e: Exchange) -> [(String, JSONValue)] {
        [
            ("seq", .int(Int64(e.sequence))),
            ("id", .int(Int64(e.context.requestID))),
            ("time", .string(Self.timestamp(e.requestTime))),
            ("client", .string(e.client)),
            ("method", .string(e.context.method)),
            ("url", .string(Self.url(e))),
            // What each side spoke (the client's HTTP/1.x version is its request line's).
            ("protocol", .string(e.context.clientProtocol.map(String.init) ?? Self.requestVersion(e))),
            ("upstreamProtocol", .string(e.context.upstreamProtocol.map(String.init) ?? "HTTP/1.1")),
            ("route", JSONValue(e.context.route?.name)),
        ]
    }

    /// The version in the request line the client sent.
    static func requestVersion(_ e: Exchange) -> String {
        let head = e.request
        return String(decoding: head.bytes[head.startLine], as: UTF8.self).split(separator: " ").last.map(String.init)
            ?? "HTTP/1.1"
    }

    /// A change as the log writes it: a value change is hashed unless values are shown.
    func changeJSON(_ c: AttributeChange) -> JSONValue {
        let hide = !redaction.showValues && c.op == .value
        return .object([
            ("op", .string(c.op.rawValue)), ("attribute", .string(c.attribute)),
            ("from", JSONValue(hide ? c.from.map { redaction.hash(Array($0.utf8)) } : c.from)),
            ("to", JSONValue(hide ? c.to.map { redaction.hash(Array($0.utf8)) } : c.to)),
        ])
    }

    func findingJSON(_ f: LintFinding) -> JSONValue {
        .object([
            ("code", .string(f.code)), ("severity", .string(f.severity.rawValue)), ("message", .string(f.message)),
        ])
    }

    // MARK: The list

    /// One row of the live list.
    public func row(_ e: Exchange) -> JSONValue {
        let a = e.summary
        return .object(
            exchangeFields(e) + [
                ("host", .string(e.context.host)),
                ("status", .int(Int64(e.context.status ?? 0))),
                ("setCookies", .array(a.setCookies.map { .string($0) })),
                ("sentCookies", .array(a.sentCookies.map { .string($0) })),
                ("rules", .array(a.rules.map { .string($0) })),
                ("changed", .bool(a.changed)),
                ("findings", .array(a.findings.map { .string($0) })),
                (
                    "severity",
                    .object([
                        ("rejects", .int(Int64(a.severity[.rejects] ?? 0))),
                        ("warning", .int(Int64(a.severity[.warning] ?? 0))),
                        ("info", .int(Int64(a.severity[.info] ?? 0))),
                    ])
                ),
            ] + lifecycleRow(e))
    }

    // MARK: One exchange

    public func detail(_ e: Exchange, rules: RuleSet) -> JSONValue {
        let a = e.analysis
        let locations = Dictionary(
            rules.rules.map { ($0.name, $0.location.description) }, uniquingKeysWith: { a, _ in a })
        return .object(
            exchangeFields(e) + [
                ("status", .int(Int64(e.context.status ?? 0))),
                ("dryRun", .bool(e.dryRun)),
                (
                    "request",
                    .array(fields(e.request).map { .object([("name", .string($0.0)), ("value", .string($0.1))]) })
                ),
                // What the upstream got: a route's target and Host, X-Forwarded-*, Via, the rules' edits.
                (
                    "requestSent",
                    e.sent.map { sent in
                        .object([
                            ("line", .string(String(decoding: sent.bytes[sent.startLine], as: UTF8.self))),
                            (
                                "fields",
                                .array(
                                    fields(sent).map { .object([("name", .string($0.0)), ("value", .string($0.1))]) })
                            ),
                        ])
                    } ?? .null
                ),
                (
                    "requestCookies",
                    .array(
                        a.requestCookies.flatMap { Self.pairs($0) }.map {
                            .object([("name", .string($0.name)), ("value", .string(value($0.value)))])
                        })
                ),
                (
                    "responseReceived",
                    .array(fields(e.received).map { .object([("name", .string($0.0)), ("value", .string($0.1))]) })
                ),
                (
                    "responseForwarded",
                    .array(fields(e.forwarded).map { .object([("name", .string($0.0)), ("value", .string($0.1))]) })
                ),
                (
                    "cookies",
                    .array(
                        a.cookies.map { line in
                            .object([
                                ("name", .string(line.name)),
                                ("received", .string(redaction.text(line.received))),
                                ("forwarded", JSONValue(line.forwarded.map { redaction.text($0) })),
                                ("wouldBe", JSONValue(line.wouldBe.map { redaction.text($0) })),
                                (
                                    "changes", .array(line.changes.map(changeJSON))
                                ),
                                (
                                    "rules",
                                    .array(
                                        line.rules.map {
                                            .object([("name", .string($0)), ("location", JSONValue(locations[$0]))])
                                        })
                                ),
                                ("notes", .array(line.notes.map { .string($0) })),
                                (
                                    "findings", .array(line.findings.map(findingJSON))
                                ),
                                (
                                    "engines", JSONValue(EngineVerdict.summary(line.findings))
                                ),
                            ])
                        })
                ),
                ("added", .array(a.added.map { .string(redaction.text($0)) })),
            ] + lifecycleDetail(e))
    }

    /// A head's fields, values redacted where they carry cookies or credentials.
    func fields(_ head: HTTPHead) -> [(String, String)] {
        head.fields.map { f in
            let name = head.name(f)
            return (name, redactedField(f.known, name, String(decoding: head.valueBytes(f), as: UTF8.self)))
        }
    }

    func redactedField(_ known: KnownField, _ name: String, _ value: String) -> String {
        guard !redaction.showValues else { return value }
        switch known {
        case .setCookie: return redaction.text(SetCookie(bytes: Array(value.utf8)))
        case .cookie: return Self.pairs(value).map { "\($0.name)=\(self.value($0.value))" }.joined(separator: "; ")
        case .proxyAuthorization: return "[redacted]"
        default: return name.lowercased() == "authorization" ? "[redacted]" : value
        }
    }

    func value(_ v: String) -> String {
        redaction.showValues || v.isEmpty ? v : "[\(redaction.hash(Array(v.utf8)))]"
    }

    /// `a=1; b=2` as name/value pairs (RFC 6265bis §5.8.3's format; a pair without `=` is a nameless value).
    static func pairs(_ header: String) -> [(name: String, value: String)] {
        header.split(separator: ";").compactMap { part in
            let trimmed = part.drop { $0 == " " || $0 == "\t" }
            guard !trimmed.isEmpty else { return nil }
            guard let eq = trimmed.firstIndex(of: "=") else { return ("", String(trimmed)) }
            return (String(trimmed[..<eq]), String(trimmed[trimmed.index(after: eq)...]))
        }
    }

    // MARK: The browser's view

    /// The jar a browser would hold for `client` after the held traffic (cookies as forwarded), what it refused and
    /// why, and, for `url`, the Cookie header it would send there. Times in milliseconds since the epoch.
    public func jar(_ exchanges: [Exchange], client: String, url: RequestURL?, now: Int64) -> JSONValue {
        // The jar's clock is each exchange's time while it is replayed (Max-Age counts from when the cookie came),
        // then now, for what it holds and sends.
        // In the client's engine's jar (the lifecycle's judgement says which), to the millisecond.
        let clock = AtomicCounter(Int(now))
        let mine = exchanges.filter { $0.client == client }
        let engine = mine.last(where: { $0.judgement != nil })?.judgement?.engine ?? .rfc6265bis
        var jar = CookieJar(profile: .of(engine), unit: .milliseconds, clock: { Int64(clock.load()) })
        var rejected: [JSONValue] = []
        for e in mine {
            clock.store(Int(e.responseTime))
            let from = e.requestURL
            // What the client got: the forwarded head's Set-Cookie lines, in order (a dry run forwards them as
            // received).
            let head = e.forwarded
            for field in head.fields where field.known == .setCookie {
                let sent = SetCookie(bytes: Array(head.valueBytes(field)))
                if case .failure(let why) = jar.receive(sent, from: from) {
                    rejected.append(
                        .object([
                            ("name", .string(sent.name)), ("url", .string(Self.url(e))),
                            ("reason", .string(why.description)), ("setCookie", .string(redaction.text(sent))),
                        ]))
                }
            }
        }
        clock.store(Int(now))
        let held = jar.allCookies().sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }
        var fields: [(String, JSONValue)] = [
            ("client", .string(client)),
            ("engine", .string(engine.rawValue)),
            (
                "cookies",
                .array(
                    held.map { c in
                        .object([
                            ("name", .string(c.name)), ("value", .string(value(c.value))),
                            ("domain", .string(c.domain)), ("hostOnly", .bool(c.hostOnly)), ("path", .string(c.path)),
                            ("secure", .bool(c.secureOnly)), ("httpOnly", .bool(c.httpOnly)),
                            ("sameSite", .string(c.sameSite.rawValue)),
                            ("expires", c.expiry.map { .string(Self.timestamp($0)) } ?? .null),
                        ])
                    })
            ),
            ("rejected", .array(rejected)),
        ]
        if let url {
            let header = jar.cookieHeader(for: url)
            fields.append(("url", .string(url.description)))
            fields.append(
                (
                    "cookieHeader",
                    .string(Self.pairs(header).map { "\($0.name)=\(value($0.value))" }.joined(separator: "; "))
                ))
        }
        return .object(fields)
    }

    /// The clients seen in the held exchanges, in order of first appearance.
    public static func clients(_ exchanges: [Exchange]) -> [String] {
        var seen: Set<String> = []
        return exchanges.compactMap { seen.insert($0.client).inserted ? $0.client : nil }
    }

    // MARK: Rules

    /// The loaded rules, each with how many held cookies it matched.
    public func rules(_ set: RuleSet, exchanges: [Exchange]) -> JSONValue {
        var hits: [String: Int64] = [:]
        for e in exchanges { for name in e.summary.ruleMatches { hits[name, default: 0] += 1 } }
        return .array(
            set.rules.map { rule in
                .object([
                    ("name", .string(rule.name)), ("location", .string(rule.location.description)),
                    ("hits", .int(hits[rule.name] ?? 0)),
                ])
            })
    }

    // MARK: Helpers

    /// `scheme://host[:port]/path?query`, the port only when not the scheme's default.
    static func url(_ e: Exchange) -> String {
        let c = e.context
        let host = HostPort.bracketed(c.host)
        let defaultPort = c.scheme == "https" ? 443 : 80
        return "\(c.scheme)://\(host)\(c.port == defaultPort ? "" : ":\(c.port)")\(c.target)"
    }

    /// RFC 3339 with milliseconds, UTC.
    static func timestamp(_ ms: Int64) -> String {
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let millis = Int(ms - seconds * 1000)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = Int(seconds - days * 86_400)
        let (y, m, d) = CookieDate.civilFromDays(days)
        func pad(_ v: Int, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return
            "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rest / 3600, 2)):\(pad(rest % 3600 / 60, 2)):\(pad(rest % 60, 2)).\(pad(millis, 3))Z"
    }
}
