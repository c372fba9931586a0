import CookieKit
import CookieRules
import ExchangeFacts
import HTTPGrammar
import Locking

/// A line's lint: its findings, and the keys of those worth counting (``FindingKeys``: rejects and warnings), worked
/// out once with the findings so that counting them reads integers, not strings.
package final class Linted: Sendable {
    package let findings: [LintFinding]
    /// One ``FindingKeys`` key per finding that is not informational.
    package let counted: [Int]
    /// The same in one word, when they fit.
    package let keys: CountedKeys

    init(_ findings: [LintFinding]) {
        self.findings = findings
        counted = findings.filter { $0.severity != .info }.map { FindingKeys.shared.key($0.code, $0.severity) }
        keys = CountedKeys(counted)
    }
}

/// The ``FindingKeys`` keys of a line's counted findings in one word, kept with the line's memo so that counting a
/// line reads a word, not an array (reading a class's array counted references at every line): their number in
/// the low byte, then up to seven keys below 255, a byte each. A line has a handful of findings; more, or a larger
/// key, is ``overflow``, and the counter reads ``Linted/counted`` instead.
package struct CountedKeys: Sendable, Equatable {
    let word: UInt64
    static let none = CountedKeys(word: 0)
    package static let overflow = CountedKeys(word: .max)

    private init(word: UInt64) { self.word = word }

    package init(_ keys: [Int]) {
        guard keys.count <= 7, keys.allSatisfy({ $0 >= 0 && $0 < 255 }) else {
            self = .overflow
            return
        }
        var word = UInt64(keys.count)
        for (i, key) in keys.enumerated() { word |= UInt64(key) << (8 * (i + 1)) }
        self.word = word
    }

    /// Calls `body` with each key, in order (not for ``overflow``).
    @inline(__always)
    package func forEach(_ body: (Int) -> Void) {
        var rest = word >> 8
        for _ in 0..<Int(word & 0xFF) {
            body(Int(rest & 0xFF))
            rest >>= 8
        }
    }
}

/// A small integer for each (lint code, severity) seen, for counting by index: the lint's codes are a bounded set,
/// met once each (a key is made when a line is linted, not when it is counted).
final class FindingKeys: Sendable {
    static let shared = FindingKeys()
    private let state = Locked<(keys: [String: Int], names: [(String, LintFinding.Severity)])>(([:], []))

    func key(_ code: String, _ severity: LintFinding.Severity) -> Int {
        let name = "\(severity.rawValue) \(code)"
        return state.withLock { s in
            if let k = s.keys[name] { return k }
            s.keys[name] = s.names.count
            s.names.append((code, severity))
            return s.names.count - 1
        }
    }

    func name(_ key: Int) -> (code: String, severity: LintFinding.Severity) {
        state.withLock { $0.names[key] }
    }
}

/// What the lint reads of a request besides the line (its URL and site context), kept with a line's memo
/// (``LineMemo``) and compared exactly before the memo is used again. One object for the memos of the lines of
/// requests at the same place, so that a response's lines compare it once (``ResponseInHand/isPlace(_:)``).
final class LintPlace {
    let scheme: String
    let host: String
    let port: Int
    let path: String
    let site: RequestSite.Kind?

    init(_ m: borrowing MessageContext) {
        (scheme, host, port, path, site) = (m.scheme, m.host, m.port, m.path, m.site)
    }

    /// Whether it is `box`'s request's place (its fields read where they lie).
    @inline(__always)
    func isFor(_ box: MessageBox) -> Bool {
        port == box.message.port && site == box.message.site && host == box.message.host
            && path == box.message.path && scheme == box.message.scheme
    }

    /// Whether it is the place of the exchange `context` whose request's site context is `site`, read from the
    /// context itself (no message is made to compare).
    @inline(__always)
    func isFor(_ context: ExchangeContext, site: RequestSite.Kind?) -> Bool {
        port == context.port && self.site == site && host == context.host && scheme == context.scheme
            && path == MessageContext.path(of: context)
    }
}
