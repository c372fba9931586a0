import CookieAudit
import CookieKit

/// `audit --format junit`: the report as JUnit XML, the shape CI systems read (Jenkins, GitLab, GitHub's test
/// reporters): a test suite per host, a test case per Set-Cookie line, failed when a browser would not keep the
/// cookie (the jar refused it, a rule dropped it, or a finding says browsers reject it); warnings go to the case's
/// output.
extension AuditCommand {
    static func junit(_ r: AuditReport) -> String {
        var suites: [(host: String, cases: [String], failures: Int)] = []
        for (index, hop) in r.hops.enumerated() {
            let host = RequestURL(hop.url)?.host ?? hop.url
            for cookie in hop.cookies {
                let name = "\(cookie.received.name) (hop \(index + 1): \(hop.method) \(hop.url) → \(hop.status))"
                let rejects = cookie.findings.filter { $0.severity == .rejects }
                var failure: (type: String, message: String)? = nil
                if cookie.delivered == nil {
                    failure = ("dropped", "a rule dropped it: \((cookie.outcome?.rules ?? []).joined(separator: ", "))")
                } else if let rejection = cookie.rejection {
                    failure = ("rejected", rejection)
                } else if let first = rejects.first {
                    failure = ("rejects", "\(first.code): \(first.message)")
                }
                var text = "    <testcase classname=\"\(xml(host))\" name=\"\(xml(name))\">\n"
                if let failure {
                    let detail = (["Set-Cookie: \(cookie.received)"] + cookie.findings.map(\.description))
                        .joined(separator: "\n")
                    text += "      <failure type=\"\(failure.type)\" message=\"\(xml(failure.message))\">"
                    text += xml(detail) + "</failure>\n"
                }
                let other = cookie.findings.filter { $0.severity != .rejects }
                if failure == nil && !other.isEmpty {
                    text += "      <system-out>\(xml(other.map(\.description).joined(separator: "\n")))</system-out>\n"
                }
                text += "    </testcase>\n"
                if let i = suites.firstIndex(where: { $0.host == host }) {
                    suites[i].cases.append(text)
                    suites[i].failures += failure == nil ? 0 : 1
                } else {
                    suites.append((host, [text], failure == nil ? 0 : 1))
                }
            }
        }
        let tests = suites.reduce(0) { $0 + $1.cases.count }
        let failures = suites.reduce(0) { $0 + $1.failures }
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"cookie-proxy audit\" tests=\"\(tests)\" failures=\"\(failures)\">\n"
        for suite in suites {
            out +=
                "  <testsuite name=\"\(xml(suite.host))\" tests=\"\(suite.cases.count)\" failures=\"\(suite.failures)\">\n"
            out += suite.cases.joined()
            out += "  </testsuite>\n"
        }
        return out + "</testsuites>"
    }

    /// Text for XML content and attribute values (XML 1.0 §2.4, §3.3.3); control characters XML cannot carry are
    /// written as U+FFFD.
    static func xml(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value): out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
