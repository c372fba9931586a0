/// Rules the binary carries (`run --emulate NAME`), appended after the user's rules and reloaded with them.
public enum Presets {
    /// What Safari and every WKWebView app do with third-party cookies (WebKit's full third-party cookie blocking),
    /// for a developer testing in Chrome or with curl: in a cross-site subresource or frame (the site context read
    /// from Fetch Metadata, Origin or Referer), an unpartitioned cookie is neither kept nor sent. Which cookies are
    /// partitioned the client's replayed jar tells (`--lifecycle on`, the default when a log or the inspector is
    /// on); without it every cookie of such a request is taken out.
    package static let safari = """
        rule "Safari: third-party Set-Cookie blocked" {
            site cross-site-subresource
            not where partitioned
            drop
        }

        rule "Safari: third-party Cookie not sent" {
            site cross-site-subresource
            not where partitioned
            request-cookie remove *
        }

        """

    public static let names = ["safari"]

    /// The preset's rules, read as a file named `<emulate NAME>`; nil for an unknown name.
    public static func rules(_ name: String) throws(RulesError) -> [Rule]? {
        switch name {
        case "safari": return try RulesParser.parse(safari, file: "<emulate safari>")
        default: return nil
        }
    }
}
