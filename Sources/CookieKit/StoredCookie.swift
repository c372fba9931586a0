/// A cookie in a jar, with the fields of RFC 6265bis §5.7 (storage model). Times are in the jar's unit
/// (``CookieJar/TimeUnit``: seconds since the epoch unless the jar counts milliseconds).
public struct StoredCookie: Sendable, Hashable {
    public var nameBytes: [UInt8]
    public var valueBytes: [UInt8]
    /// Nil for a session cookie (persistent-flag false); ``CookieAttributes/earliest`` when already expired.
    public var expiry: Int64?
    /// The domain: the request host for a host-only cookie, else the Domain attribute.
    public var domain: String
    public var path: String
    public var creationTime: Int64
    /// Breaks ties between equal creation times: the jar's insertion counter at creation.
    public var creationSequence: UInt64
    public var lastAccessTime: Int64
    public var hostOnly: Bool
    public var secureOnly: Bool
    public var httpOnly: Bool
    public var sameSite: SameSite
    public var partitioned: Bool
    /// The partition a Partitioned cookie is kept in: the top-level site it was set under (CHIPS;
    /// draft-ietf-httpbis-layered-cookies, "cookie partition key"), as `https://site.example`. Nil for an
    /// unpartitioned cookie. A cookie is one of a kind by name, domain, host-only, path and partition.
    public var partitionKey: String? = nil
    /// Chromium's `Priority` attribute (Low, Medium, High; Medium when absent or unknown), which orders its
    /// evictions (``CookieJar/Profile/Eviction/priorityRounds(_:)``). Read only by a profile that has them.
    public var priority: CookiePriority = .medium

    public var name: String { String(lossy: nameBytes) }
    public var value: String { String(lossy: valueBytes) }
    public var isPersistent: Bool { expiry != nil }

    /// RFC 6265bis §5.7: expired if the expiry date is in the past.
    public func isExpired(at now: Int64) -> Bool {
        guard let expiry else { return false }
        return expiry <= now
    }

    /// `name=value`, or just the value for a nameless cookie (RFC 6265bis §5.8.3 step 6).
    public var pairBytes: [UInt8] {
        nameBytes.isEmpty ? valueBytes : nameBytes + [0x3D] + valueBytes
    }
}

/// Chromium's cookie priority (the non-standard `Priority` attribute, `net::CookiePriority`).
public enum CookiePriority: Int, Sendable, Hashable, CaseIterable {
    case low = 0, medium, high

    /// The last `Priority` attribute of a line, case-insensitively; Medium when none or an unknown word, as
    /// Chromium's `StringToCookiePriority` reads it.
    public init(_ line: SetCookie) {
        self = .medium
        for i in line.indices(ofAttributeNamed: "priority") {
            let span = line.layout.spans[i]
            let value = String(lossy: line.bytes[Int(span.valueStart)..<Int(span.valueEnd)]).asciiLowercased
            switch value {
            case "low": self = .low
            case "medium": self = .medium
            case "high": self = .high
            default: self = .medium
            }
        }
    }
}
