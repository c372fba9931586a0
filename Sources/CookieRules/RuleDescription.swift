import CookieKit

/// Plain-words descriptions of rules, for `check` and the MCP server's `check_rules`.
public enum RuleDescription {
    /// The rule's conditions and actions in plain words, one line each (`when …`, `and …`, `then …`).
    public static func describe(_ rule: Rule) -> [String] {
        var lines: [String] = []
        for (i, c) in rule.conditions.enumerated() {
            lines.append((i == 0 ? "when  " : "and   ") + condition(c))
        }
        if rule.conditions.isEmpty {
            lines.append(
                rule.cookieActions.isEmpty && rule.responseHeaderActions.isEmpty && !rule.stops
                    ? "when  any request" : "when  any response")
        }
        var actions = rule.cookieActions.map(action)
        actions += rule.requestHeaderActions.map { "in requests, " + header($0) }
        actions += rule.responseHeaderActions.map { "in responses, " + header($0) }
        actions += rule.requestCookieActions.map { "in requests' Cookie header, " + requestCookie($0) }
        if rule.stops { actions.append("stop: later rules skip these cookies") }
        for (i, a) in actions.enumerated() { lines.append((i == 0 ? "then  " : "      ") + a) }
        return lines
    }

    static func condition(_ c: Condition) -> String {
        let text: String
        switch c.test {
        case .host(let hs): text = "the host is " + hosts(hs, any: "any host")
        case .upstream(let hs): text = "the route's upstream is " + hosts(hs, any: "any upstream")
        case .path(let ps):
            text =
                "the path "
                + ps.map {
                    switch $0 {
                    case .prefix(let p): return "starts with \(p)"
                    case .glob(let g): return "matches \(g.source)"
                    }
                }.joined(separator: " or ")
        case .method(let ms): text = "the method is " + ms.sorted().joined(separator: " or ")
        case .scheme(let ss): text = "the request is " + ss.sorted().joined(separator: " or ")
        case .status(let ss):
            text =
                "the status is "
                + ss.map {
                    switch $0 {
                    case .exact(let s): return String(s)
                    case .hundreds(let h): return "\(h)xx"
                    }
                }.joined(separator: " or ")
        case .cookie(let ns): text = "the cookie is named " + names(ns)
        case .site(let ks):
            text =
                "the request is "
                + RequestSite.Kind.allCases.filter(ks.contains).map(\.rawValue).joined(separator: " or ")
        case .state(let ps): text = "the cookie is " + ps.map(\.rawValue).joined(separator: " or ")
        case .cookieDomain(let hs): text = "the cookie's Domain is " + hosts(hs, any: "any domain")
        }
        return c.negated ? "NOT (\(text))" : text
    }

    static func names(_ ns: [NamePattern]) -> String {
        ns.map {
            switch $0 {
            case .exact(let name): return name
            case .glob(let glob): return "like \(glob.source)"
            case .regex(_, let source): return "matching \(source)"
            }
        }.joined(separator: " or ")
    }

    static func requestCookie(_ a: RequestCookieAction) -> String {
        switch a {
        case .remove(let ns): return "remove the cookies named " + names(ns)
        case .set(let name, let value): return "set \(name) to \(value.debugDescription) (added when not sent)"
        case .rename(let from, let to): return "rename \(from) to \(to)"
        }
    }

    /// `a.com or a subdomain of b.com`, for `host` and `cookie-domain` conditions.
    static func hosts(_ patterns: [HostPattern], any: String) -> String {
        var patterns = patterns
        var words: [String] = []
        // `@local` as written: one set, not its four members.
        if let range = patterns.firstRange(of: HostPattern.local) {
            patterns.removeSubrange(range)
            words.append("a local development host (localhost, *.localhost, 127.0.0.1, ::1)")
        }
        words += patterns.map {
            switch $0 {
            case .exact(let h): return h
            case .subdomains(let s, _): return "a subdomain of \(s)"
            case .any: return any
            }
        }
        return words.joined(separator: " or ")
    }

    static func action(_ a: CookieAction) -> String {
        switch a {
        case .domain(.set(let d)): return "set Domain to \(d)"
        case .domain(.addDot): return "add a leading dot to Domain (for Netscape-style clients)"
        case .domain(.stripDot): return "strip the leading dot from Domain"
        case .domain(.remove): return "remove Domain (host-only cookie)"
        case .domain(.ensure(let d)):
            return "give host-only cookies a Domain: \(d ?? "the request host's registrable domain")"
        case .path(let p): return p.map { "set Path to \($0)" } ?? "remove Path"
        case .flag(let k, let on): return "turn \(k.canonicalName) \(on ? "on" : "off")"
        case .sameSite(let v): return v.map { "set SameSite to \($0)" } ?? "remove SameSite"
        case .maxAge(let s): return s.map { "set Max-Age to \($0) seconds" } ?? "remove Max-Age"
        case .expires(let d): return d.map { "set Expires to \($0)" } ?? "remove Expires"
        case .session: return "make it a session cookie (remove Max-Age and Expires)"
        case .capLifetime(let s): return "cap its lifetime at \(s) seconds"
        case .rename(.to(let n)): return "rename it to \(n) (and back in requests)"
        case .rename(.addPrefix(let p)): return "add the prefix \(p) to its name (and strip it in requests)"
        case .rename(.stripPrefix(let p)): return "strip the prefix \(p) from its name (and add it back in requests)"
        case .value(let v): return "replace its value with \(v.debugDescription)"
        case .drop: return "drop the Set-Cookie"
        case .log: return "log it"
        }
    }

    static func header(_ h: HeaderAction) -> String {
        switch h {
        case .set(let n, let v): return "set header \(n): \(v)"
        case .add(let n, let v): return "add header \(n): \(v)"
        case .remove(let n): return "remove header \(n)"
        }
    }
}
