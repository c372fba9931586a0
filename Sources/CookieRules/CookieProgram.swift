import CookieKit
import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The actions of every cookie rule, compiled flat for the per-cookie loop: plain values that need no reference
/// counting, the bytes they write precomputed and checked once (`; Secure`, `; SameSite=Lax`) in one array (the
/// texts a ``SetCookieRewrite`` writes from), and the rest (``RuleEngine/perform(_:on:context:now:suffixes:)``, made
/// through ``SetCookieRewrite/edit(_:)``) by index.
struct CookieProgram: Sendable {
    /// A range of ``bytes``.
    typealias Text = SetCookieRewrite.Text

    enum Action: Sendable {
        case drop
        case log
        /// `domain add-dot`.
        case addDot
        /// `; Name` appended when the flag is missing.
        case flagOn(CookieAttributeKind, text: Text)
        /// Every occurrence of the attribute removed: a flag turned off, or an attribute's `remove`.
        case flagOff(CookieAttributeKind)
        /// `; Name=value`: the value replaces the one in effect, or the whole text is appended. With
        /// `unlessEqualIgnoringCase`, a value that differs only in case is left (SameSite).
        case setValue(CookieAttributeKind, text: Text, nameLength: Int32, unlessEqualIgnoringCase: Bool)
        /// Everything else: an index into ``general``.
        case general(Int32)
    }

    /// A cookie-level condition.
    enum Check: Sendable {
        /// `cookie-domain`: one of `domainPatterns[patterns]` matches the Domain in effect (none: no match).
        case domain(patterns: Range<Int32>, negated: Bool)
        /// Any other: `conditions[index]`.
        case general(Int32)
    }

    /// A `cookie-domain` pattern: an exact name, a `.suffix` (its text has the dot), or any domain.
    struct DomainPattern: Sendable {
        enum Kind: Sendable { case exact, suffix, any }
        var kind: Kind
        var text: Text
    }

    /// Per cookie rule, in file order: its actions, its cookie-level conditions, whether it ends the list, and
    /// whether any of its actions edits the line (anything but `log` and `drop`).
    var rules: [(actions: Range<Int32>, checks: Range<Int32>, stops: Bool, edits: Bool)] = []
    /// Per cookie rule: whether what it does to a line depends on the line's cookie-avs alone (its conditions are
    /// `cookie-domain`, its actions those the plan of a ``SetCookieRewrite`` makes; see ``CookieShapeCache``).
    var readsOnlyAttributes: [Bool] = []
    var actions: [Action] = []
    var checks: [Check] = []
    var domainPatterns: [DomainPattern] = []
    var conditions: [Condition] = []
    var bytes: [UInt8] = []
    var general: [CookieAction] = []

    init(_ cookieRules: [Rule]) {
        for rule in cookieRules {
            let firstAction = Int32(actions.count)
            var edits = false
            for action in rule.cookieActions {
                let compiled = compile(action)
                switch compiled {
                case .drop, .log: break
                default: edits = true
                }
                actions.append(compiled)
            }
            let firstCheck = Int32(checks.count)
            for condition in rule.conditions where condition.isCookieCondition { checks.append(compile(condition)) }
            rules.append((firstAction..<Int32(actions.count), firstCheck..<Int32(checks.count), rule.stops, edits))
            readsOnlyAttributes.append(
                actions[Int(firstAction)...].allSatisfy { if case .general = $0 { false } else { true } }
                    && checks[Int(firstCheck)...].allSatisfy { if case .domain = $0 { true } else { false } })
        }
    }

    /// ``RuleEngine/CookiePlan/shapeKey`` for a plan of these rules.
    func shapeKey(_ plan: [Int]) -> UInt64? {
        var key: UInt64 = 0
        for index in plan {
            guard index < 64, readsOnlyAttributes[index] else { return nil }
            key |= 1 << UInt64(index)
        }
        return key
    }

