/// The browsers' own traffic: the services a browser talks to for itself (sign-in, updates, safe browsing, telemetry,
/// remote settings), which the audit turns off with each engine's flags and preferences. What still comes through the
/// audit's proxy is not the site's: it is marked in `access.jsonl` and kept out of the pages, cookies and findings,
/// unless the audited site is itself one of those services (its registrable domain is the service's).
public enum BrowserTraffic {
    /// Hosts (a leading `*.` for every subdomain) of the services Chromium, Firefox and WebKitGTK call on their own.
    public static let hosts: [String] = [
        // Chromium: Google's sign-in, component updater, safe browsing, optimization guide, autofill, metrics.
        "accounts.google.com", "*.googleapis.com", "*.gvt1.com", "*.gvt2.com", "clients1.google.com",
        "clients2.google.com", "clients3.google.com", "clients4.google.com", "clients6.google.com",
        "clients2.googleusercontent.com", "android.clients.google.com", "update.googleapis.com",
        // Firefox: telemetry, remote settings, add-ons, push, captive-portal and connectivity checks.
        "*.mozilla.org", "*.mozilla.net", "*.mozilla.com", "*.services.mozilla.com", "detectportal.firefox.com",
        "*.firefox.com", "*.mozaws.net",
        // WebKitGTK: none known beyond its network process's own (no phone-home service).
    ]

    /// Whether `host` is one of ``hosts`` and not under `site` (the audited start page's registrable domain).
    public static func isBrowsersOwn(_ host: String, site: String) -> Bool {
        let host = host.lowercased()
        if !site.isEmpty && (host == site || host.hasSuffix("." + site)) { return false }
        return hosts.contains { pattern in
            pattern.hasPrefix("*.")
                ? host.hasSuffix(pattern.dropFirst(1)) || host == pattern.dropFirst(2) : host == pattern
        }
    }
}
