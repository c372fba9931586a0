import CookieKit
import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One attribute-level difference between a Set-Cookie before and after the rules.
public struct AttributeChange: Sendable, Hashable {
    /// What was done; its raw value is the log's `op` key (rules/README.md).
    public enum Op: String, Sendable, Hashable {
        /// An attribute that was not there is (`to` its value, empty for a flag).
        case add
        /// An attribute is gone (`from` its value).
        case remove
        /// An attribute's value changed (`from` → `to`).
        case set
        /// The cookie's name changed.
        case rename
        /// The cookie's value changed.
        case value
        /// The whole Set-Cookie line was dropped.
        case drop
    }

    public var op: Op
    public var attribute: String
    public var from: String?
    public var to: String?
    public init(op: Op, attribute: String, from: String?, to: String?) {
        self.op = op
        self.attribute = attribute
        self.from = from
        self.to = to
    }
}

/// What the rules did to one Set-Cookie line: the one value a line's rewrite becomes. The proxy's rewrite decides it
/// on the line as it lies in the message (``RuleEngine/Edit``: which rules matched, dropped or logged, and the edited
/// bytes); ``RuleEngine/transformation(received:edited:_:)`` makes this value from that outcome, so the log's record,
/// the inspector's line, `try`, `check` and `audit` read the same thing and none of them runs the rules again.
public struct Transformation: Sendable {
    /// The line as received.
    public var received: SetCookie
    /// What the rules made of it; nil when a rule dropped it. (In a dry run, what would have been sent.)
    public var result: SetCookie?
    /// Names of the rules that matched, in file order (looked up when asked for: the proxy path does not ask).
    public var rules: [String] { matched.names(ruleNames) }
    /// Where each of ``rules`` is written (`file:line:column`).
    public var ruleLocations: [SourceLocation] { matched.names(locations) }
    let matched: RuleMatches
    let ruleNames: [String]
    let locations: [SourceLocation]
    /// The attribute-level diff, computed when asked for (the log's thread asks; the proxy path does not).
    public var changes: [AttributeChange] { RuleEngine.diff(received, result) }
    /// A matched rule asked for a log record even without changes.
    public var logRequested: Bool
    /// Notes about actions that could not apply (e.g. `domain ensure` on an IP host).
    public var notes: [String]

    public var isChanged: Bool { result == nil || result!.bytes != received.bytes }

    init(
        received: SetCookie, result: SetCookie?, matched: RuleMatches, ruleNames: [String],
        locations: [SourceLocation], logRequested: Bool, notes: [String]
    ) {
        self.received = received
        self.result = result
        self.matched = matched
        self.ruleNames = ruleNames
        self.locations = locations
        self.logRequested = logRequested
        self.notes = notes
    }
}
