import HTTPGrammar

/// The SameSite enforcement of a cookie (RFC 6265bis §5.6.7): anything but Strict, Lax or None is Default.
public enum SameSite: String, Sendable, Hashable, CaseIterable {
    case strict = "Strict"
    case lax = "Lax"
    case none = "None"
    case `default` = "Default"
}

/// What a user agent takes from a Set-Cookie line's attributes (RFC 6265bis §5.6.1–§5.6.7 and CHIPS),
/// with last-one-wins for repeated attributes (§5.7 steps 6–17). Times are seconds since the epoch.
public struct CookieAttributes: Sendable, Hashable {
    /// The last Expires that parses as a cookie-date (§5.6.1), before the 400-day cap; nil if none does.
    public var expires: Int64?
    /// The last valid Max-Age delta-seconds (§5.6.2), before the cap; may be zero or negative.
    public var maxAge: Int64?
    /// The last Domain (§5.6.3): leading dot dropped, lowercased. Nil when there is none; may be empty.
    public var domain: String?
    /// The last Domain exactly as written (for lint: a leading dot, a lone `.`).
    public var domainAsWritten: String?
    /// Whether the line has a Path attribute at all (§5.7 step 21.3 for `__Host-`).
    public var hasPath: Bool
    /// The last Path if it starts with `/` (§5.6.4); nil means the default-path of the request URL.
    public var path: String?
    /// §5.6.5.
    public var secure: Bool
    /// §5.6.6.
    public var httpOnly: Bool
    /// §5.6.7 / §5.7 step 17.
    public var sameSite: SameSite
    /// CHIPS `Partitioned`.
    public var partitioned: Bool

    /// The cookie-age-limit of RFC 6265bis §5.5: 400 days.
    public static let maximumLifetime: Int64 = 400 * 86_400
    /// The earliest representable time; a cookie expiring then is already expired (§5.6.2 step 7).
    public static let earliest = Int64.min

    /// The expiry-time at `now` (§5.6.1, §5.6.2, §5.7 step 6): Max-Age wins over Expires, both capped
    /// at 400 days. Nil for a session cookie.
    /// `now` and the result in units of `1 / perSecond` s (a jar that counts milliseconds passes 1000).
    public func expiry(now: Int64, perSecond: Int64 = 1) -> Int64? {
        if let maxAge {
            if maxAge <= 0 { return Self.earliest }
            return now + min(maxAge, Self.maximumLifetime) * perSecond
        }
        if let expires {
            // A date past what the unit can hold is as far as it can (the cap applies anyway).
            let (scaled, overflow) = expires.multipliedReportingOverflow(by: perSecond)
            return min(overflow ? (expires < 0 ? Self.earliest : .max) : scaled, now + Self.maximumLifetime * perSecond)
        }
        return nil
    }

    /// Whether the lifetime asked for is longer than the 400-day cap (§5.5).
    public func isLifetimeCapped(now: Int64) -> Bool {
        if let maxAge { return maxAge > Self.maximumLifetime }
        if let expires { return expires > now + Self.maximumLifetime }
        return false
    }
}

extension SetCookie {
    /// The user-agent view of the attributes (RFC 6265bis §5.6), last one wins.
    public var attributes: CookieAttributes {
        var result = CookieAttributes(
            expires: nil, maxAge: nil, domain: nil, domainAsWritten: nil, hasPath: false, path: nil, secure: false,
            httpOnly: false, sameSite: .default, partitioned: false)
        bytes.withUnsafeBufferPointer { b in
            for span in layout.spans {
                let vs = Int(span.valueStart)
                let ve = Int(span.valueEnd)
                // §5.6 attributes step 6: over-long values are ignored.
                if ve - vs > Int(SetCookie.maximumAttributeValueLength) { continue }
                switch span.kind {
                case .expires:
                    if let date = CookieDate.parse(UnsafeBufferPointer(rebasing: b[vs..<ve])) { result.expires = date }
                case .maxAge:
                    if let delta = Self.parseMaxAge(b, vs, ve) { result.maxAge = delta }
                case .domain:
                    result.domainAsWritten = String(lossy: b[vs..<ve])
                    result.domain = Self.cookieDomain(b, vs, ve)
                case .path:
                    result.hasPath = true
                    result.path = (ve > vs && b[vs] == 0x2F) ? String(lossy: b[vs..<ve]) : nil
                case .secure: result.secure = true
                case .httpOnly: result.httpOnly = true
                case .partitioned: result.partitioned = true
                case .sameSite:
                    if ASCII.equalsLowercase(b, vs, ve, "strict") {
                        result.sameSite = .strict
                    } else if ASCII.equalsLowercase(b, vs, ve, "lax") {
                        result.sameSite = .lax
                    } else if ASCII.equalsLowercase(b, vs, ve, "none") {
                        result.sameSite = .none
                    } else {
                        result.sameSite = .default
                    }
                default: break
                }
            }
        }
        return result
    }

