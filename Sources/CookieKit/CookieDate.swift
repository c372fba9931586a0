/// The cookie-date algorithm of RFC 6265bis §5.1.1, written out by hand (no strptime, no DateFormatter),
/// and the few calendar helpers it needs. Times are whole seconds since 1970-01-01T00:00:00Z.
public enum CookieDate {
    /// Parses a cookie-date (§5.1.1); nil when the algorithm fails. `minimumYear` is the draft's 1601 (step 5);
    /// the lint asks with 0 to tell a date before 1601 from one that is not a date at all.
    public static func parse<C: Collection<UInt8>>(_ bytes: C, minimumYear: Int = 1601) -> Int64? {
        var hour = -1
        var minute = 0
        var second = 0
        var day = -1
        var month = -1
        var year = -1
        var token: [UInt8] = []
        token.reserveCapacity(16)
        var iterator = bytes.makeIterator()
        var done = false
        while !done {
            let next = iterator.next()
            if let byte = next, !isDelimiter(byte) {
                token.append(byte)
                continue
            }
            if next == nil { done = true }
            guard !token.isEmpty else { continue }
            // Step 2: each token is tried as time, day-of-month, month, year, in that order.
            if hour < 0, let (h, m, s) = matchTime(token) {
                (hour, minute, second) = (h, m, s)
            } else if day < 0, let d = matchDigits(token, min: 1, max: 2) {
                day = d
            } else if month < 0, let m = matchMonth(token) {
                month = m
            } else if year < 0, let y = matchDigits(token, min: 2, max: 4) {
                year = y
            }
            token.removeAll(keepingCapacity: true)
        }
        // Steps 3–4.
        if year >= 70 && year <= 99 { year += 1900 } else if year >= 0 && year <= 69 { year += 2000 }
        // Step 5.
        guard hour >= 0, day >= 1, day <= 31, month >= 1, year >= minimumYear, hour <= 23, minute <= 59, second <= 59
        else { return nil }
        // Step 6: the date must exist.
        guard day <= daysInMonth(year: year, month: month) else { return nil }
        return (daysFromCivil(year: year, month: month, day: day) * 86_400) + Int64(hour * 3600 + minute * 60 + second)
    }

    /// Parses a cookie-date given as text.
    public static func parse(_ string: String) -> Int64? { parse(Array(string.utf8)) }

    /// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    @inline(__always)
    static func isDelimiter(_ b: UInt8) -> Bool {
        b == 0x09 || (b >= 0x20 && b <= 0x2F) || (b >= 0x3B && b <= 0x40) || (b >= 0x5B && b <= 0x60)
            || (b >= 0x7B && b <= 0x7E)
    }

    /// `1*n DIGIT [ non-digit *OCTET ]` with between `min` and `max` digits.
    static func matchDigits(_ token: [UInt8], min: Int, max: Int) -> Int? {
        var value = 0
        var count = 0
        for byte in token {
            guard ASCII.isDigit(byte) else { break }
            count += 1
            if count > max { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return count >= min ? value : nil
    }

    /// hms-time = time-field ":" time-field ":" time-field, time-field = 1*2DIGIT, then [ non-digit *OCTET ].
    static func matchTime(_ token: [UInt8]) -> (Int, Int, Int)? {
        var fields = [0, 0, 0]
        var index = 0
        for field in 0..<3 {
            var digits = 0
            while index < token.count, ASCII.isDigit(token[index]) {
                digits += 1
                if digits > 2 { return nil }
                fields[field] = fields[field] * 10 + Int(token[index] - 0x30)
                index += 1
            }
            guard digits > 0 else { return nil }
            if field < 2 {
                guard index < token.count, token[index] == 0x3A else { return nil }
                index += 1
            }
        }
        return (fields[0], fields[1], fields[2])
    }

    private static let months: [[UInt8]] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ].map { Array($0.utf8) }

    /// month = ( "jan" / … / "dec" ) *OCTET, case-insensitive.
    static func matchMonth(_ token: [UInt8]) -> Int? {
        guard token.count >= 3 else { return nil }
        let a = ASCII.lower(token[0])
        let b = ASCII.lower(token[1])
        let c = ASCII.lower(token[2])
        for (index, name) in months.enumerated() where name[0] == a && name[1] == b && name[2] == c {
            return index + 1
        }
        return nil
    }

    static func isLeap(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's days_from_civil).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The civil date for days since 1970-01-01 (inverse of ``daysFromCivil(year:month:day:)``).
    public static func civilFromDays(_ days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (Int(y), Int(m), Int(d))
    }

    /// RFC 3339 UTC, e.g. `2026-11-30T09:01:44Z`.
    public static func rfc3339(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = seconds - days * 86_400
        let (y, m, d) = civilFromDays(days)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(Int(rest / 3600), 2)):\(pad(Int(rest % 3600 / 60), 2)):"
            + "\(pad(Int(rest % 60), 2))Z"
    }

    /// RFC 3339 UTC to the millisecond, e.g. `2026-11-30T09:01:44.250Z`.
    public static func rfc3339(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let text = rfc3339(seconds)
        return text.dropLast() + "." + pad(Int(milliseconds - seconds * 1000), 3) + "Z"
    }

    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// IMF-fixdate (RFC 9110 §5.6.7), the form servers should send in Expires (RFC 6265bis §4.1.1).
    public static func imfFixdate(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = seconds - days * 86_400
        let (y, m, d) = civilFromDays(days)
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        return "\(weekday), \(pad(d, 2)) \(monthNames[m - 1]) \(pad(y, 4)) \(pad(Int(rest / 3600), 2)):"
            + "\(pad(Int(rest % 3600 / 60), 2)):\(pad(Int(rest % 60), 2)) GMT"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC, no fraction), as used by the conformance corpora.
    public static func parseRFC3339(_ string: String) -> Int64? {
        let u = Array(string.utf8)
        guard u.count == 20, u[4] == 0x2D, u[7] == 0x2D, u[10] == 0x54, u[13] == 0x3A, u[16] == 0x3A, u[19] == 0x5A
        else { return nil }
        func num(_ r: Range<Int>) -> Int? {
            var v = 0
            for i in r {
                guard ASCII.isDigit(u[i]) else { return nil }
                v = v * 10 + Int(u[i] - 0x30)
            }
            return v
        }
        guard let y = num(0..<4), let mo = num(5..<7), let d = num(8..<10), let h = num(11..<13),
            let mi = num(14..<16), let s = num(17..<19), (1...12).contains(mo), d >= 1,
            d <= daysInMonth(year: y, month: mo), h < 24, mi < 60, s < 60
        else { return nil }
        return daysFromCivil(year: y, month: mo, day: d) * 86_400 + Int64(h * 3600 + mi * 60 + s)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let s = String(value)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}
