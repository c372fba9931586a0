import CookieKit
import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Applies a ``RuleSet`` in two phases: every rule is matched against the original message and cookie
/// first; then the actions of the matched rules run in file order (`stop` ends the list for that cookie).
public final class RuleEngine: Sendable {
    public let ruleSet: RuleSet
    let suffixes: PublicSuffixList
    /// The rules that look at Set-Cookie lines, prepared for the per-cookie loop.
    /// Their host, path, method and status conditions (for the plan).
    let messageConditions: [[Condition]]
    /// Their cookie conditions and actions.
    let program: CookieProgram
    /// Their names, shared by every outcome.
    let cookieRuleNames: [String]
    /// Where each cookie rule is written, indexed as ``cookieRuleNames``.
    let cookieRuleLocations: [SourceLocation]
    // Compiled once: the rules each kind of work needs, so messages no rule concerns cost nothing.
    let requestHeaderRules: [Rule]
    let responseHeaderRules: [Rule]
    let renameRules: [Rule]
    let requestCookieRules: [Rule]
    /// Whether a rule has a `site` condition (the caller then works out each request's site context).
    public let readsSite: Bool
    /// Cookie rules indexed by host: a rule with a (non-negated) `host` condition of exact names and `*.suffix`
    /// patterns can only match those hosts, so most rules are never looked at for a given message.
    let hostIndex: HostIndex
    /// Every cookie rule, when none has a message condition (the plan of every message): no lookup or test per
    /// response.
    let unconditional: [Int]?
    /// ``CookiePlan/shapeKey`` of the plan of ``unconditional``.
    let unconditionalShapeKey: UInt64?
    /// Whether the cookie rules or the response header rules can read a message's context (host, path, method,
    /// scheme, status): false when every cookie rule applies to every message and all its conditions and actions
    /// are compiled ones (`cookie-domain`, flags, values, `drop`, `log`), and no rule edits response headers.
    public let readsMessageContext: Bool

    struct HostIndex: Sendable {
        /// Exact names and `.suffix`es, in a hash table of their bytes. The hash is FNV-1a taken from the last
        /// byte to the first, so one pass from the end of a host gives the hash of each of its `.suffix`es on the
        /// way (at each dot) and of the whole name at the end: a host costs one probe per label, whatever the
        /// number of rules.
        struct Entry: Sendable {
            var hash: UInt64
            var bytes: [UInt8]
            var isSuffix: Bool
            var rules: [Int]
        }
        var entries: [Entry] = []
        /// Indices into `entries` (-1: empty), open addressing; the count is a power of two.
        var buckets: [Int32] = []
        var everywhere: [Int] = []

        init(_ rules: [Rule]) {
            var keys: [[UInt8]: Int] = [:]
            func add(_ bytes: [UInt8], suffix: Bool, _ rule: Int) {
                // The kind first: an exact name and a suffix with the same bytes stay apart.
                let key = [suffix ? 1 : 0] + bytes
                if let e = keys[key] {
                    if entries[e].rules.last != rule { entries[e].rules.append(rule) }
                    return
                }
                keys[key] = entries.count
                entries.append(Entry(hash: Self.hash(bytes[...]), bytes: bytes, isSuffix: suffix, rules: [rule]))
            }
            for (index, rule) in rules.enumerated() {
                let restriction = rule.conditions.first { condition in
                    guard !condition.negated, case .host(let patterns) = condition.test else { return false }
                    return !patterns.contains { if case .any = $0 { return true } else { return false } }
                }
                guard let restriction, case .host(let patterns) = restriction.test else {
                    everywhere.append(index)
                    continue
                }
                for pattern in patterns {
                    switch pattern {
                    case .exact(let h): add(Array(h.utf8), suffix: false, index)
                    case .subdomains(_, let dotted): add(Array(dotted.utf8), suffix: true, index)
                    case .any: break
                    }
                }
            }
            var size = 8
            while size < 2 * entries.count { size *= 2 }
            buckets = Array(repeating: -1, count: size)
            for (e, entry) in entries.enumerated() {
                var b = Int(truncatingIfNeeded: entry.hash) & (size - 1)
                while buckets[b] >= 0 { b = (b + 1) & (size - 1) }
                buckets[b] = Int32(e)
            }
        }

