import CookieKit
import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Which of the engine's cookie rules matched one cookie: a bit set over rule indices, without allocating
/// for the first 64 rules; indices beyond go to a box made at the first such match.
@usableFromInline
struct RuleMatches: Sendable {
    @usableFromInline var low: UInt64 = 0
    /// The rules past the first 64, made only when one matches: a line's matches are copied and dropped on every
    /// line, and nil is nothing to retain or release (an empty array still is).
    @usableFromInline private(set) var beyond: [Int]? = nil
    var high: [Int] { beyond ?? [] }

    var isEmpty: Bool { low == 0 && beyond == nil }
    /// Whether a rule past the first 64 matched (no array is retained to tell).
    @inlinable var hasBeyond64: Bool { beyond != nil }

    @inline(__always)
    mutating func insert(_ index: Int) {
        if index < 64 { low |= 1 << UInt64(index) } else { insertBeyond64(index) }
    }

    private mutating func insertBeyond64(_ index: Int) {
        if beyond == nil { beyond = [index] } else { beyond!.append(index) }
    }

    /// The indices in increasing (file) order.
    func forEach(_ body: (Int) -> Void) {
        var bits = low
        while bits != 0 {
            body(bits.trailingZeroBitCount)
            bits &= bits &- 1
        }
        if let beyond { for index in beyond { body(index) } }
    }

    func names<T>(_ all: [T]) -> [T] {
        var result: [T] = []
        forEach { result.append(all[$0]) }
        return result
    }
}

/// What the cookie conditions other than `cookie-domain` (compiled to byte patterns, ``CookieProgram/Check``)
/// look at, computed once per cookie when first needed.
final class DerivedCookieFacts {
    var name: String? = nil
    var attributes: CookieAttributes? = nil
    var rejected: Bool? = nil
    /// The line as a value of its own, for the predicates that read one.
    var copy: SetCookie? = nil

    func holds(
        _ condition: Condition, _ view: SetCookieView, _ context: MessageContext, now: Int64,
        suffixes: PublicSuffixList
    ) -> Bool {
        switch condition.test {
        case .cookie(let patterns):
            if name == nil { name = view.name }
            return patterns.contains { $0.matches(name!) }
        case .state(let predicates):
            if copy == nil { copy = view.copy() }
            let cookie = copy!
            if rejected == nil && predicates.contains(.rejected) {
                rejected =
                    (try? CookieJar.evaluate(cookie, from: context.requestURL, now: now, suffixes: suffixes).get())
                    == nil
            }
            if attributes == nil { attributes = cookie.attributes }
            return predicates.contains { $0.holds(cookie, attributes!, rejected: rejected ?? false) }
        default: return !condition.negated  // message conditions were checked in the plan; cookie-domain never comes
        }
    }
}
