import CookieRules

/// How the proxy decided one received Set-Cookie line (by its field's index in the received head): the rules'
/// outcome, in a form without references (rules among the first 64 and two flags); what that cannot hold (notes,
/// rules past the 64th, a dry run's would-be line) is a ``Rest`` of the response's ``LineEdits``.
public struct LineEdit: Sendable {
    public var field: Int
    @usableFromInline var matchedLow: UInt64
    @usableFromInline var dropped: Bool
    @usableFromInline var logRequested: Bool
    /// The line has a ``Rest`` (the next one of its response's, in order).
    @usableFromInline var hasRest: Bool

    @usableFromInline
    init(field: Int, matchedLow: UInt64, dropped: Bool, logRequested: Bool, hasRest: Bool) {
        (self.field, self.matchedLow, self.dropped, self.logRequested, self.hasRest) =
            (field, matchedLow, dropped, logRequested, hasRest)
    }

    /// The whole outcome and a dry run's would-be line.
    public final class Rest: Sendable {
        let edit: RuleEngine.Edit
        let wouldBe: [UInt8]?
        @usableFromInline
        init(_ edit: RuleEngine.Edit, _ wouldBe: [UInt8]?) { (self.edit, self.wouldBe) = (edit, wouldBe) }
    }
}

/// A response's outcomes as the cookie stage notes them, one per received Set-Cookie line the rules ran on; kept by
/// the event loop and reused (``reset()`` keeps its storage), so noting them allocates nothing; the inspector copies
/// them into its record.
public struct LineEdits: Sendable {
    @usableFromInline var lines: [LineEdit] = []
    @usableFromInline var noted = 0
    /// How many outcomes are noted.
    public var count: Int { noted }
    @usableFromInline var rest: [LineEdit.Rest] = []

    public init() {}

    public mutating func reset() {
        noted = 0
        if !rest.isEmpty { rest = [] }
    }

    /// Notes `edit`, the outcome of the received field `field` (`wouldBe`: a dry run's edited line). Inlined: it
    /// runs for every line of a recorded response; what a line without notes, later rules or a would-be line never
    /// needs is a function of its own.
    @inlinable @inline(__always)
    public mutating func append(field: Int, edit: borrowing RuleEngine.Edit, wouldBe: [UInt8]?) {
        let full = edit.matchedRulesBeyond64 || edit.hasNotes || wouldBe != nil
        if full { appendRest(edit, wouldBe) }
        append(
            LineEdit(
                field: field, matchedLow: edit.matchedRulesLow, dropped: edit.dropped,
                logRequested: edit.logRequested, hasRest: full))
    }

    /// Notes an outcome of rules among the first 64 without notes (the common case), from its parts.
    @inlinable @inline(__always)
    public mutating func append(field: Int, matchedLow: UInt64, dropped: Bool, logRequested: Bool) {
        append(
            LineEdit(field: field, matchedLow: matchedLow, dropped: dropped, logRequested: logRequested, hasRest: false)
        )
    }

    @inlinable @inline(__always)
    mutating func append(_ line: LineEdit) {
        // Written over the last response's entries (an assignment, not a removal and an append).
        if noted < lines.count { lines[noted] = line } else { lines.append(line) }
        noted += 1
    }

    @usableFromInline @inline(never)
    mutating func appendRest(_ edit: borrowing RuleEngine.Edit, _ wouldBe: [UInt8]?) {
        rest.append(LineEdit.Rest(copy edit, wouldBe))
    }
}
