import CookieKit
import HTTPGrammar

/// `audit --browser all`: what each real browser kept, refused and sent back, cookie by cookie, side by side (the
/// same pages, consent states and seed in each).
public struct EngineComparison: Sendable {
    public struct Row: Sendable {
        public var name: String
        /// Each engine's side, in the scans' order.
        public var engines: [(engine: String, side: RulesComparison.Side)]
        /// The engines did not all do the same.
        public var differs: Bool {
            guard let first = engines.first?.side else { return false }
            return engines.contains { $0.side.kept.isEmpty != first.kept.isEmpty || $0.side.sent != first.sent }
        }
    }

    public var rows: [Row]

    public init(_ scans: [SiteScan]) {
        var names: [String] = []
        for scan in scans {
            for name in scan.cookies.map(\.name) + scan.refused.map(\.name) where !names.contains(name) {
                names.append(name)
            }
        }
        rows = names.map { name in
            Row(
                name: name,
                engines: scans.map { ($0.engine, RulesComparison.Side(name, cookies: $0.cookies, refused: $0.refused)) }
            )
        }
    }

    public var json: JSONValue {
        .array(
            rows.map { r in
                .object(
                    [("name", .string(r.name)), ("differs", .bool(r.differs))]
                        + r.engines.map { e in
                            (
                                e.engine,
                                .object([
                                    ("kept", .array(e.side.kept.map { .string($0) })),
                                    ("refused", .array(e.side.refused.map { .string($0) })),
                                    ("sent", .bool(e.side.sent)),
                                ])
                            )
                        })
            })
    }

    public var text: TerminalText {
        var out: TerminalText = "Side by side:\n"
        for r in rows {
            out += "  \(r.name)\(r.differs ? "  (the engines differ)" : "")\n"
            for e in r.engines { out += "    \(e.engine): \(e.side.summary)\n" }
        }
        return out
    }
}
