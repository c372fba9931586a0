/// What `--rules` changed in the browser (`audit --browser --rules PATH`): the same pages visited again through a
/// proxy that applies the rules, and per cookie name whether the browser kept it (where), refused it (why) and sent
/// it back, before and after.
public struct RulesComparison: Sendable {
    /// One side of a row: the domains the browser kept the cookie for, its reasons for refusing it, whether a
    /// request carried it back, and the consent states it was kept in.
    public struct Side: Sendable, Equatable {
        public var kept: [String]
        public var refused: [String]
        public var sent: Bool
        public var states: [ConsentState]

        public init(_ name: String, cookies: [SiteCookie], refused: [RefusedCookie]) {
            let mine = cookies.filter { $0.name == name }
            kept = mine.map { ($0.hostOnly ? "" : ".") + $0.domain + $0.path }
            self.refused = Array(Set(refused.filter { $0.name == name }.flatMap(\.reasons))).sorted()
            sent = mine.contains(where: \.sent)
            states = ConsentState.allCases.filter { s in mine.contains { $0.states.contains(s) } }
        }

        /// `kept .a.example/ (sent)`, `refused: InvalidDomain`, or `absent`.
        public var summary: String {
            var parts: [String] = []
            if !kept.isEmpty {
                parts.append("kept \(kept.joined(separator: ", "))\(sent ? ", sent back" : ", never sent back")")
            }
            if !refused.isEmpty { parts.append("refused: \(refused.joined(separator: ", "))") }
            return parts.isEmpty ? "absent" : parts.joined(separator: "; ")
        }
    }

    public struct Row: Sendable {
        public var name: String
        public var before: Side
        public var after: Side
        public var changed: Bool { before != after }
    }

    /// The rules file or folder.
    public var path: String
    /// Every cookie name either pass saw, in the order first seen (the first pass's first).
    public var rows: [Row]
    /// How the second pass's consent states went.
    public var afterStates: [ConsentOutcome]

    public init(path: String, before: SiteScan, after: SiteScan) {
        self.path = path
        var names: [String] = []
        for name in before.cookies.map(\.name) + before.refused.map(\.name) + after.cookies.map(\.name)
            + after.refused.map(\.name) where !names.contains(name)
        {
            names.append(name)
        }
        rows = names.map { name in
            Row(
                name: name, before: Side(name, cookies: before.cookies, refused: before.refused),
                after: Side(name, cookies: after.cookies, refused: after.refused))
        }
        afterStates = after.states
    }
}
