import Foundation

/// The messages of one browser's automation protocol, as text, and the clock a driver reads them against: the live
/// browser's (a pipe, a WebSocket, WebDriver's HTTP requests, each on the wall clock) or a recorded transcript's
/// (``TranscriptChannel``, on the transcript's own clock). A driver reads the time and waits only through its
/// channel, so a transcript replays its decisions exactly (when the network was quiet, when a page timed out).
package protocol BrowserChannel: AnyObject {
    /// Sends one message (a JSON text).
    func send(_ message: String) throws(BrowserFailure)
    /// The next message, or nil when none came by `deadline`; a failure when the peer closed.
    func receive(until deadline: Date) throws(BrowserFailure) -> String?
    /// The channel's time: the wall clock, or the transcript's.
    var now: Date { get }
    /// Waits `seconds` (a driver that polls: WebKit over classic WebDriver).
    func pause(_ seconds: Double)
    /// Whether the peer closed its end (it ended or crashed).
    var closed: Bool { get }
}

extension BrowserChannel {
    package var now: Date { Date() }
    package func pause(_ seconds: Double) { usleep(UInt32(max(0, seconds) * 1_000_000)) }
}

/// A channel whose every message, wait and failure is also written to a transcript file (mode 0600: a page's
/// cookies are in it), one entry a line: `> T MESSAGE` sent, `< T MESSAGE` received, `. T` nothing by the
/// deadline, `x T WHY` the peer closed; `T` is seconds since the channel opened. Started by
/// `COOKIE_PROXY_BROWSER_TRANSCRIPTS=DIR` (``DriverOptions/transcripts``): the fixtures of BrowserEnginesTests are
/// made this way from the real browsers (`scripts/record-browser-transcripts.sh`).
package final class RecordingChannel: BrowserChannel {
    private let inner: any BrowserChannel
    private let file: FileHandle
    private let start: Date

    package init(_ inner: any BrowserChannel, to path: String) throws(BrowserFailure) {
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let file = FileHandle(forWritingAtPath: path)
        else { throw BrowserFailure("cannot write the transcript \(path)") }
        (self.inner, self.file, self.start) = (inner, file, inner.now)
    }

    deinit { try? file.close() }

    private func write(_ kind: Character, _ text: String?) {
        let t = String(format: "%.3f", inner.now.timeIntervalSince(start))
        // A JSON text has no raw line break but whitespace between tokens, which may go.
        let body = text.map {
            " " + $0.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ")
        }
        try? file.write(contentsOf: Data("\(kind) \(t)\(body ?? "")\n".utf8))
    }

    package func send(_ message: String) throws(BrowserFailure) {
        write(">", message)
        do { try inner.send(message) } catch {
            write("x", error.description)
            throw error
        }
    }

    package func receive(until deadline: Date) throws(BrowserFailure) -> String? {
        do {
            let message = try inner.receive(until: deadline)
            write(message == nil ? "." : "<", message)
            return message
        } catch {
            write("x", error.description)
            throw error
        }
    }

    package var now: Date { inner.now }
    package func pause(_ seconds: Double) { inner.pause(seconds) }
    package var closed: Bool { inner.closed }
}

/// A recorded transcript played back as the browser (``RecordingChannel`` writes them): each message the driver
/// sends must be the recorded one, byte for byte, and each receive gets what the browser gave at that point (a
/// message, nothing by the deadline, or the end); the clock is the transcript's, so the driver decides as it did.
/// A driver that strays from the recording fails with where and how.
package final class TranscriptChannel: BrowserChannel {
    enum Entry: Equatable {
        case sent(String), received(String), nothing, ended(String)
    }

    private let name: String
    private let entries: [(time: Double, entry: Entry, line: Int)]
    private var next = 0
    private var time = 0.0
    package private(set) var closed = false

    /// `text`: the transcript; `name`, its file's, for the failures.
    package init(_ text: String, name: String) throws(BrowserFailure) {
        var entries: [(Double, Entry, Int)] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.isEmpty {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, let time = Double(parts[1]) else {
                throw BrowserFailure("\(name):\(number + 1): not a transcript entry")
            }
            let rest = parts.count > 2 ? String(parts[2]) : ""
            let entry: Entry
            switch parts[0] {
            case ">": entry = .sent(rest)
            case "<": entry = .received(rest)
            case ".": entry = .nothing
            case "x": entry = .ended(rest)
            default: throw BrowserFailure("\(name):\(number + 1): unknown entry kind '\(parts[0])'")
            }
            entries.append((time, entry, number + 1))
        }
        (self.name, self.entries) = (name, entries)
    }

    package convenience init(contentsOf path: String) throws(BrowserFailure) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BrowserFailure("cannot read the transcript \(path)")
        }
        try self.init(String(decoding: data, as: UTF8.self), name: (path as NSString).lastPathComponent)
    }

    /// Whether the driver took every recorded entry (a replay that stops early has not said everything it did).
    package var finished: Bool { next == entries.count }

    /// Where the replay stands, for a failure: the next entry's line.
    private var place: String { next < entries.count ? "\(name):\(entries[next].line)" : "\(name): end" }

    package func send(_ message: String) throws(BrowserFailure) {
        // A wait that timed out in the recording may not happen in the replay: the wall clock the recording's
        // driver read between two entries is a little later than the transcript's. It carried nothing.
        while next < entries.count, entries[next].entry == .nothing { next += 1 }
        guard next < entries.count else { throw BrowserFailure("\(place): the driver sent more: \(message)") }
        let (t, entry, _) = entries[next]
        switch entry {
        case .sent(let recorded) where recorded == message:
            (time, next) = (max(time, t), next + 1)
        case .ended(let why):
            (time, next, closed) = (max(time, t), next + 1, true)
            throw BrowserFailure(why)
        default:
            throw BrowserFailure("\(place): the driver sent \(message), the recording has \(entry)")
        }
    }

    package func receive(until deadline: Date) throws(BrowserFailure) -> String? {
        guard next < entries.count else { throw BrowserFailure("\(place): the driver read past the recording") }
        let (t, entry, _) = entries[next]
        switch entry {
        case .received(let message):
            (time, next) = (max(time, t), next + 1)
            return message
        case .nothing:
            (time, next) = (max(time, t, deadline.timeIntervalSince1970), next + 1)
            return nil
        case .ended(let why):
            (time, next, closed) = (max(time, t), next + 1, true)
            throw BrowserFailure(why)
        case .sent:
            // The recording's driver, reading the wall clock a little later, had stopped waiting: nothing came.
            time = max(time, deadline.timeIntervalSince1970)
            return nil
        }
    }

    package var now: Date { Date(timeIntervalSince1970: time) }
    package func pause(_ seconds: Double) { time += seconds }
}
