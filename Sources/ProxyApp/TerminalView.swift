import Foundation
import Locking
import Terminal

/// The terminal when log lines and the live status line share it: the status line stays the last line. Each
/// print clears it, writes the lines above it and draws it again, under one lock.
public final class TerminalView: Sendable {
    private let status = Locked<String>("")

    public init() {}

    /// Draws the status line (stderr) in place.
    public func setStatus(_ text: TerminalText) {
        status.withLock { s in
            s = text.text
            Console.writeAll(2, "\r\u{1B}[2K\(text)")
        }
    }

    /// Ends the status line (before the last messages).
    public func finish() {
        status.withLock { s in
            if !s.isEmpty { Console.writeAll(2, "\n") }
            s = ""
        }
    }

    /// Writes `bytes` (whole lines) to `fd` above the status line; returns 0 or the errno of a failed write.
    public func printAbove(fd: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        status.withLock { s in
            if s.isEmpty { return Console.writeAll(fd, bytes) }
            Console.writeAll(2, "\r\u{1B}[2K")
            let error = Console.writeAll(fd, bytes)
            Console.writeAll(2, s)
            return error
        }
    }

    public func printAbove(fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        if bytes.last != 0x0A { bytes.append(0x0A) }
        _ = bytes.withUnsafeMutableBufferPointer { printAbove(fd: fd, UnsafeBufferPointer($0)) }
    }

}
