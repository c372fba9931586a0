// Host and path matching for cookies (RFC 6265bis §5.1.3, §5.1.4). Host names otherwise are HTTPGrammar's
// (`HostName`: kinds, loopback) and `IPHost` (IP literals as URL host parsing reads them).

/// Whether the jar treats `host` as an IP address where §5.1.3 ("not an IP address") and the Public Suffix List
/// lookup ask: four dot-separated decimal octets (leading zeros allowed) or any colon. Lenient on purpose: a request
/// host reaching the jar is already URL-canonical, and a Domain value that looks like an address must not be
/// domain-matched or looked up as a name.
public func looksLikeIPAddress(_ host: String) -> Bool {
    let u = host.utf8
    if u.contains(0x3A) { return true }
    // Four dot-separated parts of one to three ASCII digits, each at most 255: read on the bytes (as
    // Characters, each digit test is a Unicode property lookup; this runs for every cookie the lint looks at).
    var parts = 1
    var digits = 0
    var value = 0
    for byte in u {
        if byte == 0x2E {
            guard digits > 0 && value <= 255 else { return false }
            parts += 1
            digits = 0
            value = 0
        } else if byte &- 0x30 < 10 {
            digits += 1
            guard digits <= 3 else { return false }
            value = value * 10 + Int(byte &- 0x30)
        } else {
            return false
        }
    }
    return parts == 4 && digits > 0 && value <= 255
}

/// RFC 6265bis §5.1.3 domain-match: `string` domain-matches `domain`.
public func domainMatches(_ string: String, _ domain: String) -> Bool {
    if string == domain { return true }
    guard string.utf8.count > domain.utf8.count, string.hasSuffix(domain), !looksLikeIPAddress(string) else {
        return false
    }
    let u = string.utf8
    return u[u.index(u.endIndex, offsetBy: -(domain.utf8.count + 1))] == UInt8(ascii: ".")
}

/// RFC 6265bis §5.1.4 path-match: `requestPath` path-matches `cookiePath`.
public func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
    if requestPath == cookiePath { return true }
    guard requestPath.hasPrefix(cookiePath) else { return false }
    if cookiePath.hasSuffix("/") { return true }
    let u = requestPath.utf8
    return u[u.index(u.startIndex, offsetBy: cookiePath.utf8.count)] == UInt8(ascii: "/")
}
