import CookieKit
import CookieRules
import ExchangeFacts
import Foundation
import HTTPGrammar
import Locking
import ProxyCore

/// `run --access-log FILE`: one line per exchange, whatever became of it (relayed, answered by the proxy itself,
/// cut short, a tunnel), in the combined log format nginx and Apache write and GoAccess reads:
///
///     127.0.0.1 - - [06/Dec/2026:08:15:07 +0000] "GET /api/me HTTP/1.1" 404 23 "http://app.localhost/" "curl/7.88.1"
///
/// The request is the one the client sent (its target as it wrote it: a route's prefix, not the upstream's path;
/// a forward proxy's absolute URL), so that a person debugging a route sees what the browser asked for beside what
/// the upstream answered. The time is the exchange's end, in UTC; the size is the bytes written for the client after
/// the head (`-` for none). Written line by line with `write(2)` in append mode: another process may rotate the file
/// (SIGUSR1 reopens it, as it does the transformation log).
package final class AccessLog: Sendable {
    private let path: String
    /// The file, the buffer each line is made in (reused: a line allocates nothing), the lines written and those a
    /// failed write lost, with the first failure's errno text (said when the proxy stops: nothing is lost silently).
    private let file: Locked<(fd: Int32, line: [UInt8], written: Int, lost: Int, failure: String?)>
    /// Each forwarded request's Referer and User-Agent, until its exchange ends (a request answered before it was
    /// forwarded has neither).
    private let pending = Locked<[UInt64: (referer: [UInt8], agent: [UInt8])]>([:])

    package init(path: String) throws(RulesLoadError) {
        self.path = path
        file = Locked((try LogSink.open(path), [], 0, 0, nil))
    }

    /// The request as it goes upstream: its Referer and User-Agent, kept for its line.
    package func requestForwarded(_ id: UInt64, head: HTTPHead) {
        let referer = head.fields.first { $0.known == .referer }.map { Array(head.valueBytes($0)) }
        let agent = head.fields.first { head.field($0, is: "user-agent") }.map { Array(head.valueBytes($0)) }
        guard referer != nil || agent != nil else { return }
        pending.withLock { table in
            table[id] = (referer ?? [], agent ?? [])
            // An exchange the machine never heard end (its client reset the stream, a deadline closed the connection)
            // leaves its entry: past `pendingLimit` entries, those of requests that many ids old go.
            if table.count > Self.pendingLimit {
                table = table.filter { $0.key + UInt64(Self.pendingLimit) > id }
            }
        }
    }

    /// Requests whose Referer and User-Agent wait for their exchange's end, at most (about).
    package static let pendingLimit = 4096

    /// How many requests' fields wait for their exchange's end.
    package var pendingCount: Int { pending.withLock { $0.count } }

    /// The exchange ended: its line.
    func exchangeEnded(_ context: ExchangeContext, bodyBytes: Int, time: Int64) {
        let kept = pending.withLock { $0.isEmpty ? nil : $0.removeValue(forKey: context.requestID) }
        file.withLock { file in
            file.line.removeAll(keepingCapacity: true)
            Self.write(
                context, bodyBytes: bodyBytes, time: time, referer: kept?.referer ?? [], agent: kept?.agent ?? [],
                into: &file.line)
            file.line.append(0x0A)
            let fd = file.fd
            let failure = file.line.withUnsafeBytes { bytes -> String? in
                var at = 0
                while at < bytes.count {
                    let n = Foundation.write(fd, bytes.baseAddress! + at, bytes.count - at)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { return n < 0 ? String(cString: strerror(errno)) : "nothing written" }
                    at += n
                }
                return nil
            }
            if let failure {
                file.lost += 1
                if file.failure == nil { file.failure = failure }
            } else {
                file.written += 1
            }
            if file.line.capacity > 16384 { file.line = [] }
        }
    }

    /// Lines written and lost so far, and why the first lost one was (nil: none lost).
    var counts: (written: Int, lost: Int, failure: String?) {
        file.withLock { ($0.written, $0.lost, $0.failure) }
    }

    /// Opens the file again (it was moved aside by logrotate).
    func reopen() {
        let new: Int32
        do {
            new = try LogSink.open(path)
        } catch {
            return Console.err("cookie-proxy: access log: \(error); its lines go on to the file it had open")
        }
        file.withLock { file in
            Foundation.close(file.fd)
            file.fd = new
        }
    }

    deinit { file.withLock { _ = Foundation.close($0.fd) } }

    /// One exchange's line (without its line end), as text: ``write(_:bodyBytes:time:referer:agent:into:)``'s.
    package static func line(
        _ context: ExchangeContext, bodyBytes: Int, time: Int64, referer: String, agent: String
    ) -> String {
        var out: [UInt8] = []
        write(
            context, bodyBytes: bodyBytes, time: time, referer: referer == "-" ? [] : Array(referer.utf8),
            agent: agent == "-" ? [] : Array(agent.utf8), into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// One exchange's line, written byte by byte into `out` (string interpolation and a character-by-character
    /// escape cost more than the rest of a request did: docs/architecture.md). The request line is the client's: for
    /// a route (or an intercepted
    /// or TLS listener's origin-form request) its target, for a forward proxy's request its absolute URL; `-` for a
    /// request refused before its head was read. An empty `referer` or `agent` is `-`.
    static func write(
        _ context: ExchangeContext, bodyBytes: Int, time: Int64, referer: [UInt8], agent: [UInt8],
        into out: inout [UInt8]
    ) {
        append(context.clientAddress, into: &out)
        out.append(contentsOf: Self.afterAddress)
        writeTimestamp(time, into: &out)
        out.append(contentsOf: Self.afterTime)
        if context.method == "-" {
            out.append(0x2D)
        } else {
            escape(context.method, into: &out)
            out.append(0x20)
            if context.route == nil && context.scheme == "http" && !context.host.isEmpty
                && context.target.utf8.first == 0x2F
            {
                // A forward proxy's request: the absolute URL the client wrote, its default port left out.
                out.append(contentsOf: Self.http)
                escape(Origin(host: context.host, port: context.port).hostFieldValue(defaultPort: 80), into: &out)
            }
            escape(context.target, into: &out)
            out.append(0x20)
            let name = context.clientSide.name
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        }
        out.append(contentsOf: Self.afterRequest)
        if let status = context.status { writeNumber(status, into: &out) } else { out.append(0x2D) }
        out.append(0x20)
        if bodyBytes > 0 { writeNumber(bodyBytes, into: &out) } else { out.append(0x2D) }
        out.append(contentsOf: Self.beforeReferer)
        if referer.isEmpty { out.append(0x2D) } else { escape(referer, into: &out) }
        out.append(contentsOf: Self.betweenQuoted)
        if agent.isEmpty { out.append(0x2D) } else { escape(agent, into: &out) }
        out.append(0x22)
    }

    /// `06/Dec/2026:08:15:07 +0000` (the common log format's time, in UTC) for milliseconds since the epoch: the
    /// civil date from the day number (``CookieDate/civilFromDays(_:)``), without the C library's time zone work.
    package static func writeTimestamp(_ milliseconds: Int64, into out: inout [UInt8]) {
        let seconds = milliseconds / 1000
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let secondOfDay = Int(seconds - days * 86400)
        let (year, month, day) = CookieDate.civilFromDays(days)
        writeTwo(day, into: &out)
        out.append(0x2F)
        out.append(contentsOf: months[month - 1])
        out.append(0x2F)
        writeNumber(year, into: &out)
        out.append(0x3A)
        writeTwo(secondOfDay / 3600, into: &out)
        out.append(0x3A)
        writeTwo(secondOfDay / 60 % 60, into: &out)
        out.append(0x3A)
        writeTwo(secondOfDay % 60, into: &out)
        out.append(contentsOf: Self.utc)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .map { Array($0.utf8) }

    private static func writeTwo(_ n: Int, into out: inout [UInt8]) {
        out.append(0x30 + UInt8(n / 10))
        out.append(0x30 + UInt8(n % 10))
    }

    /// `n`'s decimal digits (`n` ≥ 0), made in temporary memory and written with one append.
    private static func writeNumber(_ n: Int, into out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var n = n
            var at = 20
            repeat {
                at -= 1
                digits[at] = 0x30 + UInt8(n % 10)
                n /= 10
            } while n > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[at..<20]))
        }
    }

    // The line's fixed parts, as bytes.
    private static let afterAddress = Array(" - - [".utf8)
    private static let afterTime = Array("] \"".utf8)
    private static let http = Array("http://".utf8)
    private static let afterRequest = Array("\" ".utf8)
    private static let beforeReferer = Array(" \"".utf8)
    private static let betweenQuoted = Array("\" \"".utf8)
    private static let utc = Array(" +0000".utf8)

    /// A string's bytes, as they are.
    private static func append(_ text: String, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    /// A string's bytes, escaped (``escape(_:into:)``).
    private static func escape(_ text: String, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { escape($0, into: &out) }
    }

    /// A quoted field's bytes as nginx writes them: `"`, `\` and bytes outside printable ASCII as `\xNN`, so that
    /// a line is one line and its quotes one reading.
    /// Runs that need no escape are appended whole.
    static func escape(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        var start = 0
        for (i, byte) in bytes.enumerated() where byte < 0x20 || byte >= 0x7F || byte == 0x22 || byte == 0x5C {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
            out.append(contentsOf: [0x5C, 0x78, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            start = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    }

    static func escape(_ bytes: [UInt8], into out: inout [UInt8]) {
        bytes.withUnsafeBufferPointer { escape($0, into: &out) }
    }

    private static let hex = Array("0123456789ABCDEF".utf8)

}
