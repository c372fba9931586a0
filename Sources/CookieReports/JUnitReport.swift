import CookieKit

/// JUnit XML, the report shape CI systems read (Jenkins, GitLab, GitHub's test reporters): test suites by host,
/// test cases by cookie, a failure with its reason where a browser would not keep (or was not expected to send)
/// the cookie, and findings that do not fail as the case's output.
public struct JUnitReport: Sendable {
    public init() {}

    private var suites: [(name: String, cases: [String], failures: Int)] = []

    public mutating func add(
        suite: String, name: String, failure: (type: String, message: String, detail: String)?, output: String?
    ) {
        var text = "    <testcase classname=\"\(Self.xml(suite))\" name=\"\(Self.xml(name))\">\n"
        if let failure {
            text += "      <failure type=\"\(Self.xml(failure.type))\" message=\"\(Self.xml(failure.message))\">"
            text += Self.xml(failure.detail) + "</failure>\n"
        } else if let output, !output.isEmpty {
            text += "      <system-out>\(Self.xml(output))</system-out>\n"
        }
        text += "    </testcase>\n"
        let failed = failure == nil ? 0 : 1
        if let i = suites.firstIndex(where: { $0.name == suite }) {
            suites[i].cases.append(text)
            suites[i].failures += failed
        } else {
            suites.append((suite, [text], failed))
        }
    }

    public func text(name: String) -> String {
        let tests = suites.reduce(0) { $0 + $1.cases.count }
        let failures = suites.reduce(0) { $0 + $1.failures }
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"\(Self.xml(name))\" tests=\"\(tests)\" failures=\"\(failures)\">\n"
        for suite in suites {
            out +=
                "  <testsuite name=\"\(Self.xml(suite.name))\" tests=\"\(suite.cases.count)\" failures=\"\(suite.failures)\">\n"
            out += suite.cases.joined() + "  </testsuite>\n"
        }
        return out + "</testsuites>"
    }

    /// Text for XML content and attribute values (XML 1.0 §2.4, §3.3.3); a control character XML cannot carry is
    /// written as U+FFFD.
    public static func xml(_ text: String) -> String {
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

    /// A Set-Cookie line's case: failed when it is not delivered (a rule dropped it), the jar refused it, or a
    /// finding says browsers reject it.
    public mutating func add(
        line received: SetCookie, delivered: Bool, rules: [String], rejection: String?, findings: [LintFinding],
        suite: String, at place: String
    ) {
        var failure: (String, String)? = nil
        if !delivered {
            failure = ("dropped", "a rule dropped it: \(rules.joined(separator: ", "))")
        } else if let rejection {
            failure = ("rejected", rejection)
        } else if let first = findings.first(where: { $0.severity == .rejects }) {
            failure = ("rejects", "\(first.code): \(first.message)")
        }
        let detail = (["Set-Cookie: \(received)"] + findings.map(\.description)).joined(separator: "\n")
        add(
            suite: suite, name: "\(received.name) (\(place))", failure: failure.map { ($0.0, $0.1, detail) },
            output: findings.map(\.description).joined(separator: "\n"))
    }
}
