import CookieKit

/// One edit of a request's `Cookie` header by a `request-cookie` action.
public struct RequestCookieChange: Sendable, Hashable {
    public enum Op: String, Sendable, Hashable {
        case remove
        /// A new value for a pair the request carried.
        case set
        /// A pair appended: the request did not carry the cookie.
        case add
        case rename
    }
    public var op: Op
    /// The cookie's name as the client sent it (for `add`: the name added).
    public var name: String
    /// For `rename`: the new name.
    public var newName: String?
    /// The value before (nil for `add`) and after (nil for `remove`).
    public var before: String?
    public var after: String?
    /// The rule that made the edit.
    public var rule: String
    public var location: SourceLocation

    public init(
        op: Op, name: String, newName: String? = nil, before: String?, after: String?, rule: String,
        location: SourceLocation
    ) {
        (self.op, self.name, self.newName, self.before, self.after) = (op, name, newName, before, after)
        (self.rule, self.location) = (rule, location)
    }

    /// The change in the log's attribute-level form (`changes` of a record).
    public var attributeChange: AttributeChange {
        switch op {
        case .remove: return AttributeChange(op: .drop, attribute: "cookie", from: before, to: nil)
        case .set, .add: return AttributeChange(op: .value, attribute: "value", from: before, to: after)
        case .rename: return AttributeChange(op: .rename, attribute: "name", from: name, to: newName)
        }
    }
}

extension RuleEngine {
    /// Whether any rule edits requests' `Cookie` headers.
    public var editsRequestCookies: Bool { !requestCookieRules.isEmpty }

    /// Applies the `request-cookie` rules whose conditions hold for this request, in file order, to its `Cookie`
    /// fields (one per field the request carried; a `set` of a cookie none of them carries appends it to the last,
    /// or to a new field when there is none: the caller adds a field for an empty list that is no longer empty).
    /// `jar` gives the client's cookie of a name, for `where` (nil: the proxy knows none, and no state holds).
    /// Only the edited pairs' bytes change.
    public func editRequestCookies(
        _ headers: inout [CookieHeader], context: MessageContext,
        jar: ((ArraySlice<UInt8>) -> StoredCookie?)? = nil
    ) -> [RequestCookieChange] {
        var changes: [RequestCookieChange] = []
        for rule in requestCookieRules where messageConditionsHold(rule, context, ignoringStatus: true) {
            let states = rule.conditions.compactMap { c -> (predicates: [StatePredicate], negated: Bool)? in
                if case .state(let p) = c.test { return (p, c.negated) }
                return nil
            }
            // `where` per cookie, against what the client's jar holds under that name.
            func stateHolds(_ name: ArraySlice<UInt8>) -> Bool {
                if states.isEmpty { return true }
                let stored = jar?(name)
                return states.allSatisfy { s in
                    let holds = stored.map { c in s.predicates.contains { $0.holds(c) } } ?? false
                    return holds != s.negated
                }
            }
            func change(
                _ op: RequestCookieChange.Op, _ name: String, _ newName: String?, _ before: String?, _ after: String?
            ) {
                changes.append(
                    RequestCookieChange(
                        op: op, name: name, newName: newName, before: before, after: after, rule: rule.name,
                        location: rule.location))
            }
            for action in rule.requestCookieActions {
                switch action {
                case .remove(let patterns):
                    for h in headers.indices {
                        var i = 0
                        while i < headers[h].pairs.count {
                            let pair = headers[h].pairs[i]
                            let name = headers[h].name(pair)
                            if patterns.contains(where: { $0.matches(name) }) && stateHolds(headers[h].nameBytes(pair))
                            {
                                change(.remove, name, nil, headers[h].value(pair), nil)
                                headers[h].remove(at: i)
                            } else {
                                i += 1
                            }
                        }
                    }
                case .set(let name, let value):
                    var found = false
                    let valueBytes = Array(value.utf8)
                    for h in headers.indices {
                        for i in headers[h].pairs.indices where headers[h].name(headers[h].pairs[i]) == name {
                            found = true
                            let pair = headers[h].pairs[i]
                            guard stateHolds(headers[h].nameBytes(pair)),
                                headers[h].valueBytes(pair).elementsEqual(valueBytes)
                                    == false
                            else { continue }
                            change(.set, name, nil, headers[h].value(pair), value)
                            headers[h].setValue(at: i, to: valueBytes)
                        }
                    }
                    if !found && stateHolds(ArraySlice(name.utf8)) {
                        if headers.isEmpty { headers.append(CookieHeader([UInt8]())) }
                        headers[headers.count - 1].append(name: Array(name.utf8), value: valueBytes)
                        change(.add, name, nil, nil, value)
                    }
                case .rename(let from, let to):
                    for h in headers.indices {
                        for i in headers[h].pairs.indices where headers[h].name(headers[h].pairs[i]) == from {
                            guard stateHolds(headers[h].nameBytes(headers[h].pairs[i])) else { continue }
                            change(
                                .rename, from, to, headers[h].value(headers[h].pairs[i]),
                                headers[h].value(headers[h].pairs[i]))
                            headers[h].setName(at: i, to: Array(to.utf8))
                        }
                    }
                }
            }
        }
        return changes
    }
}
