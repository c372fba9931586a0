import CookieKit
import Foundation
import SiteAudit

extension CookieReport {
    /// What a browser following the draft keeps, in the fields the engines report (nil: nothing; an expired
    /// cookie only deletes, RFC 6265bis §5.7).
    public func storedView(url: RequestURL) -> BrowserCookie? {
        guard rejected == nil, !findings.contains(where: { $0.code == "already-expired" }) else { return nil }
        let host = domain ?? url.host.lowercased()
        // Only whether it outlives the session is compared (an engine's clock is its own).
        let expires =
            attributes.maxAge.map { Date().timeIntervalSince1970 + Double($0) } ?? attributes.expires.map(Double.init)
        return BrowserCookie(
            name: cookie.name, value: cookie.value, domain: hostOnly ? host : "." + host, path: path, expires: expires,
            secure: attributes.secure, httpOnly: attributes.httpOnly,
            sameSite: attributes.sameSite == .default ? nil : attributes.sameSite.rawValue)
    }
}
