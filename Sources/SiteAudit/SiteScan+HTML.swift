import CookieReports

extension SiteScan {
    /// `report.html`: the report as one self-contained page (no script, no request: the styles are inline), its
    /// tables wrapping long values so that it reads without horizontal scrolling from 1024 to 1920 px wide.
    /// The page visits' screenshots (``PageVisit/screenshot``) are shown by file name, beside the page.
    public var html: String {
        var h = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Cookie audit of \(Self.escape(start))</title>
            <style>
            body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 1.5rem 2rem; max-width: 1800px; color: #1d1d1f; }
            h1 { font-size: 1.5rem; margin: 0 0 .25rem; overflow-wrap: anywhere; }
            h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; }
            .meta { color: #555; margin: 0 0 1rem; }
            table { border-collapse: collapse; width: 100%; table-layout: auto; }
            th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid #ddd; overflow-wrap: break-word; }
            .u { overflow-wrap: anywhere; } .n { white-space: nowrap; }
            table.cookies { table-layout: fixed; } table.cookies td { overflow-wrap: anywhere; }
            th { background: #f4f4f6; font-weight: 600; }
            .tag { display: inline-block; padding: 0 .4rem; border-radius: .6rem; font-size: .85em; margin: 0 .2rem .2rem 0; background: #eee; }
            .bad { background: #fde2e1; color: #8a1c13; } .good { background: #e3f5e6; color: #185c25; } .warn { background: #fff2cc; color: #6b4e00; }
            .third { background: #e8e4fb; } code { font-size: .9em; }
            .shots { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: .75rem; }
            .shots figure { margin: 0; } .shots img { width: 100%; border: 1px solid #ccc; }
            .shots figcaption { font-size: .8em; color: #555; overflow-wrap: anywhere; }
            </style></head><body>
            <h1>Cookie audit of \(Self.escape(start))</h1>
            <p class="meta">\(Self.escape(engine)) · \(pages.count) page visits · seed \(seed) · third-party cookies: \
            \(Self.escape(thirdParty)) · \(cookies.count) cookies · \(refused.count) refused</p>

            """
        for note in notes { h += "<p class=\"meta\">\(Self.tag("note", "warn")) \(Self.escape(note))</p>\n" }
        h += "<h2>Consent states</h2>\n<table><tr><th>state</th><th>applied</th><th>how</th><th>cookies</th></tr>\n"
        for s in states {
            let count = cookies.filter { $0.states.contains(s.state) }.count
            h +=
                "<tr><td>\(s.state.rawValue)</td><td>\(Self.tag(s.applied ? "applied" : "not applied", s.applied ? "good" : "bad"))"
            h += "</td><td>\(Self.escape(s.detail))</td><td>\(count)</td></tr>\n"
        }
        h += "</table>\n"
        if let baseline { h += "<h2>Since the baseline</h2>\n" + baseline.html() }
        // Fixed columns: a long URL or value wraps in its own column instead of widening the table.
        h += "<h2>Cookies</h2>\n<table class=\"cookies\"><colgroup>"
        for width in [14, 7, 16, 15, 9, 7, 11, 10, 11] { h += "<col style=\"width:\(width)%\">" }
        h += "</colgroup><tr><th>cookie</th><th>party</th><th>set by</th><th>first seen</th>"
        h += "<th>states</th><th>lifetime</th><th>attributes</th><th>category</th><th>findings</th></tr>\n"
        let sorted = cookies.sorted { ($0.party, $0.domain, $0.name) < ($1.party, $1.domain, $1.name) }
        for c in sorted {
            h += "<tr><td class=\"u\"><code>\(Self.escape(c.name))</code><br>"
            h += Self.escape((c.hostOnly ? "" : ".") + c.domain + c.path)
            if let key = c.partitionKey { h += "<br>" + Self.tag("partitioned: " + key, "") }
            h += "</td><td>\(Self.tag(c.party, c.party == "third" ? "third" : ""))</td>"
            h += "<td class=\"u\">\(Self.tag(c.setBy, ""))<br>\(Self.escape(c.setOn))</td>"
            h += "<td class=\"u\">\(Self.escape(c.firstPage))<br>[\(c.firstState.rawValue)]</td>"
            h += "<td>\(c.states.map(\.rawValue).joined(separator: ", "))</td>"
            h += "<td class=\"n\">\(c.lifetime.map { Self.duration($0) } ?? "session")</td><td>"
            var attributes = ["SameSite=\(c.sameSite)"]
            if c.secure { attributes.append("Secure") }
            if c.httpOnly { attributes.append("HttpOnly") }
            h += attributes.map { Self.tag($0, "") }.joined()
            h += "</td><td>\(c.category.rawValue)<br><small>"
            if c.categorySource == "policy", let d = c.declared {
                h += "policy: \(Self.escape(d.pattern)) (\(Self.escape(d.location.description)))"
            } else if let row = c.row {
                h +=
                    "Open Cookie Database: \(Self.escape(row.platform))\(row.wildcard ? ", prefix " + Self.escape(row.name) : "")"
            } else {
                h += "no source"
            }
            h += "</small></td><td>"
            h += c.findings.map {
                Self.tag(
                    $0, $0 == "set-before-consent" || $0.hasPrefix("policy-") || $0 == "undeclared" ? "bad" : "warn")
            }
            .joined()
            if let engines = c.engines { h += "<br><small>\(Self.escape(engines))</small>" }
            h += "</td></tr>\n"
        }
        h += "</table>\n"
        if let rules {
            h += "<h2>With the rules (\(Self.escape(rules.path))), the same pages again</h2>\n"
            h += "<table><tr><th>cookie</th><th>before</th><th>after</th></tr>\n"
            for row in rules.rows {
                h += "<tr><td class=\"u\"><code>\(Self.escape(row.name))</code></td>"
                h += "<td class=\"u\">\(Self.escape(row.before.summary))</td><td class=\"u\">"
                h += row.changed ? Self.tag("changed", "warn") + " " + Self.escape(row.after.summary) : "unchanged"
                h += "</td></tr>\n"
            }
            h += "</table>\n"
        }
        if !refused.isEmpty {
            h += "<h2>Refused by \(Self.escape(engine))</h2>\n<table><tr><th>cookie</th><th>response</th>"
            h += "<th>state</th><th>reasons</th><th>times</th></tr>\n"
            for r in refused {
                h +=
                    "<tr><td class=\"u\"><code>\(Self.escape(r.name))</code></td><td class=\"u\">\(Self.escape(r.url))</td>"
                h += "<td>\(r.state.rawValue)</td><td>\(r.reasons.map { Self.tag($0, "bad") }.joined())</td>"
                h += "<td>\(r.times)</td></tr>\n"
            }
            h += "</table>\n"
        }
        h += "<h2>Pages</h2>\n<table><tr><th>page</th><th>state</th><th>status</th><th>problem</th></tr>\n"
        for p in pages {
            h += "<tr><td class=\"u\">\(Self.escape(p.url))</td><td>\(p.state.rawValue)</td>"
            h += "<td>\(p.status.map(String.init) ?? "none")</td><td>\(Self.escape(p.problem ?? ""))</td></tr>\n"
        }
        h += "</table>\n"
        let shots = pages.compactMap { page in page.screenshot.map { (page, $0) } }
        if !shots.isEmpty {
            h += "<h2>Screenshots</h2>\n<div class=\"shots\">\n"
            for (page, file) in shots {
                h += "<figure><img src=\"\(Self.escape(file))\" alt=\"\(Self.escape(page.url))\">"
                h += "<figcaption>[\(page.state.rawValue)] \(Self.escape(page.url))</figcaption></figure>\n"
            }
            h += "</div>\n"
        }
        return h + "</body></html>\n"
    }

    static func tag(_ text: String, _ kind: String) -> String {
        "<span class=\"tag \(kind)\">\(escape(text))</span>"
    }

    /// Seconds as the largest whole unit that reads well: 7776000 → 90 d.
    static func duration(_ s: Int64) -> String {
        if s >= 86_400 * 2 { return "\(s / 86_400) d" }
        if s >= 7200 { return "\(s / 3600) h" }
        if s >= 120 { return "\(s / 60) min" }
        return "\(s) s"
    }

    /// Text as HTML: the XML escapes (the five characters that matter in content and attribute values; a control
    /// character HTML cannot carry as U+FFFD), which HTML reads alike.
    static func escape(_ s: String) -> String { JUnitReport.xml(s) }
}
