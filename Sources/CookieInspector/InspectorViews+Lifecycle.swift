import CookieKit
import CookieLifecycle
import JSONStream

/// The lifecycle in the inspector's JSON: each exchange's verdicts (the list's counts, the detail's list, HAR's
/// `_cookieProxy.verdicts`) and a cookie's timeline. Values are redacted as everywhere else.
extension InspectorViews {
    /// One verdict, with the log's keys.
    public func verdictJSON(_ v: CookieVerdict) -> JSONValue {
        var fields: [(String, JSONValue)] = [("cookie", .string(v.name)), ("verdict", .string(v.kind.rawValue))]
        if let sent = v.sent { fields.append(("sent", .string(value(sent)))) }
        if let expected = v.expected { fields.append(("expected", .string(value(expected)))) }
        if let domain = v.domain { fields.append(("domain", .string(domain))) }
        if let path = v.path { fields.append(("path", .string(path))) }
        if let setBy = v.setBy { fields.append(("setBy", .int(Int64(setBy)))) }
        if let r = v.reason {
            var reason: [(String, JSONValue)] = [("code", .string(r.code.rawValue))]
            if let finding = r.finding { reason.append(("finding", .string(finding))) }
            if !r.engines.isEmpty { reason.append(("engines", .array(r.engines.map { .string($0) }))) }
            reason.append(("message", .string(r.message)))
            fields.append(("reason", .object(reason)))
        }
        return .object(fields)
    }

    /// The list's columns: the site context and how many cookies of each verdict (nil with the lifecycle off).
    func lifecycleRow(_ e: Exchange) -> [(String, JSONValue)] {
        guard let j = e.judgement else { return [] }
        return [
            ("site", .string(j.site.kind.rawValue)),
            (
                "verdicts",
                .object(CookieVerdict.Kind.allCases.map { ($0.rawValue, .int(Int64(j.count($0)))) })
            ),
        ]
    }

    /// The detail's section: whose cookies, the site context and why, and every verdict.
    func lifecycleDetail(_ e: Exchange) -> [(String, JSONValue)] {
        guard let j = e.judgement else { return [] }
        return [
            (
                "lifecycle",
                .object([
                    ("client", .string(j.client)),
                    ("engine", .string(j.engine.rawValue)),
                    ("site", .string(j.site.kind.rawValue)),
                    ("siteEvidence", .string(j.site.evidence)),
                    ("verdicts", .array(j.verdicts.map(verdictJSON))),
                ])
            )
        ]
    }

    /// A cookie's timeline: every Set-Cookie that touched it and every request that carried it or should have.
    public func timeline(name: String, events: [(client: String, event: ClientCookies.Event)]) -> JSONValue {
        .object([
            ("cookie", .string(name)),
            (
                "events",
                .array(
                    events.map { item in
                        let e = item.event
                        var fields: [(String, JSONValue)] = [
                            ("time", .string(Self.timestamp(e.time))), ("client", .string(item.client)),
                            ("kind", .string(e.kind.rawValue)), ("requestId", .int(Int64(e.requestID))),
                            ("method", .string(e.method)), ("url", .string(e.url)), ("site", .string(e.site.rawValue)),
                            ("count", .int(Int64(e.count))), ("lastRequestId", .int(Int64(e.lastRequestID))),
                            ("lastTime", .string(Self.timestamp(e.lastTime))),
                        ]
                        if let r = e.received { fields.append(("received", .string(setCookieText(r)))) }
                        if let f = e.forwarded { fields.append(("forwarded", .string(setCookieText(f)))) }
                        if !e.rules.isEmpty { fields.append(("rules", .array(e.rules.map { .string($0) }))) }
                        if let v = e.value { fields.append(("value", .string(value(v)))) }
                        if let d = e.detail { fields.append(("detail", .string(d))) }
                        if let n = e.note { fields.append(("note", .string(n))) }
                        if let x = e.expiry { fields.append(("expires", .string(CookieDate.rfc3339(milliseconds: x)))) }
                        return .object(fields)
                    })
            ),
        ])
    }

    func setCookieText(_ line: String) -> String { redaction.text(SetCookie(line)) }
}
