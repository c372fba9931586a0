import Foundation

/// Standard output and error without Foundation's buffering surprises.
package enum Console {
    package static func out(_ text: String) {
        var t = text
        if !t.hasSuffix("\n") { t += "\n" }
        writeAll(1, t)
    }
    package static func err(_ text: String) {
        var t = text
        if !t.hasSuffix("\n") { t += "\n" }
        writeAll(2, t)
    }

    /// Writes to stderr without adding a newline (the live status line).
    package static func errRaw(_ text: String) { writeAll(2, text) }

    package static func writeAll(_ fd: Int32, _ text: String) { writeAll(fd, Array(text.utf8)) }

    package static func writeAll(_ fd: Int32, _ data: [UInt8]) {
        var bytes = data
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 {
                if n < 0 && errno == EINTR { continue }
                return
            }
            offset += n
        }
    }
    package static var stdoutIsTerminal: Bool { isatty(1) != 0 }

    /// Lines of standard input.
    package static func readLines() -> [String] {
        var lines: [String] = []
        while let line = readLine(strippingNewline: true) { lines.append(line) }
        return lines
    }
}
