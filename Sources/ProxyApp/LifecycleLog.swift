import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import JSONStream

/// The log's records of the lifecycle (one per request the client's jar judged: rules/README.md, "Cookie
/// verdicts") and of request-cookie edits (one per edited cookie, in the transformation records' shape with
/// `"side":"request"`). Values are hashed as in every record unless `--log-values`.
enum LifecycleLog {
    /// `{"time","requestId","client","method","url"[,"protocol"],"record":"cookies-sent","engine","site","siteEvidence","verdicts":[…]}`.
    static func record(
        _ r: LifecycleTracker.Request, context: ExchangeContext, time: Int64, redaction: Redaction
    ) -> String {
        var out = JSONWriter(capacity: 512)
        exchangeFields(context, client: r.client, time: time, to: &out)
        out.raw(",\"record\":\"cookies-sent\",\"engine\":")
        out.string(r.engine.rawValue)
        out.raw(",\"site\":")
        out.string(r.site.kind.rawValue)
        out.raw(",\"siteEvidence\":")
        out.string(r.site.evidence)
        out.raw(",\"verdicts\":[")
        for (i, v) in r.verdicts.enumerated() {
            if i > 0 { out.raw(0x2C) }
            out.raw("{\"cookie\":")
            out.string(v.name)
            out.raw(",\"verdict\":")
            out.string(v.kind.rawValue)
            if let sent = v.sent {
                out.raw(",\"sent\":")
                out.string(redaction.value(sent.utf8))
            }
            if let expected = v.expected {
                out.raw(",\"expected\":")
                out.string(redaction.value(expected.utf8))
            }
            if let domain = v.domain {
                out.raw(",\"domain\":")
                out.string(domain)
            }
            if let path = v.path {
                out.raw(",\"path\":")
                out.string(path)
            }
            if let setBy = v.setBy {
                out.raw(",\"setBy\":")
                out.int(Int64(setBy))
            }
            if let reason = v.reason {
                out.raw(",\"reason\":{\"code\":")
                out.string(reason.code.rawValue)
                if let finding = reason.finding {
                    out.raw(",\"finding\":")
                    out.string(finding)
                }
                if !reason.engines.isEmpty {
                    out.raw(",\"engines\":[")
                    for (k, e) in reason.engines.enumerated() {
                        if k > 0 { out.raw(0x2C) }
                        out.string(e)
                    }
                    out.raw(0x5D)
                }
                out.raw(",\"message\":")
                out.string(reason.message)
                out.raw(0x7D)
            }
            out.raw(0x7D)
        }
        out.raw("]}")
        var text = ""
        out.withBytes { text = String(decoding: $0, as: UTF8.self) }
        return text
    }

    /// One record per request-cookie edit, newline-separated.
    static func requestCookieRecords(
        _ changes: [RequestCookieChange], context: ExchangeContext, client: String, time: Int64, dryRun: Bool,
        redaction: Redaction
    ) -> String {
        var lines: [String] = []
        for c in changes {
            var out = JSONWriter(capacity: 512)
            exchangeFields(context, client: client, time: time, to: &out)
            out.raw(",\"side\":\"request\",\"cookie\":")
            out.string(c.name)
            out.raw(",\"rules\":[")
            out.string(c.rule)
            out.raw("],\"dryRun\":")
            out.bool(dryRun)
            out.raw(",\"before\":")
            out.string(c.before.map { c.name + "=" + redaction.value($0.utf8) })
            out.raw(",\"after\":")
            out.string(c.after.map { (c.newName ?? c.name) + "=" + redaction.value($0.utf8) })
            out.raw(",\"changes\":")
            var change = c.attributeChange
            if change.op == .value || change.op == .drop {
                change.from = change.from.map { redaction.value($0.utf8) }
                change.to = change.to.map { redaction.value($0.utf8) }
            }
            TransformationRecord.writeChanges([change], redaction: Redaction(showValues: true, key: []), to: &out)
            out.raw(",\"findings\":[],\"engines\":null,\"notes\":[]}")
            out.withBytes { lines.append(String(decoding: $0, as: UTF8.self)) }
        }
        return lines.joined(separator: "\n")
    }

    static func exchangeFields(_ c: ExchangeContext, client: String, time: Int64, to out: inout JSONWriter) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: TransformationRecord.timestampLength) { stamp in
            TransformationRecord.writeTimestamp(time, into: stamp)
            out.raw("{\"time\":\"")
            out.raw(UnsafeBufferPointer(stamp))
            out.raw("\",\"requestId\":")
            out.int(Int64(c.requestID))
            out.raw(",\"client\":")
            out.string(client)
            out.raw(",\"method\":")
            out.string(c.method)
            out.raw(",\"url\":")
            out.string(c.url)
            if let p = c.clientProtocol {
                out.raw(",\"protocol\":\"")
                out.raw(p)
                out.raw(0x22)
            }
            if let route = c.route {
                out.raw(",\"route\":")
                out.string(route.name)
            }
        }
    }
}
