import Foundation

/// The log file's pages in the kernel's page cache. The log is appended to and rarely read back while the proxy
/// runs, yet every byte written stays cached (dirty, then clean) until memory runs short: a busy log fills the
/// page cache with itself, pushes out what the rest of the machine had cached, and makes the kernel find a fresh
/// page for every 4 KiB written, which under a hypervisor that takes freed guest memory back (free page
/// reporting, a ballooned VM) is a fault to the host per page, the largest part of what a record cost.
///
/// So the writer lets go of what lies behind it: each time the file's end crosses a `step` boundary it advises
/// the kernel (POSIX_FADV_DONTNEED, Linux's `fadvise64`) over the last few steps. For dirty pages that starts
/// their writeback; clean ones are dropped, so a step's pages go at the next crossing or the one after, once
/// written, and the freed pages are the next ones the writer fills. The newest step stays cached for whoever
/// follows the file (`tail -f`). Only regular files; a pipe, a terminal or `/dev/null` has nothing to let go.
struct LogPageCache {
    /// How far the file's end moves between two advices.
    static let step = 2 << 20
    /// How many steps behind a crossing one advice covers: the step just written (writeback starts) and the
    /// earlier ones whose pages may not all have been clean at the crossing before.
    static let reach = 4
    /// Where the file ends, as far as this writer knows (others may append too: then the advice covers less).
    private(set) var end: Int

    /// For a file that ends at `end`.
    init(end: Int) { self.end = end }

    /// After `count` more bytes were appended: the byte range to advise, or nil when no step boundary was crossed.
    mutating func appended(_ count: Int) -> Range<Int>? {
        let before = end / Self.step
        end += count
        let after = end / Self.step
        guard after > before else { return nil }
        return max(0, (before + 1 - Self.reach) * Self.step)..<(after * Self.step)
    }
}

extension LogPageCache {
    /// For the log file `fd`; nil when it is not a regular file.
    init?(fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        self.init(end: Int(info.st_size))
    }

    /// Advises the kernel that `range` of `fd` will not be read soon. A failure changes nothing that was written
    /// (the pages stay cached, as without it), so it is not reported.
    static func release(_ fd: Int32, _ range: Range<Int>) {
        #if os(Linux)
            _ = posix_fadvise(fd, off_t(range.lowerBound), off_t(range.count), POSIX_FADV_DONTNEED)
        #endif
    }
}
