import ProxyApp
import Synchronization

/// Set-Cookie lines per route, as a program embedding the proxy counts them.
///
/// The observer is shared by every event loop, so it is `Sendable` and what it holds for all of them (the totals)
/// is behind a lock. Each loop gets a part of its own (``Part``), told that loop's exchanges on its thread alone:
/// it counts the lines of the response in hand without a lock and adds them to the totals once per response.
final class CookiesPerRoute: ExchangeObserver {
    private let totals = Mutex<[String: Int]>([:])

    func makeLoopObserver() -> (any LoopObserver)? { Part(owner: self) }

    /// The totals so far, by route name (`(forward)`: requests that took no route).
    var counts: [String: Int] { totals.withLock { $0 } }

    fileprivate func add(_ lines: Int, route: String) { totals.withLock { $0[route, default: 0] += lines } }

    /// One event loop's part.
    final class Part: LoopObserver {
        let owner: CookiesPerRoute
        /// Lines of the response in hand.
        var lines = 0

        init(owner: CookiesPerRoute) { self.owner = owner }

        func didDecideLine(_ line: borrowing SetCookieLine) { lines += 1 }

        func didForwardResponse(_ response: borrowing ForwardedResponse) {
            guard lines > 0 else { return }
            owner.add(lines, route: response.context.route?.name ?? "(forward)")
            lines = 0
        }
    }
}
