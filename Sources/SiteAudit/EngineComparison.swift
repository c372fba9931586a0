import CookieKit
import JSONStream
import Terminal

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

extension EngineComparison {
    /// `audit --browser all --out DIR`'s top `report.html`: the side-by-side table (a row per cookie, a column per
    /// engine: kept, refused and why, sent back), rows where the engines differ marked, and a link to each engine's
    /// own report. Self-contained (inline styles, no script), every value escaped.
    public func html(start: String, engines: [String]) -> String {
        func e(_ s: String) -> String { SiteScan.escape(s) }
        var h = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Cookie audit of \(e(start)) in \(engines.count) browsers</title>
            <style>
            body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 1.5rem 2rem; max-width: 1800px; color: #1d1d1f; }
            h1 { font-size: 1.5rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
            table { border-collapse: collapse; width: 100%; table-layout: fixed; }
            th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid #ddd; overflow-wrap: anywhere; }
            th { background: #f4f4f6; font-weight: 600; } tr.differs td { background: #fff2cc; }
            </style></head><body>
            <h1>Cookie audit of \(e(start)) in \(engines.count) browsers</h1>
            <p>Each engine's own report: \(engines.map { "<a href=\"\(e($0))/report.html\">\(e($0))</a>" }.joined(separator: " · ")). Highlighted rows: the engines did not all do the same.</p>
            <table><thead><tr><th>cookie</th>\(engines.map { "<th>\(e($0))</th>" }.joined())</tr></thead><tbody>

            """
        for r in rows {
            h += "<tr\(r.differs ? " class=\"differs\"" : "")><td><code>\(e(r.name))</code></td>"
            for engine in r.engines { h += "<td>\(e(engine.side.summary))</td>" }
            h += "</tr>\n"
        }
        h += "</tbody></table></body></html>\n"
        return h
    }
}
