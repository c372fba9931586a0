import CookieKit

extension CookieReport {
    /// What a browser following the draft keeps, in the fields the engines report (nil: nothing; an expired
    /// cookie only deletes, RFC 6265bis §5.7).
    public func storedView(url: RequestURL) -> BrowserCookie? {
        guard rejected == nil, !findings.contains(where: { $0.code == "already-expired" }) else { return nil }
        return BrowserCookie(
            name: cookie.name, value: cookie.value, domain: domain ?? url.host.lowercased(), hostOnly: hostOnly,
            path: path, secure: attributes.secure, httpOnly: attributes.httpOnly,
            sameSite: attributes.sameSite.rawValue, persistent: attributes.maxAge != nil || attributes.expires != nil)
    }
}
