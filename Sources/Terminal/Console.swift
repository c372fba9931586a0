import Foundation

/// Standard output and error without Foundation's buffering surprises.
public enum Console {
    /// Text for a person on standard output: every value in it escaped (``TerminalText``).
    public static func out(_ text: TerminalText) { line(1, text.text) }
    /// A note, warning or error on standard error: every value in it escaped (``TerminalText``).
    public static func err(_ text: TerminalText) { line(2, text.text) }

    /// A document in a machine format on standard output (JSON, XML, SARIF, PEM): escaped for its own format by
    /// whoever made it, and written as it is.
    public static func document(_ text: String) { line(1, text) }

    private static func line(_ fd: Int32, _ text: String) {
        var t = text
        if !t.hasSuffix("\n") { t += "\n" }
        writeAll(fd, t)
    }

    /// Writes to stderr without adding a newline (the live status line).
    public static func errRaw(_ text: TerminalText) { writeAll(2, text.text) }

    public static func writeAll(_ fd: Int32, _ text: String) { writeAll(fd, Array(text.utf8)) }

    /// Writes all of `data`; 0, or the errno of the write that failed.
    @discardableResult
    public static func writeAll(_ fd: Int32, _ data: [UInt8]) -> Int32 {
        data.withUnsafeBufferPointer { writeAll(fd, $0) }
    }

    /// Writes all of `bytes` (after a short write, from where it stopped; EINTR retried): the commands' and the
    /// terminal's one write loop (the log's writer has its own, with writev). 0, or the errno of the write that
    /// failed.
    @discardableResult
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if n == 0 { return EIO }
            offset += n
        }
        return 0
    }
    public static var stdoutIsTerminal: Bool { isatty(1) != 0 }

    /// Lines of standard input.
    public static func readLines() -> [String] {
        var lines: [String] = []
        while let line = readLine(strippingNewline: true) { lines.append(line) }
        return lines
    }
}
