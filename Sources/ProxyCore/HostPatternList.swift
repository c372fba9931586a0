import HTTPGrammar
import HTTPHeads

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Host name patterns for `--intercept`: `example.com` (exactly), `*.example.com` (any subdomain), `*` (all).
public struct HostPatternList: Sendable, Hashable {
    public var exact: Set<String> = []
    public var suffixes: [String] = []
    public var all = false
    public init() {}

    /// Adds `pattern`; false when it is not a host name or `*.suffix`.
    public mutating func add(_ pattern: String) -> Bool {
        let p = pattern.lowercased()
        if p == "*" {
            all = true
        } else if p.hasPrefix("*.") && p.count > 2 {
            // Once each: several rules may name the same pattern, and the banner lists them.
            let suffix = String(p.dropFirst(1))
            if !suffixes.contains(suffix) { suffixes.append(suffix) }
        } else if !p.isEmpty && !p.contains("/") && !p.contains("*") {
            exact.insert(p)
        } else {
            return false
        }
        return true
    }

    public func matches(_ host: String) -> Bool {
        all || exact.contains(host) || suffixes.contains { host.hasSuffix($0) }
    }

    public var isEmpty: Bool { !all && exact.isEmpty && suffixes.isEmpty }
    public var description: String {
        all ? "every host" : (exact.sorted() + suffixes.map { "*" + $0 }).joined(separator: ", ")
    }
}
