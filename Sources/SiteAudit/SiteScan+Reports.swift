import CookieKit
import CookieReports

extension SiteScan {
    /// The audit as JUnit XML (`--format junit`): a suite per consent state (a case each, failed when it was not
    /// applied), a suite per cookie domain with a case per cookie (failed on `set-before-consent`, `undeclared`, a
    /// policy breach or a finding browsers reject; other findings as its output), and a suite of the lines the
    /// browser refused (each failed with its reasons).
    public var junit: String {
        var report = JUnitReport()
        addJUnit(to: &report)
        return report.text(name: "cookie-proxy audit --browser \(engine)")
    }

    /// The suites of ``junit`` added to `report`, each suite's name prefixed with `site` when given (a fleet's
    /// report holds every site's).
    public func addJUnit(to report: inout JUnitReport, site: String? = nil) {
        let prefix = site.map { "\($0) " } ?? ""
        for s in states {
            report.add(
                suite: prefix + "consent", name: s.state.rawValue,
                failure: s.applied ? nil : ("not-applied", s.detail, s.detail), output: s.detail)
        }
        for c in cookies {
            let failing = c.findings.first {
                $0 == "set-before-consent" || $0 == "undeclared" || $0.hasPrefix("policy-")
            }
            let place =
                "\(c.name) (\(c.path); \(c.party) party, set by \(c.setBy), in \(c.states.map(\.rawValue).joined(separator: ", ")))"
            let detail = ([c.line.map { "Set-Cookie: \($0)" } ?? "set by a script on \(c.setOn)"] + c.findings)
                .joined(separator: "\n")
            report.add(
                suite: prefix + c.domain, name: place,
                failure: failing.map { ($0, "\(c.name): \($0) (\(c.category.rawValue))", detail) },
                output: c.findings.joined(separator: "\n"))
        }
        for r in refused {
            let reasons = r.reasons.joined(separator: ", ")
            report.add(
                suite: prefix + "refused by \(engine)", name: "\(r.name) from \(r.url) [\(r.state.rawValue)]",
                failure: ("refused", "\(engine) refused \(r.name): \(reasons)", "Set-Cookie: \(r.line)"), output: nil)
        }
        if let baseline {
            for row in baseline.rows where row.kind != .same {
                report.add(
                    suite: prefix + "since the baseline", name: "\(row.name) (\(row.domain)\(row.path))",
                    failure: (row.kind.rawValue, row.line, row.line), output: nil)
            }
        }
    }

    /// The audit as SARIF 2.1.0 (`--format sarif`): a result per cookie finding (the lint's on its line; the
    /// audit's `set-before-consent`, `undeclared` and policy breaches as errors) and per refused line
    /// (`browser-refused`), at the URL it came from.
    public func sarif(toolVersion: String, time: Int64) -> String {
        var report = FindingsReport()
        addFindings(to: &report, time: time)
        return report.sarif(toolVersion: toolVersion)
    }

    /// The results of ``sarif(toolVersion:time:)`` added to `report` (a fleet's holds every site's). With a
    /// baseline, a result per cookie that is new, changed or gone (`cookie-new`, …).
    public func addFindings(to report: inout FindingsReport, time: Int64) {
        for c in cookies {
            let url = c.setBy == "http" ? c.setOn : c.firstPage
            for f in c.findings {
                let audit = f == "set-before-consent" || f == "undeclared" || f.hasPrefix("policy-")
                let message =
                    audit
                    ? "\(c.name) (\(c.category.rawValue), \(c.party) party) \(f) in \(c.states.map(\.rawValue).joined(separator: ", "))"
                    : "\(c.name): \(f)"
                report.add(
                    .init(host: c.domain, cookie: c.name, code: f), level: audit ? .rejects : .warning, url: url,
                    time: time, message: message)
            }
        }
        for r in refused {
            report.add(
                .init(host: RequestURL(r.url)?.host ?? r.url, cookie: r.name, code: "browser-refused"),
                level: .rejects, url: r.url, time: time,
                message: "\(engine) refused \(r.name): \(r.reasons.joined(separator: ", "))")
        }
        for row in baseline?.rows ?? [] where row.kind != .same {
            report.add(
                .init(host: row.domain, cookie: row.name, code: "cookie-\(row.kind.rawValue)"), level: .warning,
                url: start, time: time, message: row.line)
        }
    }
}
