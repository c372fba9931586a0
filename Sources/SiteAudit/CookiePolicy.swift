import CookieKit

/// The cookies a site declares (`audit --browser --policy FILE`), in the rules language's style: one `cookie` block
/// per declared cookie, a name or a prefix ending in `*`, and what it may be.
///
/// ```
/// # Google Analytics, only after consent, at most two years.
/// cookie "_ga*" {
///     category  analytics
///     domain    shop.example
///     lifetime  2y
///     consent   accept
/// }
/// ```
///
/// `category` (necessary, functional, analytics, marketing) overrides the Open Cookie Database's; `domain` is the
/// domain the cookie's must be or be within; `lifetime` the longest (`session`, or a number with `s`, `m`, `h`,
/// `d` or `y`); `consent` the states it may appear in (`none`, `reject`, `accept`). Each is optional. A cookie no
/// block declares is `undeclared`; one that breaks its block a violation.
public struct CookiePolicy: Sendable {
    public struct Entry: Sendable {
        public var pattern: String
        public var category: CookieCategory?
        public var domain: String?
        /// Seconds; 0 for `session` (a session cookie only).
        public var lifetime: Int64?
        public var consent: [ConsentState]?
        public var location: PolicyError.Location

        /// Whether it declares a cookie of this name (a pattern ending in `*` is a prefix).
        public func declares(_ name: String) -> Bool {
            pattern.hasSuffix("*") ? name.hasPrefix(pattern.dropLast()) : name == pattern
        }
    }

    public var entries: [Entry]

    /// The entry that declares a cookie: an exact name before any prefix, the longest prefix first.
    public func entry(for name: String) -> Entry? {
        entries.first { !$0.pattern.hasSuffix("*") && $0.pattern == name }
            ?? entries.filter { $0.pattern.hasSuffix("*") && $0.declares(name) }.max {
                $0.pattern.count < $1.pattern.count
            }
    }

    /// Reads a policy; the first error with its file, line and column.
    public init(text: String, file: String) throws(PolicyError) {
        var entries: [Entry] = []
        var open: Entry? = nil
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (n, raw) in lines.enumerated() {
            let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : raw
            let words = Self.words(line)
            func fail(_ column: Int, _ message: String) -> PolicyError {
                PolicyError(
                    location: .init(file: file, line: n + 1, column: column), message: message, sourceLine: line)
            }
            guard let first = words.first else { continue }
            if first.text == "}" {
                guard let entry = open else { throw fail(first.column, "'}' closes no cookie block") }
                entries.append(entry)
                open = nil
                continue
            }
            if first.text == "cookie" {
                guard open == nil else { throw fail(first.column, "a cookie block inside another: close it with '}'") }
                guard words.count == 3, words[2].text == "{", !words[1].text.isEmpty else {
                    throw fail(first.column, "expected: cookie NAME {  (NAME a cookie name, or a prefix ending in *)")
                }
                let pattern = words[1].text
                guard !pattern.dropLast(pattern.hasSuffix("*") ? 1 : 0).contains("*") else {
                    throw fail(words[1].column, "'*' only ends a name (a prefix), as in _ga*")
                }
                if entries.contains(where: { $0.pattern == pattern }) {
                    throw fail(words[1].column, "\(pattern) is declared twice")
                }
                open = Entry(
                    pattern: pattern, category: nil, domain: nil, lifetime: nil, consent: nil,
                    location: .init(file: file, line: n + 1, column: words[1].column))
                continue
            }
            guard open != nil else {
                throw fail(first.column, "expected 'cookie NAME {' (a policy is cookie blocks), not '\(first.text)'")
            }
            let arguments = words.dropFirst()
            guard let value = arguments.first else { throw fail(first.column, "\(first.text) needs a value") }
            switch first.text {
            case "category":
                guard arguments.count == 1, let c = CookieCategory(rawValue: value.text), c != .unknown else {
                    throw fail(value.column, "category is one of necessary, functional, analytics, marketing")
                }
                open!.category = c
            case "domain":
                guard arguments.count == 1 else { throw fail(value.column, "domain takes one domain") }
                let d = value.text.lowercased()
                open!.domain = d.hasPrefix(".") ? String(d.dropFirst()) : d
            case "lifetime":
                guard arguments.count == 1, let seconds = Self.seconds(value.text) else {
                    throw fail(
                        value.column, "lifetime is 'session' or a number with s, m (minutes), h, d or y, as 390d")
                }
                open!.lifetime = seconds
            case "consent":
                var states: [ConsentState] = []
                for a in arguments {
                    guard let s = ConsentState(rawValue: a.text) else {
                        throw fail(a.column, "consent states are none, reject and accept")
                    }
                    states.append(s)
                }
                open!.consent = states
            default:
                throw fail(first.column, "unknown key '\(first.text)' (category, domain, lifetime, consent)")
            }
        }
        if let open {
            throw PolicyError(
                location: open.location, message: "the cookie block of \(open.pattern) is not closed with '}'",
                sourceLine: lines[open.location.line - 1])
        }
        self.entries = entries
    }

    /// Words with their 1-based columns; a `#` outside quotes starts a comment; quotes group.
    static func words(_ line: String) -> [(text: String, column: Int)] {
        var out: [(String, Int)] = []
        var current = ""
        var start = 0
        var quoted = false
        var inWord = false
        for (i, ch) in line.enumerated() {
            if quoted {
                if ch == "\"" { quoted = false } else { current.append(ch) }
                continue
            }
            if ch == "#" { break }
            if ch == " " || ch == "\t" {
                if inWord { out.append((current, start)) }
                (current, inWord) = ("", false)
                continue
            }
            if !inWord { (inWord, start) = (true, i + 1) }
            if ch == "\"" { quoted = true } else { current.append(ch) }
        }
        if inWord { out.append((current, start)) }
        return out
    }

    /// `session` (0) or N with a unit: s, m, h, d, y (365 days).
    static func seconds(_ text: String) -> Int64? {
        if text == "session" { return 0 }
        let units: [(String, Int64)] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("y", 31_536_000)]
        for (unit, factor) in units where text.hasSuffix(unit) {
            guard let n = Int64(text.dropLast(unit.count)), n > 0 else { return nil }
            return n * factor
        }
        return nil
    }

    /// What the policy says of a cookie of the scan: undeclared, or each way it breaks its entry.
    public func findings(for c: SiteCookie) -> [String] {
        guard let e = entry(for: c.name) else { return ["undeclared"] }
        var out: [String] = []
        if let d = e.domain, !domainMatches(c.domain, d) { out.append("policy-domain") }
        if let limit = e.lifetime {
            if limit == 0 ? c.lifetime != nil : (c.lifetime ?? 0) > limit { out.append("policy-lifetime") }
        }
        if let allowed = e.consent, c.states.contains(where: { !allowed.contains($0) }) {
            out.append("policy-consent")
        }
        return out
    }
}

/// An invalid policy file: `file:line:column: error: message`, the line, and a caret under the column.
public struct PolicyError: Error, Sendable, CustomStringConvertible {
    public struct Location: Sendable, Hashable, CustomStringConvertible {
        public var file: String
        public var line: Int
        public var column: Int
        public var description: String { "\(file):\(line):\(column)" }
    }
    public var location: Location
    public var message: String
    public var sourceLine: String
    public var description: String {
        let prefix = sourceLine.prefix(max(1, location.column) - 1).map { $0 == "\t" ? "\t" : " " }.joined()
        return "\(location): error: \(message)\n    \(sourceLine)\n    \(prefix)^"
    }
}
