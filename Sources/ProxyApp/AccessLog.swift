import CookieKit
import CookieRules
import ExchangeFacts
import Foundation
import HTTPGrammar
import Locking
import ProxyCore

/// `run --access-log FILE|-`: one line per exchange, whatever became of it (relayed, answered by the proxy itself,
/// cut short, a tunnel), in one of two formats (``Format``). `combined` is the format nginx and Apache write and
/// GoAccess reads:
///
///     127.0.0.1 - - [06/Dec/2026:08:15:07 +0000] "GET /api/me HTTP/1.1" 404 23 "http://app.localhost/" "curl/7.88.1"
///
/// The request is the one the client sent (its target as it wrote it: a route's prefix, not the upstream's path;
/// a forward proxy's absolute URL), so that a person debugging a route sees what the browser asked for beside what
/// the upstream answered; `json` adds what went upstream (``writeJSON``). The time is the exchange's end, in UTC;
/// the size is the bytes written for the client after the head (`-` for none).
///
/// An observer like the others: each loop's part makes its lines and hands them to a ``LogSink`` of their own, the
/// transformation log's lossless writer (a bounded queue the loop waits on when full, a writer thread, SIGUSR1
/// reopening the file after logrotate moved it, and a count of what it wrote and could not).
package final class AccessLog: ExchangeObserver {
    /// `--access-log-format`.
    package enum Format: String, Sendable, CaseIterable {
        /// nginx's and Apache's combined log format.
        case combined
        /// A JSON object per line, with Caddy's field names and the proxy's own.
        case json
    }

    let format: Format
    /// The writer (its own thread, file and counts).
    let sink: LogSink

    /// `path`: a file (appended to, made mode 0600), or `-` for standard output.
    package init(path: String, format: Format = .combined) throws(RulesLoadError) {
        self.format = format
        do {
            sink = try LogSink(
                destination: path == "-" ? .standardOutput(compact: false, color: false) : .file(path),
                redaction: Redaction(showValues: false, key: []), overflow: .block)
        } catch let error as RulesLoadError {
            throw error
        } catch {
            throw RulesLoadError(description: "cannot open access log \(path): \(error)")
        }
    }

    package func makeLoopObserver() -> (any LoopObserver)? { Part(self) }

    /// Lines written, and those lost (refused after the log closed, or a failed write) with why.
    var counts: (written: Int, lost: Int, failure: String?) {
        let failure = sink.failure
        return (sink.writtenCount, sink.droppedCount + (failure?.records ?? 0), failure?.reason)
    }

    /// Opens the file again (it was moved aside by logrotate).
    func reopen() { sink.reopen() }

    /// Writes every line queued, then stops the writer.
    func close() { sink.close() }

    /// Requests whose facts wait for their exchange's end, at most, per loop (about).
    package static let pendingLimit = 4096

    /// What a request leaves for its exchange's line: its Referer and User-Agent (both formats), and for `json` what
    /// went upstream.
    package struct Pending {
        var referer: [UInt8] = []
        var agent: [UInt8] = []
        var sentTarget = ""
        var sentHost: [UInt8] = []
        var cookieEdits = 0
        var verdicts = 0
        /// The request line said HTTP/1.0 (the context names the protocol, HTTP/1.x, not the minor version).
        var http10 = false

        package init(referer: [UInt8] = [], agent: [UInt8] = []) { (self.referer, self.agent) = (referer, agent) }
    }

    /// One loop's part: its requests' facts until their exchanges end (no lock: a request and its end are told on
    /// the same loop), and the line being made.
    package final class Part: LoopObserver {
        let log: AccessLog
        private(set) var pending: [UInt64: Pending] = [:]
        private var line: [UInt8] = []
        private var chunk = LogSink.Chunk()

        init(_ log: AccessLog) { self.log = log }

        /// Requests waiting for their exchange's end.
        package var pendingCount: Int { pending.count }

        /// A line is a request's and its end's: the Set-Cookie lines are not read.
        package var readsLines: Bool { false }

        package func requestForwarded(_ request: borrowing ForwardedRequest) {
            let head = request.received
            var kept = Pending()
            if let f = head.fields.first(where: { $0.known == .referer }) { kept.referer = Array(head.valueBytes(f)) }
            if let f = LifecycleTracker.userAgentField(head) { kept.agent = Array(head.valueBytes(f)) }
            let startLine = head.bytes[head.startLine]
            kept.http10 = startLine.count > 8 && startLine.suffix(8).elementsEqual(AccessLog.http10)
            if log.format == .json {
                kept.sentTarget = request.target
                if let i = request.sent.indices(of: .host).first {
                    kept.sentHost = Array(request.sent.valueBytes(at: i))
                }
                kept.cookieEdits = request.cookieEdits.count
                kept.verdicts = request.judged?.verdicts.count(where: { $0.kind != .sentAsExpected }) ?? 0
            } else if kept.referer.isEmpty && kept.agent.isEmpty && !kept.http10 {
                return
            }
            note(request.context.requestID, kept)
        }

        /// Keeps a request's facts. An exchange the stage never hears end (a bug) leaves its entry: past
        /// ``AccessLog/pendingLimit`` entries, those of requests that many ids old go.
        package func note(_ id: UInt64, _ kept: Pending) {
            pending[id] = kept
            if pending.count > AccessLog.pendingLimit {
                pending = pending.filter { $0.key + UInt64(AccessLog.pendingLimit) > id }
            }
        }

        package func exchangeFinished(_ exchange: borrowing FinishedExchange) {
            let context = exchange.context
            let kept = pending.isEmpty ? nil : pending.removeValue(forKey: context.requestID)
            switch log.format {
            case .combined:
                line.removeAll(keepingCapacity: true)
                AccessLog.write(
                    context, bodyBytes: exchange.bodyBytes, time: exchange.time, referer: kept?.referer ?? [],
                    agent: kept?.agent ?? [], http10: kept?.http10 ?? false, into: &line)
                line.append(0x0A)
                line.withUnsafeBufferPointer { chunk.bytes.raw($0) }
            case .json:
                // Written straight into the chunk the writer takes.
                AccessLog.writeJSON(exchange, kept ?? Pending(), into: &chunk.bytes)
            }
            chunk.records = 1
            chunk = log.sink.submit(chunk)
            if line.capacity > 16384 { line = [] }
        }
    }

    /// One exchange's line (without its line end), as text: ``write(_:bodyBytes:time:referer:agent:http10:into:)``'s.
    package static func line(
        _ context: ExchangeContext, bodyBytes: Int, time: Int64, referer: String, agent: String, http10: Bool = false
    ) -> String {
        var out: [UInt8] = []
        write(
            context, bodyBytes: bodyBytes, time: time, referer: referer == "-" ? [] : Array(referer.utf8),
            agent: agent == "-" ? [] : Array(agent.utf8), http10: http10, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// One exchange's line, written byte by byte into `out` (string interpolation and a character-by-character
    /// escape cost more than the rest of a request did: docs/architecture.md). The request line is the client's: for
    /// a route (or an intercepted or TLS listener's origin-form request) its target, for a forward proxy's request
    /// its absolute URL; `-` for a request refused before its head was read. An empty `referer` or `agent` is `-`; `http10`: the request line
    /// said HTTP/1.0.
    static func write(
        _ context: ExchangeContext, bodyBytes: Int, time: Int64, referer: [UInt8], agent: [UInt8], http10: Bool,
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
            if http10 && context.clientSide == .http1 {
                out.append(contentsOf: Self.http10)
            } else {
                let name = context.clientSide.name
                out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            }
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

    /// One exchange's line in the `json` format (without its line end): Caddy's access log's field names for what
    /// they mean there (`ts` in seconds since the epoch, `request.remote_ip`, `request.proto`, `request.method`,
    /// `request.host`, `request.uri`, `request.headers` with the Referer and User-Agent, `bytes_read` for the request
    /// body, `status` (0: none), `size`, `duration` in seconds), then the proxy's own: `ending` (how it ended:
    /// ``ExchangeEnding``), `route` and `upstream` (a reverse route's name and its upstream's host; for a forward
    /// proxy's exchange no route and the origin's host and port), `upstream_proto`, `upstream_request` (the target and Host sent upstream: a route's
    /// prefix mapped to its path), `cookies_changed` (request cookies a rule changed) and `verdicts` (cookies not
    /// sent as the client's jar expected). Header bytes that are not UTF-8 are written as U+FFFD.
    static func writeJSON(_ exchange: borrowing FinishedExchange, _ kept: Pending, into w: inout JSONWriter) {
        let context = exchange.context
        w.raw("{\"ts\":")
        writeDecimal(exchange.time, scale: 1000, digits: 3, into: &w)
        w.raw(",\"request\":{\"remote_ip\":")
        w.string(context.clientAddress)
        w.raw(",\"proto\":\"")
        w.raw(kept.http10 && context.clientSide == .http1 ? "HTTP/1.0" : context.clientSide.name)
        w.raw("\",\"method\":")
        w.string(context.method)
        w.raw(",\"host\":")
        if context.host.isEmpty {
            w.raw("\"\"")
        } else {
            let host = Origin(host: context.host, port: context.port).hostFieldValue(
                defaultPort: context.scheme == "https" ? 443 : 80)
            text(host, into: &w)
        }
        w.raw(",\"uri\":")
        w.string(context.target)
        w.raw(",\"headers\":{")
        if !kept.referer.isEmpty {
            w.raw("\"Referer\":[")
            text(kept.referer, into: &w)
            w.raw(kept.agent.isEmpty ? "]" : "],")
        }
        if !kept.agent.isEmpty {
            w.raw("\"User-Agent\":[")
            text(kept.agent, into: &w)
            w.raw("]")
        }
        w.raw("}},\"bytes_read\":")
        w.int(Int64(exchange.requestBodyBytes))
        w.raw(",\"status\":")
        w.int(Int64(context.status ?? 0))
        w.raw(",\"size\":")
        w.int(Int64(exchange.bodyBytes))
        w.raw(",\"duration\":")
        writeDecimal(exchange.times.duration, scale: 1_000_000, digits: 6, into: &w)
        w.raw(",\"ending\":")
        w.string(exchange.ending.rawValue)
        w.raw(",\"route\":")
        if let route = context.route {
            w.string(route.name)
            w.raw(",\"upstream\":")
            w.string(route.upstreamHost)
        } else if context.host.isEmpty {
            w.raw("null,\"upstream\":null")
        } else {
            w.raw("null,\"upstream\":")
            text(Origin(host: context.host, port: context.port).hostFieldValue(defaultPort: -1), into: &w)
        }
        w.raw(",\"upstream_proto\":")
        if exchange.times.upstreamConnected > 0 {
            w.raw("\"")
            w.raw(context.upstreamSide.name)
            w.raw("\"")
        } else {
            w.raw("null")
        }
        w.raw(",\"upstream_request\":")
        if kept.sentTarget.isEmpty {
            w.raw("null")
        } else {
            w.raw("{\"uri\":")
            w.string(kept.sentTarget)
            w.raw(",\"host\":")
            text(kept.sentHost, into: &w)
            w.raw("}")
        }
        w.raw(",\"cookies_changed\":")
        w.int(Int64(kept.cookieEdits))
        w.raw(",\"verdicts\":")
        w.int(Int64(kept.verdicts))
        w.raw("}\n")
    }

    /// A header's bytes as a JSON string: as they are when they are ASCII (nearly always), else decoded as UTF-8
    /// with what is not UTF-8 written as U+FFFD (the line stays valid JSON whatever a client sent).
    private static func text(_ bytes: [UInt8], into w: inout JSONWriter) {
        if bytes.allSatisfy({ $0 < 0x80 }) {
            bytes.withUnsafeBufferPointer { w.string($0) }
        } else {
            w.string(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// `value / scale` as a JSON number with `digits` decimals (`value` ≥ 0; `scale` is 10^`digits`).
    private static func writeDecimal(_ value: Int64, scale: Int64, digits: Int, into w: inout JSONWriter) {
        let value = max(0, value)
        w.int(value / scale)
        w.raw(".")
        var divisor = scale / 10
        let fraction = value % scale
        for _ in 0..<digits {
            w.raw(0x30 + UInt8(fraction / divisor % 10))
            divisor = max(1, divisor / 10)
        }
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
    static let http10 = Array("HTTP/1.0".utf8)
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
