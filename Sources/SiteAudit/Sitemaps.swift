import CookieKit
import JSONStream

/// `audit --browser --sitemap`: a site's pages from its sitemaps (sitemaps.org protocol 0.9) instead of its links.
/// The sitemaps are robots.txt's `Sitemap:` lines (RFC 9309 §2.2.4 leaves other records to their definers; the
/// sitemaps protocol defines this one, case-insensitive, an absolute URL), else `/sitemap.xml`; a sitemap index's
/// `<loc>`s are sitemaps in turn. Read by the browser through the proxy, so they are fetched as the pages are.
public enum Sitemaps {
    /// At most this many sitemaps are read (an index of indexes of a large site would otherwise be read whole).
    public static let maximumSitemaps = 20

    /// The sitemaps robots.txt names: each `Sitemap:` line's URL (http or https), in order, without repeats.
    public static func named(inRobots text: String) -> [String] {
        var out: [String] = []
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.drop(while: \.isWhitespace)
            guard line.count > 8, line.prefix(8).lowercased() == "sitemap:" else { continue }
            let url = line.dropFirst(8).trimmingBlanks
            guard let u = RequestURL(url), u.scheme == "http" || u.scheme == "https", !out.contains(url) else {
                continue
            }
            out.append(url)
        }
        return out
    }

    /// What the browser's script (``readScript``) said of a sitemap: an index (its `<loc>`s are sitemaps) or a
    /// list of pages; nil when it is not a sitemap (no `urlset` or `sitemapindex` root).
    public static func read(_ json: String) -> (index: Bool, locations: [String])? {
        var reader = JSONReader(bytes: Array(json.utf8))
        guard let value = try? reader.readValue(""), let root = value["root"]?.string,
            root == "urlset" || root == "sitemapindex"
        else { return nil }
        return (root == "sitemapindex", value["locs"]?.array?.compactMap(\.string) ?? [])
    }

    /// Run in the sitemap's document: the document's own text fetched again (a synchronous request to its own
    /// URL: same-origin, through the proxy) and parsed as XML, whatever the browser made of it to show it (Chromium's
    /// XML viewer makes an HTML page of it, WebKit's is not scriptable); its sitemap root's name (`sitemapindex` or
    /// `urlset`) and every `<loc>`'s text, as JSON.
    public static let readScript = """
        (() => { const x = new XMLHttpRequest(); x.open('GET', location.href, false); x.send();
          const d = new DOMParser().parseFromString(x.responseText, 'application/xml');
          return JSON.stringify({root: ['sitemapindex', 'urlset'].find(n => d.getElementsByTagNameNS('*', n).length) || '',
            locs: [...d.getElementsByTagNameNS('*', 'loc')].map(e => e.textContent.trim()).filter(t => t)}); })()
        """

    /// The text of robots.txt as the browser shows it.
    public static let textScript = "document.body ? document.body.innerText : document.documentElement.textContent"
}
