import CookieRules
import Foundation

/// The secret of the log's value hashes: 16 random bytes in `log-key` next to the CA (mode 0600), made on first
/// use, so that the same value hashes the same across runs on one machine and differently on another.
package enum LogKey {
    /// The inspector's token: the 16 bytes of `inspector-token`, as 32 hex digits (what the banner's URL, the page's
    /// cookie and `cookie-proxy mcp` present).
    package static func inspectorToken(directory: String) throws(RulesLoadError) -> String {
        try load(directory: directory, name: "inspector-token").map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
            .joined()
    }

    /// `name`: `log-key`, or `inspector-token` (see ``inspectorToken(directory:)``).
    package static func load(directory: String, name: String = "log-key") throws(RulesLoadError) -> [UInt8] {
        let path = directory + "/" + name
        if let data = FileManager.default.contents(atPath: path), data.count >= 16 { return Array(data.prefix(16)) }
        mkdir(directory, 0o700)
        // getrandom(2) on Linux, arc4random on macOS: cryptographically secure.
        var generator = SystemRandomNumberGenerator()
        let key = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        // Written whole under a name of this process's own, then linked into place: link(2) fails if the name
        // exists, so two processes starting at once agree on one key, and none reads a file still being written
        // (with O_EXCL on the final name, the loser could read it empty).
        let temporary = "\(path).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw RulesLoadError(description: "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        let writeError = Console.writeAll(fd, key)
        close(fd)
        defer { unlink(temporary) }
        guard writeError == 0 else {
            throw RulesLoadError(description: "cannot write \(temporary): \(String(cString: strerror(writeError)))")
        }
        if link(temporary, path) != 0 {
            let error = errno
            // Another process made it first: use that one.
            if error == EEXIST, let data = FileManager.default.contents(atPath: path), data.count >= 16 {
                return Array(data.prefix(16))
            }
            throw RulesLoadError(description: "cannot create \(path): \(String(cString: strerror(error)))")
        }
        return key
    }
}
