import ExchangeFacts
import HTTPGrammar
import Locking
import ProxyCore

/// Responses forwarded from upstreams, by the client's protocol, the proxy's mode and the status class: the metrics'
/// one per-response counter, kept only when `--metrics` is on (one atomic add a response).
package final class ResponseCounts: Sendable {
    enum Mode: String, CaseIterable, Sendable { case forward, reverse, intercepted }
    static let protocols = HTTPProtocol.allCases.map { String(describing: $0.name) }
    static let classes = ["1xx", "2xx", "3xx", "4xx", "5xx"]
    /// Reverse mode (`--reverse`): every exchange is the reverse proxy's.
    let reverse: Bool
    private let counters: AtomicCounters

    package init(reverse: Bool) {
        self.reverse = reverse
        counters = AtomicCounters(count: Self.protocols.count * Mode.allCases.count * Self.classes.count)
    }

    // MARK: Durations

    /// The histograms' upper bounds, in seconds (Prometheus' defaults, with two below a millisecond: a loopback
    /// origin answers in tens of microseconds).
    static let bounds: [Double] = [
        0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]
    /// From a request's head read (and sent upstream) to its final response's head.
    let upstreamResponse = DurationHistogram()
    /// From a request's head read to the last byte of its response relayed.
    let requestDuration = DurationHistogram()

    /// An exchange's durations from its times (``ExchangeTimes``): the upstream's, when its response's head came;
    /// the whole exchange's, when its response was relayed whole.
    func observe(_ times: ExchangeTimes, relayed: Bool) {
        guard times.requestHead > 0 else { return }
        if times.responseHead >= times.requestHead {
            upstreamResponse.observe(nanoseconds: Int(times.responseHead - times.requestHead) * 1000)
        }
        if relayed && times.ended >= times.requestHead {
            requestDuration.observe(nanoseconds: Int(times.ended - times.requestHead) * 1000)
        }
    }

    private static func index(protocol p: Int, mode m: Int, class c: Int) -> Int {
        (p * Mode.allCases.count + m) * classes.count + c
    }

    /// Counts the response of `context` (its status read; an unknown status is not counted).
    func count(_ context: ExchangeContext) {
        guard let status = context.status, (100..<600).contains(status) else { return }
        let mode = reverse ? 1 : context.scheme == "https" ? 2 : 0
        let p = Int(context.clientSide.rawValue)
        counters.add(Self.index(protocol: p, mode: mode, class: status / 100 - 1), 1)
    }

    /// Every (protocol, mode, class) with its count, zeros included (a bounded set of 30).
    var samples: [(protocol: String, mode: Mode, class: String, count: Int)] {
        var out: [(String, Mode, String, Int)] = []
        for (p, name) in Self.protocols.enumerated() {
            for (m, mode) in Mode.allCases.enumerated() {
                for (c, status) in Self.classes.enumerated() {
                    out.append((name, mode, status, counters.load(Self.index(protocol: p, mode: m, class: c))))
                }
            }
        }
        return out
    }
}

/// Durations in the buckets of ``ResponseCounts/bounds``: one atomic add for the bucket and one for the sum (the
/// count is the buckets' total).
final class DurationHistogram: Sendable {
    /// The bounds in nanoseconds, what a duration is compared with (no conversion per observation).
    private let bounds = ResponseCounts.bounds.map { Int(($0 * 1e9).rounded()) }
    /// Per bucket (the last one: past every bound), not cumulative.
    private let buckets = AtomicCounters(count: ResponseCounts.bounds.count + 1)
    /// The sum of the durations in nanoseconds.
    private let sum = AtomicCounter()

    func observe(nanoseconds: Int) {
        var bucket = 0
        while bucket < bounds.count && nanoseconds > bounds[bucket] { bucket += 1 }
        buckets.add(bucket, 1)
        sum.add(nanoseconds)
    }

    /// Cumulative counts per bound (the last one `+Inf`), the sum in seconds and the count.
    var snapshot: (cumulative: [Int], sum: Double, count: Int) {
        var total = 0
        let cumulative = (0..<buckets.count).map { k -> Int in
            total += buckets.load(k)
            return total
        }
        return (cumulative, Double(sum.load()) / 1e9, total)
    }
}
