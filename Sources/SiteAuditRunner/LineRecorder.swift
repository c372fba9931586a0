import CookieKit
import ExchangeFacts
import Locking
import ProxyApp
import SiteAudit

/// The audit's observer: every Set-Cookie line the proxy relays, with its response's URL, and the cookie names
/// every request carried in its Cookie header, with its host, until taken; and the URLs the proxy answered itself
/// (an upstream it could not reach or verify: `502`, `504`), with the status.
final class LineRecorder: ExchangeObserver, LoopObserver, Sendable {
    private let lines = Locked<(set: [(url: String, line: String)], sent: [(host: String, name: String)])>(([], []))
    /// Each line's site-context findings from the proxy's lint, by ``PageVisit/lineKey(url:line:)``.
    private let site = Locked<[String: [String]]>([:])
    private let answered = Locked<[String: (status: Int, byProxy: Bool)]>([:])

    func makeLoopObserver() -> (any LoopObserver)? { self }

    static func url(_ context: ExchangeContext) -> String {
        let port = context.port == (context.scheme == "https" ? 443 : 80) ? "" : ":\(context.port)"
        let host = context.host.contains(":") ? "[\(context.host)]" : context.host
        return "\(context.scheme)://\(host)\(port)\(context.target)"
    }

    func didDecideLine(_ line: borrowing SetCookieLine) {
        let url = Self.url(line.context)
        let text = String(decoding: line.received, as: UTF8.self)
        lines.withLock { $0.set.append((url, text)) }
        // The site lint's findings (the request's context: a third-party frame's lines), which the report's own lint
        // of the line cannot work out.
        let codes = line.findings.map(\.code).filter { CookieLint.siteCodes.contains($0) }
        if !codes.isEmpty { site.withLock { $0[PageVisit.lineKey(url: url, line: text)] = codes } }
    }

    func didForwardRequest(_ request: borrowing ForwardedRequest) {
        // The names of every pair of every Cookie field, read as the request-cookie rules read them.
        let head = request.received
        let names = head.fields.filter { $0.known == .cookie }.flatMap { field in
            let cookies = CookieHeader(head.valueBytes(field))
            return cookies.pairs.map { cookies.name($0) }.filter { !$0.isEmpty }
        }
        guard !names.isEmpty else { return }
        let host = request.context.host
        lines.withLock { $0.sent += names.map { (host, $0) } }
    }

    func exchangeEnded(_ exchange: borrowing EndedExchange) {
        guard let status = exchange.context.status else { return }
        let url = Self.url(exchange.context)
        let byProxy = exchange.ending == .answered
        answered.withLock { $0[url] = (status, byProxy) }
    }

    /// The site-context findings of the lines recorded so far.
    func siteFindings() -> [String: [String]] { site.withLock { $0 } }

    /// The status the proxy itself answered `url` with, if it did.
    func answeredStatus(_ url: String) -> Int? {
        answered.withLock { $0[url] }.flatMap { $0.byProxy ? $0.status : nil }
    }

    /// The status the client got for `url`'s last exchange, whoever answered.
    func status(_ url: String) -> Int? { answered.withLock { $0[url]?.status } }

    /// The lines and the cookies sent recorded since the last call.
    func take() -> (lines: [(url: String, line: String)], sent: [(host: String, name: String)]) {
        lines.withLock { held in
            defer { held = ([], []) }
            return (held.set, held.sent)
        }
    }
}