        /// FNV-1a over the bytes from last to first.
        static func hash(_ bytes: ArraySlice<UInt8>) -> UInt64 {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes.reversed() { h = (h ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return h
        }

        /// Indices of the rules that may match `host` (lowercase), in file order.
        func candidates(_ host: String) -> [Int] {
            if entries.isEmpty { return everywhere }
            // The entries found, at most one per label. The probe is a method, not a local function capturing
            // the result: accesses to those captured variables were checked for exclusivity at run time.
            var found: [Int32] = []
            var host = host
            host.withUTF8 { h in
                buckets.withUnsafeBufferPointer { buckets in
                    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
                    var k = h.count - 1
                    while k >= 0 {
                        let byte = h[k]
                        hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
                        // `.suffix` patterns match hosts longer than themselves: a dot after the first byte.
                        if byte == 0x2E && k > 0, let e = probe(buckets, hash, h, from: k, suffix: true) {
                            found.append(e)
                        }
                        k -= 1
                    }
                    if h.count > 0, let e = probe(buckets, hash, h, from: 0, suffix: false) { found.append(e) }
                }
            }
            if found.isEmpty { return everywhere }
            var result = everywhere
            for e in found { result += entries[Int(e)].rules }
            // `everywhere` alone is already in order and without repeats.
            guard result.count > 1 else { return result }
            result.sort()
            var unique: [Int] = []
            for r in result where unique.last != r { unique.append(r) }
            return unique
        }

        /// The entry for the bytes of `h` from `start` with `hash`, of the kind asked for.
        private func probe(
            _ buckets: UnsafeBufferPointer<Int32>, _ hash: UInt64, _ h: UnsafeBufferPointer<UInt8>, from start: Int,
            suffix: Bool
        ) -> Int32? {
            let mask = buckets.count - 1
            var b = Int(truncatingIfNeeded: hash) & mask
            while buckets[b] >= 0 {
                let entry = entries[Int(buckets[b])]
                if entry.hash == hash && entry.isSuffix == suffix && entry.bytes.count == h.count - start
                    && entry.bytes.withUnsafeBufferPointer({
                        memcmp($0.baseAddress!, h.baseAddress! + start, $0.count) == 0
                    })
                {
                    return buckets[b]
                }
                b = (b + 1) & mask
            }
            return nil
        }
    }

    public init(_ ruleSet: RuleSet, suffixes: PublicSuffixList = .system) {
        self.ruleSet = ruleSet
        self.suffixes = suffixes
        let cookieRules = ruleSet.rules.filter(\.isCookieRule)
        cookieRuleNames = cookieRules.map(\.name)
        cookieRuleDrops = cookieRules.map { $0.cookieActions.contains { if case .drop = $0 { true } else { false } } }
        cookieRuleEdits = cookieRules.map {
            $0.cookieActions.contains {
                switch $0 {
                case .drop, .log: false
                default: true
                }
            }
        }
        cookieRuleLocations = cookieRules.map(\.location)
        messageConditions = cookieRules.map { $0.conditions.filter { !$0.isCookieCondition } }
        program = CookieProgram(cookieRules)
        requestHeaderRules = ruleSet.rules.filter { !$0.requestHeaderActions.isEmpty }
        responseHeaderRules = ruleSet.rules.filter { !$0.responseHeaderActions.isEmpty }
        renameRules = ruleSet.rules.filter { rule in
            rule.cookieActions.contains { if case .rename = $0 { return true } else { return false } }
        }
        requestCookieRules = ruleSet.rules.filter { !$0.requestCookieActions.isEmpty }
        readsSite = ruleSet.rules.contains {
            $0.conditions.contains { if case .site = $0.test { true } else { false } }
        }
        hostIndex = HostIndex(cookieRules)
        unconditional = messageConditions.allSatisfy(\.isEmpty) ? Array(cookieRules.indices) : nil
        unconditionalShapeKey = if let unconditional { program.shapeKey(unconditional) } else { nil }
        readsMessageContext =
            unconditional == nil || !program.general.isEmpty || !program.conditions.isEmpty
            || !responseHeaderRules.isEmpty
    }

    /// The cookie rules whose message conditions hold for one response: work out once, apply to each cookie.
    public struct CookiePlan: Sendable {
        /// Indices into the engine's cookie rules, in file order.
        let rules: [Int]
        /// The message the plan is for.
        public let context: MessageContext
        /// Whether no rule can touch a cookie of this message.
        public var isEmpty: Bool { rules.isEmpty }
        /// The plan's rules as a set (bit `i`: rule `i`) when every one of them reads only a cookie's attributes
        /// (``CookieShapeCache``), else nil.
        let shapeKey: UInt64?
    }

    /// The plan for one message; the context is kept in it (given, not copied: read it back as ``CookiePlan/context``).
    public func cookiePlan(_ context: consuming MessageContext) -> CookiePlan {
        if let unconditional {
            return CookiePlan(rules: unconditional, context: context, shapeKey: unconditionalShapeKey)
        }
        var candidates = hostIndex.candidates(context.host)
        if candidates.contains(where: { !conditionsHold(messageConditions[$0], context) }) {
            candidates.removeAll { !conditionsHold(messageConditions[$0], context) }
        }
        return CookiePlan(rules: candidates, context: context, shapeKey: program.shapeKey(candidates))
    }

    /// Runs the rules over the Set-Cookie values of one response.
    public func apply(to cookies: [SetCookie], context: MessageContext, now: Int64) -> [Transformation] {
        let plan = cookiePlan(context)
        return cookies.map { apply(plan, to: $0, now: now) }
    }

    /// Runs the rules of a plan over one Set-Cookie value.
    public func apply(_ plan: CookiePlan, to cookie: SetCookie, now: Int64) -> Transformation {
        var working = cookie
        let edit = apply(plan, editing: &working, now: now)
        return transformation(received: cookie, edited: working, edit)
    }

    /// The ``Transformation`` of a line whose rules ran as `edit` (on the proxy's path or in ``apply(_:to:now:)``):
    /// `edited` is the line the rules made (ignored when they dropped it). The one place the value is made.
    public func transformation(received: SetCookie, edited: SetCookie, _ edit: Edit) -> Transformation {
        Transformation(
            received: received, result: edit.dropped ? nil : edited, matched: edit.matched, ruleNames: cookieRuleNames,
            locations: cookieRuleLocations, logRequested: edit.logRequested, notes: edit.notes)
    }

    /// The names of the cookie rules, indexed as ``Edit/matchedRules``' bits and indices.
    public var cookieRuleNameTable: [String] { cookieRuleNames }
    /// Which cookie rules (same indices) drop the line, and which edit it (an action other than `drop` and `log`):
    /// a dropped or rewritten line is counted for the rules that did it, not for a `log` rule that also matched.
    public let cookieRuleDrops: [Bool]
    public let cookieRuleEdits: [Bool]

    /// The names of the rules that matched, in file order.
    public func ruleNames(_ edit: Edit) -> [String] { edit.matched.names(cookieRuleNames) }

    /// Runs the rules of a plan over one Set-Cookie value, editing it (for library users and the CLI: the proxy
    /// keeps its rewrite and the received bytes, ``apply(_:to:now:rewrite:)``).
    public func apply(_ plan: CookiePlan, editing cookie: inout SetCookie, now: Int64) -> Edit {
        var rewrite = SetCookieRewrite()
        let edit = cookie.withView { apply(plan, to: $0, now: now, rewrite: &rewrite) }
        if edit.rewritten { cookie = rewrite.withOutput { SetCookie(bytes: Array($0)) } }
        return edit
    }

    /// Phase 1 and 2 for one cookie: the rules that match it, then their actions, in file order, made by
    /// `rewrite` (the one way the engine edits a line). The result is in `rewrite`'s output when
    /// ``Edit/rewritten``.
    package func apply(
        _ plan: CookiePlan, to cookie: SetCookieView, now: Int64, rewrite: inout SetCookieRewrite
    ) -> Edit {
        let matched = match(plan, cookie, now: now)
        var edit = Edit(matched: matched, dropped: false, logRequested: false, notes: [])
        guard !matched.isEmpty else { return edit }
        // Rules that only log or drop (an audit) leave the line as received: no rewrite is started or written.
        var edits = false
        matched.forEach { if program.rules[$0].edits { edits = true } }
        // The program's texts are borrowed by the rewrite for this line only.
        program.bytes.withUnsafeBufferPointer { texts in
            if edits { rewrite.begin(cookie, texts: texts) }
            matched.forEach { index in
                if !edit.dropped { perform(rule: index, cookie, plan, now, &edit, &rewrite) }
            }
            if edits && !edit.dropped { edit.rewritten = rewrite.write(cookie) }
        }
        return edit
    }

    /// The actions of one matched rule. `drop` ends the line's edits (a dropped line is always logged).
    private func perform(
        rule index: Int, _ cookie: SetCookieView, _ plan: CookiePlan, _ now: Int64, _ edit: inout Edit,
        _ rewrite: inout SetCookieRewrite
    ) {
        let range = program.rules[index].actions
        for a in Int(range.lowerBound)..<Int(range.upperBound) {
            switch program.actions[a] {
            case .drop:
                edit.dropped = true
                return
            case .log: edit.logRequested = true
            case .flagOn(let kind, let text): rewrite.flagOn(kind, text: text)
            case .flagOff(let kind): rewrite.remove(kind)
            case .addDot: rewrite.addLeadingDotToDomain(in: cookie)
            case .setValue(let kind, let text, let nameLength, let unlessEqualIgnoringCase):
                rewrite.set(
                    kind, text: text, nameLength: Int(nameLength), unlessEqualIgnoringCase: unlessEqualIgnoringCase,
                    in: cookie)
            case .general(let g):
                let action = program.general[Int(g)]
                let note = rewrite.edit(in: cookie) { cookie in
                    Self.perform(action, on: &cookie, context: plan.context, now: now, suffixes: suffixes)
                }
                if let note { edit.notes.append("\(cookieRuleNames[index]): \(note)") }
            }
        }
    }

    /// Phase 1: the rules that match one cookie, checked against the original.
    func match(_ plan: CookiePlan, _ cookie: SetCookieView, now: Int64) -> RuleMatches {
        // Name, attributes and acceptance are worked out once per cookie, when a condition first needs them.
        var derived: DerivedCookieFacts? = nil
        var matched = RuleMatches()
        for index in plan.rules {
            let checks = program.rules[index].checks
            var holds = true
            for c in Int(checks.lowerBound)..<Int(checks.upperBound) {
                let result: Bool
                let negated: Bool
                switch program.checks[c] {
                case .domain(let patterns, let n):
                    negated = n
                    result = program.domainMatches(cookie, patterns)
                case .general(let g):
                    let condition = program.conditions[Int(g)]
                    negated = condition.negated
                    if derived == nil { derived = DerivedCookieFacts() }
                    result = derived!.holds(condition, cookie, plan.context, now: now, suffixes: suffixes)
                }
                if result == negated {
                    holds = false
                    break
                }
            }
            if holds {
                matched.insert(index)
                if program.rules[index].stops { break }
            }
        }
        return matched
    }

    /// Header edits for a request (rules whose message conditions hold; `status` never holds here).
    public func requestHeaderActions(_ context: MessageContext) -> [HeaderAction] {
        if requestHeaderRules.isEmpty { return [] }
        return requestHeaderRules.filter { messageConditionsHold($0, context) }.flatMap(\.requestHeaderActions)
    }

    /// Whether requests need the rules at all (header edits or renamed cookies to give back).
    public var touchesRequests: Bool {
        !requestHeaderRules.isEmpty || !renameRules.isEmpty || !requestCookieRules.isEmpty
    }

    /// Header edits for a response.
    public func responseHeaderActions(_ context: MessageContext) -> [HeaderAction] {
        if responseHeaderRules.isEmpty { return [] }
        return responseHeaderRules.filter { messageConditionsHold($0, context) }.flatMap(\.responseHeaderActions)
    }

    /// The request's `Cookie` header with renamed cookies given back their original names, so the backend
    /// sees its own names; nil when nothing changes. Only the renamed pairs' name bytes change.
    public func renameBack(cookieHeader: [UInt8], context: MessageContext) -> [UInt8]? {
        if renameRules.isEmpty { return nil }
        var renames: [(CookieAction.Rename, [NamePattern])] = []
        for rule in renameRules where messageConditionsHold(rule, context, ignoringStatus: true) {
            let names =
                rule.conditions.compactMap { c -> [NamePattern]? in
                    if case .cookie(let p) = c.test, !c.negated { return p }
                    return nil
                }.first ?? []
            for case .rename(let r) in rule.cookieActions { renames.append((r, names)) }
        }
        guard !renames.isEmpty else { return nil }
        var out: [UInt8] = []
        var changed = false
        var pairs = cookieHeader.split(separator: 0x3B, omittingEmptySubsequences: false)
        for index in pairs.indices {
            let pair = pairs[index]
            let leading = pair.prefix { $0 == 0x20 || $0 == 0x09 }
            let rest = pair.dropFirst(leading.count)
            let nameBytes = rest.prefix { $0 != 0x3D }
            guard nameBytes.count < rest.count else { continue }  // no '=': a nameless cookie, left alone
            let name = String(decoding: nameBytes, as: UTF8.self)
            var original: String? = nil
            for (rename, patterns) in renames {
                switch rename {
                case .to(let new) where name == new: original = patterns.first?.source
                case .addPrefix(let p) where name.hasPrefix(p):
                    let base = String(name.dropFirst(p.count))
                    if patterns.isEmpty || patterns.contains(where: { $0.matches(base) }) { original = base }
                case .stripPrefix(let p):
                    if patterns.isEmpty || patterns.contains(where: { $0.matches(p + name) }) { original = p + name }
                default: break
                }
                if original != nil { break }
            }
            if let original, original != name {
                pairs[index] = ArraySlice(
                    Array(leading) + Array(original.utf8) + Array(rest.dropFirst(nameBytes.count)))
                changed = true
            }
        }
        guard changed else { return nil }
        for (i, pair) in pairs.enumerated() {
            if i > 0 { out.append(0x3B) }
            out += pair
        }
        return out
    }

    func messageConditionsHold(_ rule: Rule, _ context: MessageContext, ignoringStatus: Bool = false) -> Bool {
        conditionsHold(rule.conditions, context, ignoringStatus: ignoringStatus)
    }

    /// Whether the message-level conditions among `conditions` hold (cookie-level ones are not looked at).
    func conditionsHold(_ conditions: [Condition], _ context: MessageContext, ignoringStatus: Bool = false) -> Bool {
        conditions.allSatisfy { condition in
            let result: Bool
            switch condition.test {
            case .host(let patterns): result = patterns.contains { $0.matches(context.host) }
            case .path(let patterns): result = patterns.contains { $0.matches(context.path) }
            case .method(let methods): result = methods.contains(context.method)
            case .scheme(let schemes): result = schemes.contains(context.scheme)
            case .site(let kinds): result = kinds.contains(context.site ?? .unknown)
            case .upstream(let patterns):
                result = context.exchange.route.map { r in patterns.contains { $0.matches(r.upstreamHost) } } ?? false
            case .status(let patterns):
                if ignoringStatus { return true }
                guard let status = context.status else { return condition.negated }
                result = patterns.contains { $0.matches(status) }
            case .cookie, .state, .cookieDomain: return true
            }
            return result != condition.negated
        }
    }

    /// Applies one action; returns a note when it could not.
    static func perform(
        _ action: CookieAction, on cookie: inout SetCookie, context: MessageContext, now: Int64,
        suffixes: PublicSuffixList
    ) -> String? {
        do {
            switch action {
            case .domain(let edit):
                let written = cookie.lastWrittenValue(of: .domain)
                switch edit {
                case .set(let d): try cookie.set(.domain, to: d)
                case .addDot:
                    if let w = written, let first = w.first, first != 0x2E {
                        var dotted: [UInt8] = [0x2E]
                        dotted.append(contentsOf: w)
                        try cookie.set(.domain, toBytes: dotted)
                    }
                case .stripDot:
                    if let w = written, w.first == 0x2E { try cookie.set(.domain, toBytes: Array(w.dropFirst())) }
                case .remove: cookie.remove(.domain)
                case .ensure(let given):
                    guard (cookie.domain ?? "").isEmpty else { return nil }
                    guard let domain = given ?? suffixes.registrableDomain(of: context.host) else {
                        return
                            "domain ensure: \(context.host) has no registrable domain (an IP address or a public suffix)"
                    }
                    if given == nil && suffixes.isPublicSuffix(domain) {
                        return "domain ensure: \(domain) is a public suffix"
                    }
                    try cookie.set(.domain, to: domain)
                }
            case .path(let p):
                if let p { try cookie.set(.path, to: p) } else { cookie.remove(.path) }
            case .flag(let kind, let on): cookie.setFlag(kind, on)
            case .sameSite(let v):
                if let v {
                    // Already in effect (case aside)? Then leave the bytes alone.
                    let current = cookie.lastWrittenValue(of: .sameSite)
                    if current == nil || !SetCookie.valuesEqualIgnoringCase(current!, v.utf8) {
                        try cookie.set(.sameSite, to: v)
                    }
                } else {
                    cookie.remove(.sameSite)
                }
            case .maxAge(let seconds):
                if let seconds { try cookie.set(.maxAge, to: String(seconds)) } else { cookie.remove(.maxAge) }
            case .expires(let date):
                if let date { try cookie.set(.expires, to: date) } else { cookie.remove(.expires) }
            case .session:
                cookie.remove(.maxAge)
                cookie.remove(.expires)
            case .capLifetime(let limit):
                let a = cookie.attributes
                if let maxAge = a.maxAge, maxAge > limit { try cookie.set(.maxAge, to: String(limit)) }
                if let expires = a.expires, expires > now + limit {
                    try cookie.set(.expires, to: CookieDate.imfFixdate(now + limit))
                }
            case .rename(let r):
                let name = cookie.name
                switch r {
                case .to(let new): try cookie.rename(to: new)
                case .addPrefix(let p): if !name.hasPrefix(p) { try cookie.rename(to: p + name) }
                case .stripPrefix(let p):
                    if name.hasPrefix(p) { try cookie.rename(to: String(name.dropFirst(p.count))) }
                }
            case .value(let v): try cookie.setValue(v)
            case .drop, .log: break
            }
        } catch {
            return error.description
        }
        return nil
    }

    /// The attribute-level diff between two Set-Cookie lines.
    public static func diff(_ before: SetCookie, _ after: SetCookie?) -> [AttributeChange] {
        if let after, after.bytes == before.bytes { return [] }
        guard let after else {
            return [AttributeChange(op: .drop, attribute: "Set-Cookie", from: before.name, to: nil)]
        }
        var changes: [AttributeChange] = []
        if before.nameBytes != after.nameBytes {
            changes.append(AttributeChange(op: .rename, attribute: "name", from: before.name, to: after.name))
        }
        if before.valueBytes != after.valueBytes {
            changes.append(AttributeChange(op: .value, attribute: "value", from: before.value, to: after.value))
        }
        let kinds: [CookieAttributeKind] = [
            .domain, .path, .expires, .maxAge, .secure, .httpOnly, .sameSite, .partitioned,
        ]
        let b = lastWritten(before)
        let a = lastWritten(after)
        for kind in kinds {
            let x = b[kind.index]
            let y = a[kind.index]
            switch (x, y) {
            case (nil, nil): continue
            case (nil, let v?):
                changes.append(
                    AttributeChange(
                        op: .add, attribute: kind.canonicalName, from: nil, to: String(decoding: v, as: UTF8.self)))
            case (let v?, nil):
                changes.append(
                    AttributeChange(
                        op: .remove, attribute: kind.canonicalName, from: String(decoding: v, as: UTF8.self), to: nil))
            case (let v?, let w?) where v != w:
                changes.append(
                    AttributeChange(
                        op: .set, attribute: kind.canonicalName, from: String(decoding: v, as: UTF8.self),
                        to: String(decoding: w, as: UTF8.self)))
            default: continue
            }
        }
        return changes
    }

    /// The last written value of each known attribute ("" for a flag without value).
    static func lastWritten(_ cookie: SetCookie) -> [ArraySlice<UInt8>?] {
        var result = [ArraySlice<UInt8>?](repeating: nil, count: 16)
        cookie.forEachWrittenAttribute { kind, _, value, _ in
            if kind != .unknown { result[kind.index] = value ?? [] }
        }
        return result
    }
}
