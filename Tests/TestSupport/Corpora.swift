import CookieConformance
import Foundation

/// The repository's cookie corpora (conformance/), as tests in several targets read them.
public enum Corpora {
    /// Every `Set-Cookie` line of the corpora (the http-state and WPT cases, read by the conformance runner), once
    /// each.
    public static func setCookieLines() throws -> [[UInt8]] {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("conformance").path
        var seen = Set<[UInt8]>()
        var lines: [[UInt8]] = []
        for corpus in ["http-state.json", "wpt.json"] {
            for c in try ConformanceSuite(contentsOf: "\(folder)/\(corpus)").cases {
                for case .set(_, _, let headers) in c.steps {
                    for line in headers where seen.insert(line).inserted { lines.append(line) }
                }
            }
        }
        return lines
    }
}
