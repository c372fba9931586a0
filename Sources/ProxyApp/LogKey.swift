import CookieRules
import HTTPGrammar
import Foundation
import Terminal

/// The secret of the log's value hashes: 16 random bytes in `log-key` next to the CA (mode 0600), made on first
/// use, so that the same value hashes the same across runs on one machine and differently on another.
public enum LogKey {
    /// The inspector's token, 32 hex digits: what the banner's URL, the page's cookie, `cookie-proxy mcp` and
    /// `Authorization: Bearer` present. `inspector-token` holds it as that text and a line end, so that
    /// `Authorization: Bearer $(cat inspector-token)` works; a file of 16 raw bytes (as earlier versions wrote it)
    /// is read as those bytes in hex, the same token.
    public static func inspectorToken(directory: String) throws(RulesLoadError) -> String {
        let bytes = try load(directory: directory, name: "inspector-token", text: true)
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func hex(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        Array(bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined().utf8)
    }

    /// What the file holds, if it is a secret already: 32 hex digits (`text`), else its first 16 bytes.
    static func read(_ data: Data, text: Bool) -> [UInt8]? {
        guard text else { return data.count >= 16 ? Array(data.prefix(16)) : nil }
        let digits = Array(data.prefix(32))
        if digits.count == 32 && digits.allSatisfy({ ByteClass.hexValue($0) != nil })
            && (data.count == 32 || data[32] == 0x0A)
        {
            return digits.map { $0 | 0x20 }  // lowercase, as the banner writes it
        }
        // 16 raw bytes: the form before the file was text.
        return data.count == 16 ? hex(data) : nil
    }

    /// `name`: `log-key` (16 random bytes), or `inspector-token` with `text` (16 random bytes as 32 hex digits and a
    /// line end; see ``inspectorToken(directory:)``). Made on first use, mode 0600.
    static func load(directory: String, name: String = "log-key", text: Bool = false) throws(RulesLoadError)
        -> [UInt8]
    {
        let path = directory + "/" + name
        if let data = FileManager.default.contents(atPath: path), let secret = read(data, text: text) { return secret }
        // Its parents too: on a fresh machine even `~/.config` may not exist yet.
        try? FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // getrandom(2) on Linux, arc4random on macOS: cryptographically secure.
        var generator = SystemRandomNumberGenerator()
        let random = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let key = text ? hex(random) : random
        // Written whole under a name of this process's own, then linked into place: link(2) fails if the name
        // exists, so two processes starting at once agree on one key, and none reads a file still being written
        // (with O_EXCL on the final name, the loser could read it empty).
        let temporary = "\(path).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw RulesLoadError(description: "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        let writeError = Console.writeAll(fd, text ? key + [0x0A] : key)
        close(fd)
        defer { unlink(temporary) }
        guard writeError == 0 else {
            throw RulesLoadError(description: "cannot write \(temporary): \(String(cString: strerror(writeError)))")
        }
        if link(temporary, path) != 0 {
            let error = errno
            // Another process made it first: use that one.
            if error == EEXIST, let data = FileManager.default.contents(atPath: path),
                let secret = read(data, text: text)
            {
                return secret
            }
            throw RulesLoadError(description: "cannot create \(path): \(String(cString: strerror(error)))")
        }
        return key
    }
}