    private mutating func compile(_ condition: Condition) -> Check {
        guard case .cookieDomain(let patterns) = condition.test else {
            conditions.append(condition)
            return .general(Int32(conditions.count - 1))
        }
        let first = Int32(domainPatterns.count)
        for pattern in patterns {
            switch pattern {
            case .exact(let h): domainPatterns.append(DomainPattern(kind: .exact, text: text(h)))
            case .subdomains(_, let dotted): domainPatterns.append(DomainPattern(kind: .suffix, text: text(dotted)))
            case .any: domainPatterns.append(DomainPattern(kind: .any, text: Text(start: 0, end: 0)))
            }
        }
        return .domain(patterns: first..<Int32(domainPatterns.count), negated: condition.negated)
    }

    /// Whether the Domain in effect (without its leading dot, any case) matches one of the patterns (lowercase),
    /// as ``HostPattern/matches(_:)`` would on the lowercased value, without building a string.
    func domainMatches(_ cookie: SetCookieView, _ patterns: Range<Int32>) -> Bool {
        guard let range = cookie.domainRange, !range.isEmpty else { return false }
        let d = cookie.bytes[range]
        for index in Int(patterns.lowerBound)..<Int(patterns.upperBound) {
            let pattern = domainPatterns[index]
            let p = bytes[Int(pattern.text.start)..<Int(pattern.text.end)]
            switch pattern.kind {
            case .any: return true
            case .exact: if d.count == p.count && ByteClass.equalsLowercase(d, p) { return true }
            case .suffix: if d.count > p.count && ByteClass.equalsLowercase(d.suffix(p.count), p) { return true }
            }
        }
        return false
    }

    private mutating func compile(_ action: CookieAction) -> Action {
        switch action {
        case .drop: return .drop
        case .log: return .log
        case .domain(.addDot): return .addDot
        case .flag(let kind, false): return .flagOff(kind)
        // Removing an attribute is turning a flag off (`SetCookie.setFlag(_:false)` is `remove(_:)`): every
        // occurrence goes, which the rewrite's plan models.
        case .domain(.remove): return .flagOff(.domain)
        case .path(nil): return .flagOff(.path)
        case .sameSite(nil): return .flagOff(.sameSite)
        case .maxAge(nil): return .flagOff(.maxAge)
        case .expires(nil): return .flagOff(.expires)
        case .flag(let kind, true): return .flagOn(kind, text: text(kind.canonicalName, nil))
        case .domain(.set(let d)) where Self.writable(d): return setValue(.domain, d, unlessEqualIgnoringCase: false)
        case .path(let p?) where Self.writable(p): return setValue(.path, p, unlessEqualIgnoringCase: false)
        case .sameSite(let v?) where Self.writable(v): return setValue(.sameSite, v, unlessEqualIgnoringCase: true)
        default:
            general.append(action)
            return .general(Int32(general.count - 1))
        }
    }

    private mutating func setValue(_ kind: CookieAttributeKind, _ value: String, unlessEqualIgnoringCase: Bool)
        -> Action
    {
        let name = kind.canonicalName
        return .setValue(
            kind, text: text(name, value), nameLength: Int32(name.utf8.count),
            unlessEqualIgnoringCase: unlessEqualIgnoringCase)
    }

    /// Stores the bytes of `string`.
    private mutating func text(_ string: String) -> Text {
        let start = Int32(bytes.count)
        bytes += string.utf8
        return Text(start: start, end: Int32(bytes.count))
    }

    /// Stores `; name` or `; name=value`.
    private mutating func text(_ name: String, _ value: String?) -> Text {
        let start = Int32(bytes.count)
        bytes += [0x3B, 0x20]
        bytes += name.utf8
        if let value {
            bytes.append(0x3D)
            bytes += value.utf8
        }
        return Text(start: start, end: Int32(bytes.count))
    }

    /// Values the checked edits may write: what a Set-Cookie edit accepts, without edge whitespace (so the value
    /// parses back into the same place). Others go through `general`, which reports a refusal as a note.
    static func writable(_ value: String) -> Bool {
        let isWSP = { (b: UInt8) in b == 0x20 || b == 0x09 }
        guard let first = value.utf8.first, let last = value.utf8.last, !isWSP(first), !isWSP(last) else {
            return false
        }
        return (try? SetCookie.checkWritableValue(value)) != nil
    }
}
