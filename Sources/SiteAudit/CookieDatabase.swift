/// What a cookie is for, as an audit reports it: the categories consent platforms and regulators use. `necessary`
/// cookies need no consent (ePrivacy Directive art. 5(3): "strictly necessary"); the others do.
public enum CookieCategory: String, Sendable, CaseIterable, Comparable {
    case necessary, functional, analytics, marketing, unknown

    public static func < (a: CookieCategory, b: CookieCategory) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// Whether a cookie of this category set before the visitor consented is a finding: analytics and marketing
    /// cookies need consent under every regulator's guidance. The Open Cookie Database files session and
    /// consent-state cookies (PHPSESSID, CookieConsent, OptanonConsent) as Functional, so `functional` alone is not.
    public var needsConsent: Bool { self == .analytics || self == .marketing }
}

/// The Open Cookie Database (https://github.com/jkwakman/Open-Cookie-Database, Apache-2.0): known cookies by exact
/// name or, for its wildcard rows, by name prefix; a copy is compiled in (``CookieDatabase/shipped``,
/// scripts/update-cookie-database.sh). A cookie it does not list is `unknown`, never guessed.
public struct CookieDatabase: Sendable {
    /// One row: the database's own words, and the category the audit reports for them.
    public struct Row: Sendable, Equatable {
        public var id: String
        public var platform: String
        /// The database's category (Functional, Analytics, Marketing, Security, Necessary, Personalization).
        public var listed: String
        public var name: String
        /// The domain it lists (often empty: the name alone identifies the cookie).
        public var domain: String
        public var retention: String
        /// The name is a prefix (`_ga_` matches `_ga_XYZ123`).
        public var wildcard: Bool

        /// The audit's category: Security and Necessary are necessary, Personalization is functional.
        public var category: CookieCategory {
            switch listed.lowercased() {
            case "necessary", "security": .necessary
            case "functional", "personalization": .functional
            case "analytics": .analytics
            case "marketing": .marketing
            default: .unknown
            }
        }
    }

    private let exact: [String: Row]
    /// Wildcard rows, longest prefix first (the most specific row wins).
    private let prefixes: [Row]
    public let count: Int

    /// Rows from tab-separated lines: ID, platform, category, name, domain, retention, wildcard; optionally after
    /// the row's place in the database's CSV (the copy compiled in keeps its rows in a file per category). The
    /// rows are read in the CSV's order, by place when given, else as the lines come: the order is meaning, the
    /// first row for a name being the one reported.
    public init(tabSeparated text: String) {
        var read: [(place: Int, row: Row)] = []
        for line in text.split(separator: "\n") {
            var f = line.split(separator: "\t", omittingEmptySubsequences: false).map {
                String($0.drop(while: { $0 == " " }))
            }
            var place = read.count
            if f.count == 8, let given = Int(f[0]) {
                place = given
                f.removeFirst()
            }
            guard f.count == 7, !f[3].isEmpty else { continue }
            let row = Row(
                id: f[0], platform: f[1], listed: f[2], name: f[3], domain: f[4], retention: f[5], wildcard: f[6] == "1"
            )
            read.append((place, row))
        }
        read.sort { $0.place < $1.place }
        var exact: [String: Row] = [:]
        var prefixes: [Row] = []
        for (_, row) in read {
            if row.wildcard {
                prefixes.append(row)
            } else if exact[row.name] == nil {
                // The first row for a name is kept (the database lists a few names twice, for two platforms).
                exact[row.name] = row
            }
        }
        self.exact = exact
        self.prefixes = prefixes.sorted { $0.name.count > $1.name.count }
        self.count = read.count
    }

    /// The copy compiled in.
    public static let shipped = CookieDatabase(tabSeparated: shippedText)

    /// The row for a cookie name: its exact row, else the longest wildcard row it starts with, else nil.
    public func row(for name: String) -> Row? {
        if let row = exact[name] { return row }
        return prefixes.first { name.hasPrefix($0.name) }
    }
}
