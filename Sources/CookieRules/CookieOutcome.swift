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

/// What the rules did to one Set-Cookie line.
public struct CookieOutcome: Sendable {
    public var original: SetCookie
    /// The line to send; nil when a rule dropped it.
    public var result: SetCookie?
    /// Names of the rules that matched, in order (looked up when asked for: the proxy path does not ask).
    public var rules: [String] { matched.names(ruleNames) }
    let matched: RuleMatches
    let ruleNames: [String]
    /// The attribute-level diff, computed when asked for (the log thread asks; the proxy path does not).
    public var changes: [AttributeChange] { RuleEngine.diff(original, result) }
    /// A matched rule asked for a log record even without changes.
    public var logRequested: Bool
    /// Notes about actions that could not apply (e.g. `domain ensure` on an IP host).
    public var notes: [String]

    public var isChanged: Bool { result == nil || result!.bytes != original.bytes }

    init(
        original: SetCookie, result: SetCookie?, matched: RuleMatches, ruleNames: [String], logRequested: Bool,
        notes: [String]
    ) {
        self.original = original
        self.result = result
        self.matched = matched
        self.ruleNames = ruleNames
        self.logRequested = logRequested
        self.notes = notes
    }
}
