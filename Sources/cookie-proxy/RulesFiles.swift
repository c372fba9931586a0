import CookieRules
import Foundation

/// Reading rules from disk: a file, or a folder of `*.rules` files in name order.
enum RulesFiles {
    static func load(_ path: String) throws -> RuleSet {
        try RulesParser.load(
            path: path,
            reader: { try String(contentsOfFile: $0, encoding: .utf8) },
            list: { p in
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: p, isDirectory: &isDirectory), isDirectory.boolValue else {
                    return nil
                }
                return (try? FileManager.default.contentsOfDirectory(atPath: p)) ?? []
            })
    }

    /// A fingerprint of what is on disk (names and modification times), to notice edits.
    static func fingerprint(_ path: String) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "missing" }
        var files = [path]
        if isDirectory.boolValue {
            files = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter {
                $0.hasSuffix(".rules")
            }
            .sorted().map { path + "/" + $0 }
        }
        return files.map { f in
            let attributes = try? FileManager.default.attributesOfItem(atPath: f)
            let date = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            let size = (attributes?[.size] as? NSNumber)?.intValue ?? -1
            return "\(f)@\(date)#\(size)"
        }.joined(separator: "|")
    }
}
