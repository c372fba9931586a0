import Foundation

/// Reads just the Set-Cookie values out of a conformance file (for round-trip and benchmark corpora).
enum ConformanceSuiteHeaders {
    static func load(_ path: String) throws -> [[UInt8]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let root = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        var out: [[UInt8]] = []
        for c in root["cases"] as? [[String: Any]] ?? [] {
            for step in c["steps"] as? [[String: Any]] ?? [] {
                for h in step["headers"] as? [String] ?? [] { out.append(Array(h.utf8)) }
            }
        }
        return out
    }
}
