import HTTPGrammar
import Locking

/// Responses forwarded from upstreams, by the client's protocol, the proxy's mode and the status class: the metrics'
/// one per-response counter, kept only when `--metrics` is on (one atomic add a response).
package final class ResponseCounts: Sendable {
    package enum Mode: String, CaseIterable, Sendable { case forward, reverse, intercepted }
    package static let protocols = ["HTTP/1.1", "HTTP/2"]
    package static let classes = ["1xx", "2xx", "3xx", "4xx", "5xx"]
    /// Reverse mode (`--reverse`): every exchange is the reverse proxy's.
    let reverse: Bool
    private let counters: [AtomicCounter]

    package init(reverse: Bool) {
        self.reverse = reverse
        counters = (0..<(Self.protocols.count * Mode.allCases.count * Self.classes.count)).map { _ in AtomicCounter() }
    }

    private static func index(protocol p: Int, mode m: Int, class c: Int) -> Int {
        (p * Mode.allCases.count + m) * classes.count + c
    }

    /// Counts the response of `context` (its status read; an interim or unknown status is not counted).
    func count(_ context: ExchangeContext) {
        guard let status = context.status, (100..<600).contains(status) else { return }
        let mode = reverse ? 1 : context.scheme == "https" ? 2 : 0
        let p = context.protocols.contains(.clientHTTP2) ? 1 : 0
        counters[Self.index(protocol: p, mode: mode, class: status / 100 - 1)].add(1)
    }

    /// Every (protocol, mode, class) with its count, zeros included (a bounded set of 30).
    package var samples: [(protocol: String, mode: Mode, class: String, count: Int)] {
        var out: [(String, Mode, String, Int)] = []
        for (p, name) in Self.protocols.enumerated() {
            for (m, mode) in Mode.allCases.enumerated() {
                for (c, status) in Self.classes.enumerated() {
                    out.append((name, mode, status, counters[Self.index(protocol: p, mode: m, class: c)].load()))
                }
            }
        }
        return out
    }
}
