extension RuleEngine {
    /// What the rules did to one cookie.
    public struct Edit: Sendable {
        @usableFromInline let matched: RuleMatches
        /// A rule dropped the line (the cookie is left as it was matched).
        public var dropped: Bool
        public var logRequested: Bool
        /// What the rules' `note`s said of the line (empty for nearly every line).
        public var notes: [String] {
            get { noted ?? [] }
            set { noted = newValue.isEmpty ? nil : newValue }
        }
        /// ``notes`` when there are some: nil is nothing to retain or release (an empty array still is), and an
        /// edit is copied and dropped on every line.
        @usableFromInline var noted: [String]?
        /// A rule left a note.
        @inlinable public var hasNotes: Bool { noted != nil }
        /// The edited line is in the ``SetCookieRewrite``'s output and differs from the received one (the
        /// proxy's path; the cookie it was given is left as received).
        public internal(set) var rewritten = false
        /// Whether any rule matched.
        public var matchedAny: Bool { !matched.isEmpty }

        /// The line was rewritten beside the rules (a reverse route's mapping of its Path), its new bytes held by
        /// whoever made them: `note` says what and why, in the record as a rule's note is.
        public mutating func rewrittenBeside(note: String) {
            rewritten = true
            notes.append(note)
        }
        /// An outcome of rules among the first 64 without notes, from its parts (as a compact record keeps them).
        public init(matchedLow: UInt64, dropped: Bool, logRequested: Bool) {
            var matched = RuleMatches()
            matched.low = matchedLow
            self.init(matched: matched, dropped: dropped, logRequested: logRequested, notes: [])
        }

        init(matched: RuleMatches, dropped: Bool, logRequested: Bool, notes: [String]) {
            (self.matched, self.dropped, self.logRequested) = (matched, dropped, logRequested)
            noted = notes.isEmpty ? nil : notes
        }

        /// No rule matched (the rules did not run on the line, or none applied).
        public static let untouched = Edit(matched: RuleMatches(), dropped: false, logRequested: false, notes: [])
        /// Which rules matched, as comparable values (for caches of what a record shows).
        public var matchedRules: (low: UInt64, high: [Int]) { (matched.low, matched.high) }
        /// The first 64 rules of ``matchedRules`` alone (no array to retain).
        @inlinable public var matchedRulesLow: UInt64 { matched.low }
        /// Whether a rule past the first 64 matched (``matchedRules``' array is not empty).
        @inlinable public var matchedRulesBeyond64: Bool { matched.hasBeyond64 }
    }
}
