/// A cookie's lifetime as a person reads it: `400 days`, `1 year`, `12 hours`, `session`.
public enum Lifetime {
    static let units: [(seconds: Int64, one: String, many: String)] = [
        (31_536_000, "year", "years"), (86_400, "day", "days"), (3_600, "hour", "hours"), (60, "minute", "minutes"),
        (1, "second", "seconds"),
    ]

    /// `seconds` in the largest unit that divides it exactly (a year is 365 days, as the policy's `y` reads it):
    /// `400 days`, `1 year`, `25 hours`; a lifetime that is not a whole number of minutes (one from an `Expires`
    /// date, counted from when the store was read) is `about` its largest unit reached twice, to one decimal:
    /// `about 400 days`, `about 1.5 hours`. Nil: `session`.
    public static func words(_ seconds: Int64?) -> String {
        guard let seconds else { return "session" }
        if seconds <= 0 { return "expired" }
        if let exact = units.first(where: { seconds % $0.seconds == 0 }), exact.seconds >= 60 || seconds < 120 {
            let n = seconds / exact.seconds
            return "\(n) \(n == 1 ? exact.one : exact.many)"
        }
        let unit = units.first { seconds >= 2 * $0.seconds } ?? units[units.count - 1]
        let tenths = (seconds * 10 + unit.seconds / 2) / unit.seconds
        let number = tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
        return "about \(number) \(unit.many)"
    }
}

extension CookiePolicy {
    /// A breach (`policy-lifetime`, `policy-domain`, `policy-consent`) with its numbers, as a person reads it:
    /// `lifetime 400 days, declared at most 1 year (shop.policy:3:1)`. Nil for any other finding, or a cookie the
    /// policy does not declare.
    public static func breach(_ finding: String, of c: SiteCookie) -> String? {
        guard let e = c.declared else { return nil }
        let at = " (\(e.location))"
        switch finding {
        case "policy-lifetime":
            guard let limit = e.lifetime else { return nil }
            let declared = limit == 0 ? "a session cookie" : "at most \(Lifetime.words(limit))"
            return "lifetime \(Lifetime.words(c.lifetime)), declared \(declared)\(at)"
        case "policy-domain":
            guard let d = e.domain else { return nil }
            return "domain \(c.domain), declared \(d)\(at)"
        case "policy-consent":
            guard let allowed = e.consent else { return nil }
            let outside = c.states.filter { !allowed.contains($0) }.map(\.rawValue)
            return
                "set in consent \(outside.joined(separator: ", ")), declared only in \(allowed.map(\.rawValue).joined(separator: ", "))\(at)"
        default: return nil
        }
    }
}
