import CookieKit
import CookieRules
import ExchangeFacts
import Foundation
import HTTPGrammar
import HTTPHeads
import JSONStream
import Locking
import LogWriter
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
    /// The device page's host (`cookie-proxy.local`): its exchanges are the proxy's own answers, not relayed.
    let onboardingHost: String?
    /// Which hosts' exchanges the `json` format marks `"browser_own": true` (the site audit's).
    let ownTraffic: (@Sendable (String) -> Bool)?

    /// `path`: a file (appended to, made mode 0600), or `-` for standard output.
    package init(
        path: String, format: Format = .combined, onboardingHost: String? = nil,
        ownTraffic: (@Sendable (String) -> Bool)? = nil
    ) throws(RulesLoadError) {
        self.format = format
        self.onboardingHost = onboardingHost
        self.ownTraffic = ownTraffic
        do {
            sink = try LogSink(
                destination: path == "-" ? .standardOutput(compact: false, color: false) : .file(path),
                overflow: .block, label: "the access log",
                gapRecord: { lost, reason, since, now in
                    AccessLog.gapLine(format, lost: lost, reason: reason, since: since, now: now)
                })
        } catch {
            throw RulesLoadError(description: error.description)
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

    /// What a request leaves for its exchange's line, besides its bytes (its Referer and User-Agent; for `json` the
    /// Host and target sent upstream), which wait in a buffer of the part's (``Part``) at `slot`, one after another.
    struct Pending {
        var slot: Int32
        /// Where the Referer, the User-Agent and the Host sent upstream end in the slot's buffer (the target sent
        /// upstream is the rest: empty when none is known, as for the `combined` format, which keeps none).
        var refererEnd: Int32
        var agentEnd: Int32
        var hostEnd: Int32
        var cookieEdits: Int32
        var verdicts: Int32
        /// The request line said HTTP/1.0 (the context names the protocol, HTTP/1.x, not the minor version).
        var http10: Bool
    }

    /// One loop's part: its requests' facts until their exchanges end (no lock: a request and its end are told on
    /// the same loop), and the lines made since the writer last took them. Nothing per exchange is allocated: a
    /// request's bytes go into a buffer kept for reuse, its facts into a table by request id (``RequestTable``), its
    /// line straight into the chunk the writer takes, and the time's text is made once a second.
    package final class Part: LoopObserver {
        let log: AccessLog
        private var pending = RequestTable<Pending>()
        /// Waiting requests' bytes, by slot.
        private var slots = ByteSlots()
        private var chunk = LogSink.Chunk()
        /// The last second written and its text (`06/Dec/2026:08:15:07 +0000`).
        private var stampSecond = Int64.min
        private var stamp: [UInt8] = []

        init(_ log: AccessLog) { self.log = log }

        /// Requests waiting for their exchange's end.
        package var pendingCount: Int { pending.count }

        /// A line is a request's and its end's: the Set-Cookie lines are not read.
        package var readsLines: Bool { false }

        package func didForwardRequest(_ request: borrowing ForwardedRequest) {
            let head = request.received
            let referer = head.has(.referer) ? head.fields.first(where: { $0.known == .referer }) : nil
            let agent = LifecycleTracker.userAgentField(head)
            let http10 = AccessLog.saysHTTP10(head)
            if log.format == .combined && referer == nil && agent == nil && !http10 { return }
            let slot = slots.take()
            var kept = slots.write(slot) { buffer in
                if let referer { buffer.append(contentsOf: head.valueBytes(referer)) }
                let refererEnd = Int32(truncatingIfNeeded: buffer.count)
                if let agent { buffer.append(contentsOf: head.valueBytes(agent)) }
                let agentEnd = Int32(truncatingIfNeeded: buffer.count)
                var kept = Pending(
                    slot: Int32(slot), refererEnd: refererEnd, agentEnd: agentEnd, hostEnd: agentEnd, cookieEdits: 0,
                    verdicts: 0, http10: http10)
                if log.format == .json {
                    let sent = request.sent
                    if let i = sent.indices(of: .host).first { buffer.append(contentsOf: sent.valueBytes(at: i)) }
                    kept.hostEnd = Int32(truncatingIfNeeded: buffer.count)
                    buffer.append(contentsOf: request.target.utf8)
                }
                return kept
            }
            if log.format == .json {
                kept.cookieEdits = Int32(truncatingIfNeeded: request.cookieEdits.count)
                kept.verdicts = Int32(
                    truncatingIfNeeded: request.judged?.verdicts.count(where: { $0.kind != .sentAsExpected }) ?? 0)
            }
            keep(request.context.requestID, kept)
        }

        /// Keeps a request's Referer and User-Agent for its exchange's line (what ``didForwardRequest(_:)`` keeps
        /// for the `combined` format).
        package func note(_ id: UInt64, referer: [UInt8] = [], agent: [UInt8] = []) {
            let slot = slots.take()
            slots.write(slot) { $0 = referer + agent }
            let (r, a) = (Int32(referer.count), Int32(referer.count + agent.count))
            keep(
                id,
                Pending(
                    slot: Int32(slot), refererEnd: r, agentEnd: a, hostEnd: a, cookieEdits: 0, verdicts: 0,
                    http10: false))
        }

        /// Holds `kept` until its exchange ends. An exchange the stage never hears end (a bug) leaves its entry:
        /// past ``AccessLog/pendingLimit`` entries, those of requests more than half that many ids old go.
        private func keep(_ id: UInt64, _ kept: Pending) {
            if let old = pending.insert(kept, for: id) { slots.release(Int(old.slot)) }
            for old in pending.letGo(past: AccessLog.pendingLimit, newest: id) { slots.release(Int(old.slot)) }
        }

        package func exchangeEnded(_ exchange: borrowing EndedExchange) {
            let context = exchange.context
            let kept = pending.remove(context.requestID)
            var bytes = kept.map { slots[Int($0.slot)] } ?? []
            var (refererEnd, agentEnd) = (Int(kept?.refererEnd ?? 0), Int(kept?.agentEnd ?? 0))
            if kept == nil, let echo = exchange.end.request {
                // A request that went nowhere (the proxy's own answer, a CONNECT): what of it was read.
                bytes = Array((echo.referer ?? "").utf8)
                refererEnd = bytes.count
                bytes += Array((echo.userAgent ?? "").utf8)
                agentEnd = bytes.count
            }
            // (The port and the route first: the host's comparison is for the few exchanges left.)
            let ownPage =
                context.port == 80 && context.route == nil && log.onboardingHost != nil
                && context.host == log.onboardingHost
            bytes.withUnsafeBufferPointer { b in
                let r = refererEnd
                let a = agentEnd
                let h = kept.map { Int($0.hostEnd) } ?? b.count  // (nothing sent upstream without a request kept)
                let referer = UnsafeBufferPointer(rebasing: b[0..<r])
                let agent = UnsafeBufferPointer(rebasing: b[r..<a])
                switch log.format {
                case .combined:
                    let second = exchange.time >= 0 ? exchange.time / 1000 : (exchange.time - 999) / 1000
                    if second != stampSecond {
                        stamp.removeAll(keepingCapacity: true)
                        AccessLog.writeTimestamp(exchange.time, into: &stamp)
                        stampSecond = second
                    }
                    stamp.withUnsafeBufferPointer { stamp in
                        AccessLog.write(
                            context, bodyBytes: exchange.bodyBytes, stamp: stamp, referer: referer, agent: agent,
                            http10: kept?.http10 ?? false, into: &chunk.bytes)
                    }
                    chunk.bytes.raw(0x0A)
                case .json:
                    // The target sent upstream, when one is known (a request refused before it had none).
                    let sent =
                        h < b.count
                        ? (
                            host: UnsafeBufferPointer(rebasing: b[a..<h]),
                            target: UnsafeBufferPointer(rebasing: b[h...])
                        )
                        : nil
                    AccessLog.writeJSON(
                        exchange, referer: referer, agent: agent, http10: kept?.http10 ?? false,
                        sent: ownPage ? nil : sent, cookieEdits: Int(kept?.cookieEdits ?? 0),
                        verdicts: Int(kept?.verdicts ?? 0), ownPage: ownPage,
                        browserOwn: log.ownTraffic.map { $0(context.host) }, into: &chunk.bytes)
                }
            }
            if let kept { slots.release(Int(kept.slot)) }
            chunk.records = 1
            chunk = log.sink.submit(chunk)
        }
    }

    /// The request line ends in ` HTTP/1.0`.
    static func saysHTTP10(_ head: HTTPHead) -> Bool {
        let line = head.startLine
        guard line.count > 9 else { return false }
        return head.bytes.withUnsafeBufferPointer { b in
            UnsafeRawPointer(b.baseAddress! + line.upperBound - 8).loadUnaligned(as: UInt64.self)
                == http10Word
        }
    }

    /// `HTTP/1.0` as one word, in memory order.
    private static let http10Word = Array("HTTP/1.0".utf8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }

    /// One exchange's line (without its line end), as text: ``write(_:bodyBytes:stamp:referer:agent:http10:into:)``'s.
    package static func line(
        _ context: ExchangeContext, bodyBytes: Int, time: Int64, referer: String, agent: String, http10: Bool = false
    ) -> String {
        var stamp: [UInt8] = []
        writeTimestamp(time, into: &stamp)
        var out = JSONWriter(capacity: 256)
        let referer = referer == "-" ? [] : Array(referer.utf8)
        let agent = agent == "-" ? [] : Array(agent.utf8)
        stamp.withUnsafeBufferPointer { stamp in
            referer.withUnsafeBufferPointer { referer in
                agent.withUnsafeBufferPointer { agent in
                    write(
                        context, bodyBytes: bodyBytes, stamp: stamp, referer: referer, agent: agent, http10: http10,
                        into: &out)
                }
            }
        }
        return out.withBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// One exchange's line, written piece by piece into `out` (string interpolation and a character-by-character
    /// escape cost more than the rest of a request did: docs/architecture.md). The request line is the client's: for
    /// a route (or an intercepted or TLS listener's origin-form request) its target, for a forward proxy's request
    /// its absolute URL; `-` for a request refused before its head was read. `stamp`: the time's text
    /// (``writeTimestamp(_:into:)``); an empty `referer` or `agent` is `-`; `http10`: the request line said HTTP/1.0.
    static func write(
        _ context: ExchangeContext, bodyBytes: Int, stamp: UnsafeBufferPointer<UInt8>,
        referer: UnsafeBufferPointer<UInt8>,
        agent: UnsafeBufferPointer<UInt8>, http10: Bool, into out: inout JSONWriter
    ) {
        withBytes(context.clientAddress) { out.raw($0) }
        out.raw(" - - [")
        out.raw(stamp)
        out.raw("] \"")
        if context.method == "-" {
            out.raw(0x2D)
        } else {
            withBytes(context.method) { escape($0, into: &out) }
            out.raw(0x20)
            if context.route == nil && context.scheme == "http" && !context.host.isEmpty
                && context.target.utf8.first == 0x2F
            {
                // A forward proxy's request: the absolute URL the client wrote, its default port left out.
                out.raw("http://")
                withBytes(context.host) { host in
                    writeHost(host, port: context.port, defaultPort: 80, into: &out) { escape($0, into: &$1) }
                }
            }
            if context.target.isEmpty && context.method == "CONNECT" {
                // A tunnel's request-target is its authority (RFC 9112 §3.2.3): host and port, always.
                withBytes(context.host) { host in
                    writeHost(host, port: context.port, defaultPort: -1, into: &out) { escape($0, into: &$1) }
                }
            } else {
                withBytes(context.target) { escape($0, into: &out) }
            }
            out.raw(0x20)
            if http10 && context.clientSide == .http1 {
                out.raw("HTTP/1.0")
            } else {
                out.raw(context.clientSide.name)
            }
        }
        out.raw("\" ")
        if let status = context.status { out.int(Int64(status)) } else { out.raw(0x2D) }
        out.raw(0x20)
        if bodyBytes > 0 { out.int(Int64(bodyBytes)) } else { out.raw(0x2D) }
        out.raw(" \"")
        if referer.isEmpty { out.raw(0x2D) } else { escape(referer, into: &out) }
        out.raw("\" \"")
        if agent.isEmpty { out.raw(0x2D) } else { escape(agent, into: &out) }
        out.raw(0x22)
    }

    /// A host and port as a Host field value (``Origin/hostFieldValue(defaultPort:)``'s: IPv6 in brackets, the port
    /// unless it is `defaultPort`), the host's bytes written by `escape` (nginx's for the combined line, JSON's for
    /// `json`), in place.
    private static func writeHost(
        _ host: UnsafeBufferPointer<UInt8>, port: Int, defaultPort: Int, into out: inout JSONWriter,
        escape: (UnsafeBufferPointer<UInt8>, inout JSONWriter) -> Void
    ) {
        let v6 = host.contains(0x3A)
        if v6 { out.raw(0x5B) }
        escape(host, &out)
        if v6 { out.raw(0x5D) }
        if port != defaultPort {
            out.raw(0x3A)
            out.int(Int64(port))
        }
    }

    /// `body` with a string's UTF-8 bytes, in place when the string is native (nearly always), else copied.
    private static func withBytes<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let done = text.utf8.withContiguousStorageIfAvailable(body) { return done }
        var text = text
        return text.withUTF8(body)
    }

    /// One exchange's line in the `json` format (without its line end): Caddy's access log's field names for what
    /// they mean there (`ts` in seconds since the epoch, `request.remote_ip`, `request.proto`, `request.method`,
    /// `request.host`, `request.uri`, `request.headers` with the Referer and User-Agent, `bytes_read` for the request
    /// body, `status` (0: none), `size`, `duration` in seconds), then the proxy's own: `ending` (how it ended:
    /// ``ExchangeEnding``), `route` and `upstream` (a reverse route's name and its upstream's host; for a forward
    /// proxy's exchange no route and the origin's host and port), `upstream_proto`, `upstream_request` (the target and Host sent upstream: a route's
    /// prefix mapped to its path), `cookies_changed` (request cookies a rule changed) and `verdicts` (cookies not
    /// sent as the client's jar expected). Header bytes that are not UTF-8 are written as U+FFFD.
    static func writeJSON(
        _ exchange: borrowing EndedExchange, referer: UnsafeBufferPointer<UInt8>, agent: UnsafeBufferPointer<UInt8>,
        http10: Bool, sent: (host: UnsafeBufferPointer<UInt8>, target: UnsafeBufferPointer<UInt8>)?, cookieEdits: Int,
        verdicts: Int, ownPage: Bool = false, browserOwn: Bool? = nil, into w: inout JSONWriter
    ) {
        let context = exchange.context
        w.raw("{\"ts\":")
        writeDecimal(exchange.time, scale: 1000, digits: 3, into: &w)
        w.raw(",\"request\":{\"remote_ip\":")
        w.string(context.clientAddress)
        w.raw(",\"proto\":\"")
        w.raw(http10 && context.clientSide == .http1 ? "HTTP/1.0" : context.clientSide.name)
        w.raw("\",\"method\":")
        w.string(context.method)
        w.raw(",\"host\":")
        if context.host.isEmpty {
            // A request the proxy answered before routing it: the Host it sent, if any was read.
            if let host = exchange.end.request?.host { w.string(host) } else { w.raw("\"\"") }
        } else {
            jsonHost(context.host, port: context.port, defaultPort: context.scheme == "https" ? 443 : 80, into: &w)
        }
        w.raw(",\"uri\":")
        if context.target.isEmpty && context.method == "CONNECT" {
            jsonHost(context.host, port: context.port, defaultPort: -1, into: &w)
        } else {
            w.string(context.target)
        }
        w.raw(",\"headers\":{")
        if !referer.isEmpty {
            w.raw("\"Referer\":[")
            text(referer, into: &w)
            w.raw(agent.isEmpty ? "]" : "],")
        }
        if !agent.isEmpty {
            w.raw("\"User-Agent\":[")
            text(agent, into: &w)
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
        // The device page is the proxy's own, served through its local service: answered, from no upstream.
        w.string(ownPage ? ExchangeEnding.answered.rawValue : exchange.ending.rawValue)
        w.raw(",\"route\":")
        if ownPage {
            w.raw("null,\"upstream\":null")
        } else if let route = context.route {
            w.string(route.name)
            w.raw(",\"upstream\":")
            w.string(route.upstreamHost)
        } else if context.host.isEmpty {
            w.raw("null,\"upstream\":null")
        } else {
            w.raw("null,\"upstream\":")
            jsonHost(context.host, port: context.port, defaultPort: -1, into: &w)
        }
        w.raw(",\"upstream_proto\":")
        if exchange.times.upstreamConnected > 0 && !ownPage {
            w.raw("\"")
            w.raw(context.upstreamSide.name)
            w.raw("\"")
        } else {
            w.raw("null")
        }
        w.raw(",\"upstream_request\":")
        // Only what reached an upstream: a request whose upstream could not be reached sent nothing.
        if let sent, exchange.times.upstreamConnected > 0 {
            w.raw("{\"uri\":")
            text(sent.target, into: &w)
            w.raw(",\"host\":")
            text(sent.host, into: &w)
            w.raw("}")
        } else {
            w.raw("null")
        }
        w.raw(",\"cookies_changed\":")
        w.int(Int64(cookieEdits))
        w.raw(",\"verdicts\":")
        w.int(Int64(verdicts))
        if let browserOwn {
            // The site audit's log only: the browser's own traffic, not the site's (``BrowserTraffic``).
            w.raw(",\"browser_own\":")
            w.bool(browserOwn)
        }
        w.raw("}\n")
    }

    /// A host and port as a Host field value (``Origin/hostFieldValue(defaultPort:)``'s) in a JSON string (``text(_:into:)``'s
    /// reading), written in place.
    private static func jsonHost(_ host: String, port: Int, defaultPort: Int, into w: inout JSONWriter) {
        withBytes(host) { bytes in
            guard bytes.allSatisfy({ $0 < 0x80 }) else {
                return text(Origin(host: host, port: port).hostFieldValue(defaultPort: defaultPort), into: &w)
            }
            w.raw(0x22)
            writeHost(bytes, port: port, defaultPort: defaultPort, into: &w) { $1.escaped($0) }
            w.raw(0x22)
        }
    }

    /// A header's bytes as a JSON string: as they are when they are ASCII (nearly always), else decoded as UTF-8
    /// with what is not UTF-8 written as U+FFFD (the line stays valid JSON whatever a client sent).
    private static func text(_ bytes: UnsafeBufferPointer<UInt8>, into w: inout JSONWriter) {
        if bytes.allSatisfy({ $0 < 0x80 }) {
            w.string(bytes)
        } else {
            w.string(String(decoding: bytes, as: UTF8.self))
        }
    }

    private static func text(_ bytes: [UInt8], into w: inout JSONWriter) {
        bytes.withUnsafeBufferPointer { text($0, into: &w) }
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

    /// The line written after lines were lost (the file could not be written), in the log's own format so that
    /// every reader reads it: `combined` as a request nobody made (address 0.0.0.0, method `LOG-GAP`, status 599)
    /// whose User-Agent says what was lost and why, which GoAccess counts as a valid line; `json` as an object with
    /// `event: "log-gap"`.
    ///
    ///     0.0.0.0 - - [07/Dec/2026:13:00:01 +0000] "LOG-GAP /lost/12 HTTP/1.1" 599 - "-" "cookie-proxy: 12 lines lost since 07/Dec/2026:12:59:58 +0000: No space left on device (ENOSPC, errno 28)"
    static func gapLine(_ format: Format, lost: Int, reason: String, since: Int64, now: Int64) -> String {
        switch format {
        case .combined:
            var stamp: [UInt8] = []
            writeTimestamp(now, into: &stamp)
            var from: [UInt8] = []
            writeTimestamp(since, into: &from)
            let said =
                "cookie-proxy: \(lost) line\(lost == 1 ? "" : "s") lost since \(String(decoding: from, as: UTF8.self)): \(reason)"
            return
                "0.0.0.0 - - [\(String(decoding: stamp, as: UTF8.self))] \"LOG-GAP /lost/\(lost) HTTP/1.1\" 599 - \"-\" \"\(said.replacingOccurrences(of: "\"", with: "'"))\""
        case .json:
            var w = JSONWriter(capacity: 256)
            w.raw("{\"ts\":")
            writeDecimal(now, scale: 1000, digits: 3, into: &w)
            w.raw(",\"event\":\"log-gap\",\"lost\":")
            w.int(Int64(lost))
            w.raw(",\"since\":")
            writeDecimal(since, scale: 1000, digits: 3, into: &w)
            w.raw(",\"reason\":")
            w.string(reason)
            w.raw("}")
            return w.withBytes { String(decoding: $0, as: UTF8.self) }
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

    private static let utc = Array(" +0000".utf8)

    /// A quoted field's bytes as nginx writes them: `"`, `\` and bytes outside printable ASCII as `\xNN`, so that
    /// a line is one line and its quotes one reading. Runs that need no escape are appended whole.
    static func escape(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout JSONWriter) {
        guard let base = bytes.baseAddress else { return }
        var start = 0
        for i in 0..<bytes.count {
            let byte = base[i]
            // Printable ASCII (0x20 ... 0x7E) but for the quote and the backslash goes as it is.
            if byte &- 0x20 < 0x5F && byte != 0x22 && byte != 0x5C { continue }
            out.raw(UnsafeBufferPointer(start: base + start, count: i - start))
            out.raw("\\x")
            out.raw(hexDigit(byte >> 4))
            out.raw(hexDigit(byte & 0xF))
            start = i + 1
        }
        out.raw(UnsafeBufferPointer(start: base + start, count: bytes.count - start))
    }

    private static func hexDigit(_ n: UInt8) -> UInt8 { n < 10 ? 0x30 + n : 0x37 + n }

}
