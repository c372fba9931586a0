import CookieRules
import Foundation

/// Reading rules from disk: a file, or a folder of `*.rules` files in name order.
public enum RulesFiles {
    public static func load(_ path: String) throws -> RuleSet {
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

    /// A fingerprint of what is on disk (names, modification times, sizes and inodes), to notice edits.
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
            // stat(2), not FileManager's attributes: those also look up the owner's and group's names (reading
            // /etc/passwd and /etc/group every second). The inode catches an editor's save by rename.
            var info = stat()
            guard stat(f, &info) == 0 else { return "\(f)@missing" }
            #if canImport(Darwin)
                let modified = info.st_mtimespec
            #else
                let modified = info.st_mtim
            #endif
            return "\(f)@\(modified.tv_sec).\(modified.tv_nsec)#\(info.st_size)i\(info.st_ino)"
        }.joined(separator: "|")
    }
}