    /// The Domain attribute in effect (§5.6.3: the last one, leading dot dropped, lowercased), without
    /// computing the other attributes. Nil when there is none; may be empty.
    public var domain: String? {
        guard let range = domainRange else { return nil }  // (the leading dot is already left out)
        return bytes.withUnsafeBufferPointer { Self.asciiLowercased($0, range.lowerBound, range.upperBound) }
    }

    /// Where the value of the Domain attribute in effect lies in ``bytes`` (§5.6.3), leading dot dropped but not
    /// lowercased (compare ASCII case-insensitively); nil when there is none. No allocation.
    public var domainRange: Range<Int>? { withView { $0.domainRange } }

    /// §5.6.3 steps 2–4 on the value bytes: drop one leading `.`, lowercase.
    static func cookieDomain(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> String {
        asciiLowercased(b, start < end && b[start] == 0x2E ? start + 1 : start, end)
    }

    /// `b[from..<end]` as text, ASCII-lowercased while copied (invalid UTF-8 is repaired by the initialiser, as
    /// String(lossy:) does).
    static func asciiLowercased(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ end: Int) -> String {
        ByteClass.lowercasedString(b[from..<end])
    }

    /// §5.6.2 steps 1–4: `-`? DIGIT+; nil when the cookie-av is ignored. Saturates instead of overflowing.
    static func parseMaxAge(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Int64? {
        var i = start
        var negative = false
        if i < end && b[i] == 0x2D {
            negative = true
            i += 1
        }
        guard i < end else { return nil }
        var value: Int64 = 0
        while i < end {
            guard ASCII.isDigit(b[i]) else { return nil }
            if value < Int64.max / 100 { value = value * 10 + Int64(b[i] - 0x30) }
            i += 1
        }
        return negative ? -value : value
    }

    /// Whether an attribute of this kind is written at all (in effect or not).
    public func contains(_ kind: CookieAttributeKind) -> Bool {
        layout.spans.contains { $0.kind == kind }
    }

    /// Whether an attribute with this name (case-insensitive) is written.
    public func contains(attributeNamed name: String) -> Bool {
        indices(ofAttributeNamed: name).isEmpty == false
    }

    /// Indices into the attribute list of attributes spelled `name`, case-insensitively.
    func indices(ofAttributeNamed name: String) -> [Int] {
        let wanted = Array(name.asciiLowercased.utf8)
        return bytes.withUnsafeBufferPointer { b in
            layout.spans.indices.filter { index in
                let span = layout.spans[index]
                let length = Int(span.nameEnd - span.nameStart)
                guard length == wanted.count else { return false }
                for k in 0..<length where ASCII.lower(b[Int(span.nameStart) + k]) != wanted[k] { return false }
                return true
            }
        }
    }
}

extension SetCookie {
    /// Visits the attributes as written without building strings: kind, name bytes, value bytes (nil without
    /// `=`), and whether a user agent ignores it (value over 1024 bytes). For lint and diffs on hot paths.
    public func forEachWrittenAttribute(
        _ body: (CookieAttributeKind, ArraySlice<UInt8>, ArraySlice<UInt8>?, Bool) -> Void
    ) {
        for span in layout.spans {
            let name = bytes[Int(span.nameStart)..<Int(span.nameEnd)]
            let value: ArraySlice<UInt8>? = span.hasEquals ? bytes[Int(span.valueStart)..<Int(span.valueEnd)] : nil
            body(span.kind, name, value, span.valueEnd - span.valueStart > SetCookie.maximumAttributeValueLength)
        }
    }
}

extension ASCII {
    /// Case-insensitive equality of two byte runs.
    static func equalIgnoringCase(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { lower($0) == lower($1) }
    }
}

extension SetCookie {
    /// The value bytes of the last written attribute of `kind` that a user agent does not ignore, or nil
    /// (an empty slice for a flag). Cheap: no dates are parsed and no strings are built.
    /// Whether two attribute values are the same ignoring ASCII case, as the rules compare a SameSite value already
    /// in effect (`| 0x20` on each byte). One test for the in-place and the planned edits, which must agree.
    @inlinable
    package static func valuesEqualIgnoringCase<A: Sequence<UInt8>, B: Sequence<UInt8>>(_ a: A, _ b: B) -> Bool {
        a.elementsEqual(b) { ($0 | 0x20) == ($1 | 0x20) }
    }

    public func lastWrittenValue(of kind: CookieAttributeKind) -> ArraySlice<UInt8>? {
        for span in layout.spans.reversed() where span.kind == kind {
            if span.valueEnd - span.valueStart > SetCookie.maximumAttributeValueLength { continue }
            return bytes[Int(span.valueStart)..<Int(span.valueEnd)]
        }
        return nil
    }
}
