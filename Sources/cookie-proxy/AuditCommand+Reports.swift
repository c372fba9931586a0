import CookieAudit
import CookieKit
import CookieLifecycle
import CookieReports
import Foundation
import ProxyApp

extension AuditCommand {
    /// `audit URL --format junit`: a suite per host, a case per Set-Cookie line of each hop.
    static func junit(_ r: AuditReport) -> String {
        var report = JUnitReport()
        for (index, hop) in r.hops.enumerated() {
            for cookie in hop.cookies {
                report.add(
                    line: cookie.received, delivered: cookie.delivered != nil, rules: cookie.outcome?.rules ?? [],
                    rejection: cookie.rejection, findings: cookie.findings,
                    suite: RequestURL(hop.url)?.host ?? hop.url,
                    at: "hop \(index + 1): \(hop.method) \(hop.url) → \(hop.status)")
            }
        }
        return report.text(name: "cookie-proxy audit")
    }

    /// `audit URL --format sarif`: each hop's Set-Cookie lines' findings, and the jar's refusals.
    static func sarif(_ r: AuditReport) -> String {
        var report = FindingsReport()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for hop in r.hops {
            let host = RequestURL(hop.url)?.host ?? hop.url
            for cookie in hop.cookies {
                report.add(
                    findings: cookie.findings, cookie: cookie.received.name, host: host, url: hop.url, time: now,
                    rules: cookie.outcome?.rules ?? [])
                if let rejection = cookie.rejection {
                    report.add(
                        .init(host: host, cookie: cookie.received.name, code: "jar-rejected"), level: .rejects,
                        url: hop.url, time: now, message: rejection)
                }
            }
        }
        return report.sarif(toolVersion: cookieProxyVersion)
    }

    /// `audit --har FILE --format sarif`: the entries' Set-Cookie findings and their verdicts.
    static func sarif(_ entries: [HARAudit.EntryReport]) -> String {
        var report = FindingsReport()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for e in entries {
            let host = RequestURL(e.url)?.host ?? e.url
            for line in e.setCookies {
                report.add(
                    findings: line.findings, cookie: line.received.name, host: host, url: e.url, time: now,
                    rules: line.rules)
            }
            report.add(verdicts: e.verdicts, host: host, url: e.url, time: now)
        }
        return report.sarif(toolVersion: cookieProxyVersion)
    }

    /// `audit --har FILE --format junit`: a suite per host, a case per Set-Cookie line and per cookie a request sent
    /// or was expected to send; a verdict other than sent-as-expected fails, with its reason.
    static func junit(_ entries: [HARAudit.EntryReport]) -> String {
        var report = JUnitReport()
        for e in entries {
            let host = RequestURL(e.url)?.host ?? e.url
            let place = "entry \(e.index): \(e.method) \(e.url) → \(e.status)"
            for line in e.setCookies {
                let rejection = line.event.flatMap { $0.kind == .rejected ? ($0.detail ?? "the jar refused it") : nil }
                report.add(
                    line: line.received, delivered: line.forwarded != nil, rules: line.rules, rejection: rejection,
                    findings: line.findings, suite: host, at: place)
            }
            for v in e.verdicts {
                let failure =
                    v.kind == .sentAsExpected
                    ? nil
                    : (
                        v.kind.rawValue, v.reason.map { "\($0.code.rawValue): \($0.message)" } ?? v.kind.rawValue,
                        "Cookie \(v.name) in \(place)"
                    )
                report.add(suite: host, name: "\(v.name) sent? (\(place))", failure: failure, output: nil)
            }
        }
        return report.text(name: "cookie-proxy audit --har")
    }
}
