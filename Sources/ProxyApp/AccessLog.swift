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
    private let file: Locked<Int32>
    /// Each forwarded request's Referer and User-Agent, until its exchange ends (a request answered before it was
    /// forwarded has neither).
    private let pending = Locked<[UInt64: (referer: String, agent: String)]>([:])

    init(path: String) throws(RulesLoadError) {
        self.path = path
        file = Locked(try LogSink.open(path))
    }

    /// The request as it goes upstream: its Referer and User-Agent, kept for its line.
    func requestForwarded(_ id: UInt64, head: HTTPHead) {
        let referer = head.fields.first { head.field($0, is: "referer") }.map { Self.text(head.valueBytes($0)) }
        let agent = head.fields.first { head.field($0, is: "user-agent") }.map { Self.text(head.valueBytes($0)) }
        pending.withLock { $0[id] = (referer ?? "-", agent ?? "-") }
    }

    /// The exchange ended: its line.
    func exchangeEnded(_ context: ExchangeContext, bodyBytes: Int, time: Int64) {
        let kept = pending.withLock { $0.removeValue(forKey: context.requestID) }
        var line = Array(
            Self.line(
                context, bodyBytes: bodyBytes, time: time, referer: kept?.referer ?? "-",
                agent: kept?.agent ?? "-"
            ).utf8)
        line.append(0x0A)
        file.withLock { fd in
            line.withUnsafeBytes { bytes in
                var at = 0
                while at < bytes.count {
                    let n = Foundation.write(fd, bytes.baseAddress! + at, bytes.count - at)
                    if n <= 0 { break }  // a full disk: the line is lost, as the transformation log's overflow says
                    at += n
                }
            }
        }
    }

    /// Opens the file again (it was moved aside by logrotate).
    func reopen() {
        guard let new = try? LogSink.open(path) else { return }
        file.withLock { fd in
            Foundation.close(fd)
            fd = new
        }
    }

    deinit { file.withLock { _ = Foundation.close($0) } }

    /// One exchange's line. The request line is the client's: for a route (or an intercepted or TLS listener's
    /// origin-form request) its target, for a forward proxy's request its absolute URL; `-` for a request refused
    /// before its head was read.
    package static func line(
        _ context: ExchangeContext, bodyBytes: Int, time: Int64, referer: String, agent: String
    ) -> String {
        let request: String
        if context.method == "-" {
            request = "-"
        } else {
            var target = context.target
            if context.route == nil && context.scheme == "http" && !context.host.isEmpty && target.hasPrefix("/") {
                // A forward proxy's request: the absolute URL the client wrote, its default port left out.
                let port = context.port == 80 ? "" : ":\(context.port)"
                target = "http://\(HostPort.bracketed(context.host))\(port)\(target)"
            }
            request = "\(context.method) \(target) \(context.clientSide.name)"
        }
        let status = context.status.map(String.init) ?? "-"
        let size = bodyBytes > 0 ? String(bodyBytes) : "-"
        return "\(context.clientAddress) - - [\(timestamp(time))] \"\(escaped(request))\" \(status) \(size)"
            + " \"\(escaped(referer))\" \"\(escaped(agent))\""
    }

    /// `06/Dec/2026:08:15:07 +0000` (the common log format's time, in UTC) for milliseconds since the epoch.
    static func timestamp(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(parts.tm_mday))/\(months[Int(parts.tm_mon)])/\(parts.tm_year + 1900):\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)) +0000"
    }

    /// A quoted field's text as nginx writes it: `"`, `\` and bytes outside printable ASCII as `\xNN`, so that a
    /// line is one line and its quotes one reading.
    static func escaped(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    private static func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
}
