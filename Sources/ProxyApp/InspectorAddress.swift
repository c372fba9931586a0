import Foundation
import Terminal

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a running proxy's inspector is, for `cookie-proxy ui url` and `cookie-proxy mcp` in another terminal: `run`
/// takes another port when the default one is taken, and they would otherwise ask the default. `inspector-address`
/// in the configuration folder (mode 0600, beside the token) holds the URL and the process's id; it counts only while
/// that process lives, and the proxy removes it when it stops (if it is still its own: the last proxy started wins).
public enum InspectorAddress {
    static let name = "inspector-address"

    /// Records `url` (`http://127.0.0.1:8082`) as this process's inspector.
    public static func record(_ url: String, directory: String) {
        let path = directory + "/" + name
        let temporary = "\(path).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let failed = Console.writeAll(fd, Array("\(url) \(getpid())\n".utf8)) != 0
        close(fd)
        if failed || rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// The URL a running proxy recorded, if its process still runs.
    public static func recorded(directory: String) -> String? {
        guard let (url, pid) = read(directory: directory), kill(pid, 0) == 0 || errno == EPERM else { return nil }
        return url
    }

    /// Removes the record if it is still this process's.
    public static func forget(directory: String) {
        guard let (_, pid) = read(directory: directory), pid == getpid() else { return }
        unlink(directory + "/" + name)
    }

    static func read(directory: String) -> (String, pid_t)? {
        guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { return nil }
        let parts = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard parts.count == 2, parts[0].hasPrefix("http://"), let pid = pid_t(parts[1]), pid > 0 else { return nil }
        return (String(parts[0]), pid)
    }
}
