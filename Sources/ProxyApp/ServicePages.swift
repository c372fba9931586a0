import HTTPGrammar

/// The proxy's own pages and addresses as a person opens them: the page a browser gets at the forward proxy's own
/// URL, and the inspector's URL.
public enum ServicePages {
    /// The page a browser gets when it opens the forward proxy's own URL: what this is, and where the onboarding
    /// pages and the inspector are (the inspector's link needs its token, which `cookie-proxy ui url` adds).
    public static func forwardProxyPage(inspector: (String, Int)?, onboarding: String?) -> String {
        var items = [
            "<li>Set this address as the <b>HTTP and HTTPS proxy</b> of a browser, a device or a tool "
                + "(<code>curl -x</code>, <code>export http_proxy=… https_proxy=…</code>); its cookies are then "
                + "rewritten by the rules and logged.</li>"
        ]
        if let onboarding {
            items.append(
                "<li>With the proxy set, <a href=\"http://\(onboarding)/\">http://\(onboarding)/</a> has the local CA "
                    + "certificate and how to trust it on this device (for https interception).</li>")
        }
        if let (host, port) = inspector, port > 0 {
            let url = "http://\(HostPort.bracketed(host)):\(port)/"
            items.append(
                "<li>The inspector is at <a href=\"\(url)\">\(url)</a>; it needs this installation's token: "
                    + "<code>cookie-proxy ui url</code> prints its address with it.</li>")
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>cookie-proxy</title>
            <style>body{font:16px/1.5 system-ui,sans-serif;max-width:42em;margin:3em auto;padding:0 1em}</style>
            </head><body>
            <h1>cookie-proxy</h1>
            <p>This is a forward proxy, not a web site: pages go through it rather than to it.</p>
            <ul>
            \(items.joined(separator: "\n"))
            </ul>
            </body></html>

            """
    }

    /// The inspector's URL as this machine's clients open it (loopback when it listens on every address).
    public static func inspectorURL(_ host: String, _ port: Int) -> String {
        let shown = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "[::1]" : HostPort.bracketed(host)
        return "http://\(shown):\(port)"
    }
}
