/// A cookie in a jar, with the fields of RFC 6265bis §5.7 (storage model). Times are seconds since the epoch.
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
