import Dispatch
import Locking
import ProxyPlatform

/// Name resolution off the event loops (getaddrinfo blocks), with a small cache.
final class Resolver: Sendable {
    private let cache = Locked<[String: (addresses: [String], expires: Int64)]>([:])
    private let queue = DispatchQueue(label: "cookie-proxy.resolver", attributes: .concurrent)
    let ttlMilliseconds: Int64 = 30_000

    func cached(_ host: String, now: Int64) -> [String]? {
        cache.withLock { entries in
            guard let entry = entries[host], entry.expires > now else { return nil }
            return entry.addresses
        }
    }

    func resolve(_ host: String, completion: @escaping @Sendable (Result<[String], Sys.ResolveError>) -> Void) {
        queue.async { [self] in
            let result = Sys.resolve(host)
            if case .success(let addresses) = result {
                let expires = monotonicMilliseconds() + ttlMilliseconds
                cache.withLock { $0[host] = (addresses, expires) }
            }
            completion(result)
        }
    }
}
