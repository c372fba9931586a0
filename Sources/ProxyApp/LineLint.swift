import CookieKit
import CookieRules
import HTTPGrammar
import Locking

/// A line's lint: its findings, and the keys of those worth counting (``FindingKeys``: rejects and warnings), worked
/// out once with the findings so that counting them reads integers, not strings.
package final class Linted: Sendable {
    package let findings: [LintFinding]
    /// One ``FindingKeys`` key per finding that is not informational.
    package let counted: [Int]

    init(_ findings: [LintFinding]) {
        self.findings = findings
        counted = findings.filter { $0.severity != .info }.map { FindingKeys.shared.key($0.code, $0.severity) }
    }
}

/// A small integer for each (lint code, severity) seen, for counting by index: the lint's codes are a bounded set,
/// met once each (a key is made when a line is linted, not when it is counted).
package final class FindingKeys: Sendable {
    package static let shared = FindingKeys()
    private let state = Locked<(keys: [String: Int], names: [(String, LintFinding.Severity)])>(([:], []))

    package func key(_ code: String, _ severity: LintFinding.Severity) -> Int {
        let name = "\(severity.rawValue) \(code)"
        return state.withLock { s in
            if let k = s.keys[name] { return k }
            s.keys[name] = s.names.count
            s.names.append((code, severity))
            return s.names.count - 1
        }
    }

    package func name(_ key: Int) -> (code: String, severity: LintFinding.Severity) {
        state.withLock { $0.names[key] }
    }
}

/// What the lint reads of a request besides the line (its URL and site context), kept with what was worked out for
/// it (a cached lint, a cached record) and compared exactly before that is used again.
struct LintPlace {
    let scheme: String
    let host: String
    let port: Int
    let path: String
    let site: RequestSite.Kind?

    init(_ m: borrowing MessageContext) {
        (scheme, host, port, path, site) = (m.scheme, m.host, m.port, m.path, m.site)
    }

    @inline(__always)
    func isFor(_ m: borrowing MessageContext) -> Bool {
        port == m.port && site == m.site && host == m.host && path == m.path && scheme == m.scheme
    }
}

/// The lint's findings for lines seen before (one per event loop's stage): a server that sets the same cookies on
/// every response has each linted once a second per URL, not once per response. The findings are a function of the
/// line's bytes, the request's URL and site context and the second (an `Expires` is judged against it): all of it
/// is the key and compared exactly, so a collision costs a miss, never a wrong finding. Direct-mapped by a digest.
final class LintCache {
    final class Entry {
        let digest: UInt64
        let line: [UInt8]
        let place: LintPlace
        let second: Int64
        let linted: Linted

        init(_ digest: UInt64, _ line: [UInt8], _ m: borrowing MessageContext, _ second: Int64, _ linted: Linted) {
            (self.digest, self.line, self.second, self.linted) = (digest, line, second, linted)
            place = LintPlace(m)
        }

        /// Whether it was made for this line, request and second.
        func isFor(
            _ digest: UInt64, _ line: UnsafeBufferPointer<UInt8>, _ second: Int64, _ m: borrowing MessageContext
        ) -> Bool {
            self.digest == digest && self.second == second && LogSink.Fragment.same(self.line, line) && place.isFor(m)
        }
    }

    private static let slotBits = 8

    /// The slot: the digest mixed once more (the log's record cache takes its top bits as they are; two caches
    /// indexed by the same bits would miss together).
    private static func slot(_ digest: UInt64) -> Int {
        Int(truncatingIfNeeded: (digest &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - slotBits))
    }
    private var entries = [Entry?](repeating: nil, count: 1 << LintCache.slotBits)

    /// The lint kept for `line` in `response`'s request and second, if any (`digest`: the line's, which picks the
    /// slot; what is compared is the whole key).
    func cached(_ line: UnsafeBufferPointer<UInt8>, _ digest: UInt64, _ response: borrowing ResponseOutcome) -> Linted?
    {
        let second = response.time / 1000
        guard let e = entries[Self.slot(digest)],
            e.isFor(digest, line, second, response.message)
        else { return nil }
        return e.linted
    }

    /// Keeps `findings` for `line` in `response`'s request and second; returns them with their keys.
    func keep(
        _ line: UnsafeBufferPointer<UInt8>, _ digest: UInt64, _ response: borrowing ResponseOutcome,
        _ findings: [LintFinding]
    ) -> Linted {
        let linted = Linted(findings)
        entries[Self.slot(digest)] = Entry(
            digest, Array(line), response.message, response.time / 1000, linted)
        return linted
    }
}
