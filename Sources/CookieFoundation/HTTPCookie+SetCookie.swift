import CookieKit
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A bridge between ``SetCookie`` and Foundation's `HTTPCookie` that keeps RFC 6265bis meaning inside
/// Foundation's Netscape-style model. Foundation's own parser is not used: on Linux it ignores Max-Age and
/// SameSite and reads two-digit years as year 26; the helper iOS developers copy around splits on `"; "`
/// only, breaks values containing `=`, forces Secure on and takes unknown keys for the name.
extension HTTPCookie {
    /// The `HTTPCookie` a browser's cookie would be, for a Set-Cookie value received from `url`, or nil
    /// when a browser would not store it (see ``CookieJar/evaluate(_:from:via:context:now:suffixes:)``).
    ///
    /// - A cookie with a Domain attribute becomes a domain cookie whose `domain` starts with a dot, so that
    ///   Foundation sends it to subdomains; one without stays host-only on the request host (no dot).
    /// - Max-Age (which wins over Expires) becomes an expiry date; both are capped at 400 days.
    /// - SameSite is kept where the platform has it (`HTTPCookiePropertyKey.sameSitePolicy`).
    public static func make(
        from setCookie: SetCookie, url: RequestURL, now: Date = Date(), suffixes: PublicSuffixList = .system
    ) -> HTTPCookie? {
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        guard case .success(let stored) = CookieJar.evaluate(setCookie, from: url, now: seconds, suffixes: suffixes)
        else { return nil }
        return make(from: stored)
    }

    /// The `HTTPCookie` for a cookie already in a ``CookieJar``.
    public static func make(from stored: StoredCookie) -> HTTPCookie? {
        var properties: [HTTPCookiePropertyKey: Any] = [
            .name: stored.name,
            .value: stored.value,
            .domain: stored.hostOnly ? stored.domain : "." + stored.domain,
            .path: stored.path,
            .version: "0",
        ]
        if let expiry = stored.expiry {
            let clamped = max(expiry, -62_135_596_800)  // 0001-01-01: "already expired" in Foundation's terms
            properties[.expires] = Date(timeIntervalSince1970: TimeInterval(clamped))
        } else {
            properties[.discard] = "TRUE"
        }
        if stored.secureOnly { properties[.secure] = "TRUE" }
        if stored.httpOnly { properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE" }
        #if canImport(Darwin)
            if #available(macOS 10.15, iOS 13.0, tvOS 13.0, watchOS 6.0, *) {
                switch stored.sameSite {
                case .strict: properties[.sameSitePolicy] = HTTPCookieStringPolicy.sameSiteStrict
                case .lax: properties[.sameSitePolicy] = HTTPCookieStringPolicy.sameSiteLax
                case .none, .default: break
                }
            }
        #endif
        return HTTPCookie(properties: properties)
    }
}

extension SetCookie {
    /// A Set-Cookie value for an `HTTPCookie`: `Domain` only for domain cookies (a Foundation domain with a
    /// leading dot), the dot dropped as RFC 6265bis §4.1.2.3 asks; `Expires` as an IMF-fixdate.
    public init(_ cookie: HTTPCookie) {
        var text = "\(cookie.name)=\(cookie.value)"
        if cookie.domain.hasPrefix(".") { text += "; Domain=\(cookie.domain.dropFirst())" }
        text += "; Path=\(cookie.path.isEmpty ? "/" : cookie.path)"
        if let expires = cookie.expiresDate {
            text += "; Expires=\(CookieDate.imfFixdate(Int64(expires.timeIntervalSince1970.rounded(.down))))"
        }
        if cookie.isSecure { text += "; Secure" }
        if cookie.isHTTPOnly { text += "; HttpOnly" }
        #if canImport(Darwin)
            if #available(macOS 10.15, iOS 13.0, tvOS 13.0, watchOS 6.0, *), let policy = cookie.sameSitePolicy {
                text += policy == .sameSiteStrict ? "; SameSite=Strict" : "; SameSite=Lax"
            }
        #endif
        self.init(text)
    }
}
