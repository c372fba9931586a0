import BuildVersion
import CookieKit
import Foundation
import HTTPGrammar
import ProxyApp
import ProxyCore
import ProxyServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `run` tells the person who started it: the banner, and the proxy variables of the environment it does not
/// follow.
public enum RunBanner {
    /// What is said whatever the banner: where it listens, and what the person must act on (warnings, a CA this
    /// start created).
    public static func started(_ config: ProxyApp.Configuration, proxy: RunningProxy) -> [String] {
        var lines = zip(config.listeners, proxy.listenerPorts).map { listen, port in
            "cookie-proxy listening on \(listen.tls ? "https" : "http")://\(HostPort.bracketed(listen.host)):\(port)"
        }
        for warning in config.routes.compactMap(\.slashWarning) + (proxy.tls?.warnings ?? []) {
            lines.append("cookie-proxy: WARNING: \(warning)")
        }
        if let created = proxy.tls?.created { lines.append("cookie-proxy: \(created)") }
        return lines
    }

    /// The banner's lines for the rules, the log and an emulated browser.
    public static func runtime(_ c: ProxyApp.Configuration, emulate: String?) -> String {
        var banner = ""
        if let rulesPath = c.rulesPath {
            banner +=
                "  rules:        \(c.rules.rules.count + c.extraRules.count) from \(rulesPath)"
                + (c.dryRun ? " (dry run: nothing is changed)" : "") + " — reloaded on change or SIGHUP\n"
        } else {
            banner +=
                "  rules:        none (everything passes through unchanged)"
                + (c.dryRun ? "; dry run logs every cookie" : "") + "\n"
        }
        let values = c.showValues ? " (cookie values shown)" : " (cookie values redacted)"
        switch c.log?.destination {
        case nil: banner += "  log:          none\n"
        case .standardOutput?: banner += "  log:          stdout\(values)\n"
        case .file(let path)?: banner += "  log:          \(path)\(values) — reopened on SIGUSR1\n"
        }
        if let emulate { banner += "  emulate:      \(emulate) (its rules follow yours; see rules/README.md)\n" }
        return banner
    }

    /// What the proxy tells a person who just started it: how to point clients at it, and what it will do.
    public static func banner(
        _ config: ProxyApp.Configuration, proxy: RunningProxy, runtimeBanner: String, uiAddress: (String, Int)?,
        https: String?, pslGiven: Bool, metricsHost: String? = nil
    ) -> String {
        let address = HostPort.bracketed(config.listener.host)
        // Listening on every address: this machine's own clients use loopback.
        let localAddress =
            config.listener.host == "0.0.0.0" ? "127.0.0.1" : config.listener.host == "::" ? "[::1]" : address
        let proxyURL = "\(config.listener.tls ? "https" : "http")://\(localAddress):\(proxy.listenerPorts[0])"
        var banner = ""
        if config.isReverse {
            // On loopback, the name the docs use: a browser keeps `app.localhost`'s cookies apart from another
            // local app's, and treats it as a secure context as it does `localhost` (RFC 6761 §6.3).
            let origin =
                HostName.isLoopback(localAddress.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
                ? "\(config.listener.tls ? "https" : "http")://app.localhost:\(proxy.listenerPorts[0])" : proxyURL
            banner += routesBanner(config, url: origin)
        } else if config.listener.tls {
            // An https forward proxy: the client speaks TLS to the proxy itself, so it must trust the local CA for
            // the proxy's own certificate (curl: --proxy-cacert). Apple's system proxy settings speak plain HTTP to
            // a proxy: they need an http listener.
            let ca = proxy.tls.map { $0.ca.certificatePath } ?? "CA.pem"
            banner += "  curl:         curl --proxy-cacert \(ca) -x \(proxyURL) http://example.com/\n"
            banner +=
                "  environment:  export https_proxy=\(proxyURL) (for tools that speak TLS to a proxy and trust the CA)\n"
            banner +=
                "  iOS / macOS:  their proxy settings speak plain HTTP to a proxy: add --listen 127.0.0.1:8080 and use that\n"
        } else {
            banner += "  curl:         curl -x \(proxyURL) http://example.com/\n"
            banner += "  environment:  export http_proxy=\(proxyURL) https_proxy=\(proxyURL)\n"
            banner +=
                "  iOS simulator / macOS: System Settings → Network → Proxies → Web Proxy (HTTP) and Secure Web Proxy (HTTPS), both \(localAddress):\(proxy.listenerPorts[0])\n"
            if config.listener.host == "0.0.0.0" || config.listener.host == "::" {
                let addresses = ServerConfiguration.networkAddresses().filter {
                    config.listener.host == "::" || !$0.contains(":")
                }
                let typed = addresses.map { HostPort.format($0, proxy.listenerPorts[0]) }
                banner +=
                    typed.isEmpty
                    ? "  devices:      this machine has no network address up\n"
                    : "  devices:      set the Wi-Fi proxy to \(typed.joined(separator: " or "))\n"
                if config.allowed.isEmpty {
                    banner += "                (and admit them: --allow 192.168.1.0/24, their network)\n"
                } else {
                    banner +=
                        "  admitted:     loopback and \(config.allowed.map(\.description).joined(separator: ", "))\n"
                    // A device types one of these addresses, and is on its network: outside every --allow, its
                    // requests get a 403.
                    for address in addresses where !config.allowed.contains(where: { $0.contains(address) }) {
                        banner +=
                            "  WARNING:      \(address) is outside every --allow network: a device on its network is refused (403)\n"
                    }
                }
            }
        }
        if config.poller != .native {
            banner += "  poller:       \(config.poller.rawValue) (COOKIE_PROXY_POLLER)\n"
        }
        if let routes = config.upstreamProxies {
            let via =
                routes.http == routes.https
                ? "\(routes.http!)"
                : "http \(routes.http.map(\.description) ?? "direct"), https \(routes.https.map(\.description) ?? "direct")"
            let direct = routes.bypass.isEmpty ? "" : "; direct to \(routes.bypass.joined(separator: ", "))"
            banner += "  upstream:     through proxy \(via)\(direct)\n"
        } else if let ignored = ignoredProxyVariables(ownPort: proxy.listenerPorts[0]), !ignored.isEmpty {
            // A corporate proxy in the environment is not followed unless asked: say so, naming the variables only
            // (their values may hold credentials).
            banner +=
                "  upstream:     direct; \(ignored.joined(separator: " and ")) \(ignored.count == 1 ? "is" : "are") set here and not used (--upstream-proxy env uses \(ignored.count == 1 ? "it" : "them"))\n"
        }
        switch PublicSuffixList.current.source {
        case .shipped:
            banner +=
                "  suffixes:     no Public Suffix List on this machine: using \(PublicSuffixList.current.source) (--psl FILE for another)\n"
        case .file(let path):
            if pslGiven { banner += "  suffixes:     \(path) (--psl)\n" }
        }
        if let (host, _) = uiAddress {
            banner += "  inspector:    \(ServicePages.inspectorURL(host, proxy.servicePort))/?token=\(proxy.token)\n"
        }
        banner += runtimeBanner
        if config.isReverse {
            // A reverse proxy opens no tunnels: CONNECT is answered 405 (RequestRoute).
            if config.listeners.contains(where: \.tls) {
                banner +=
                    "  https:        the https listener's certificates come from the local CA: trust it once with"
                    + " `cookie-proxy ca install` (docs/https.md); CONNECT is answered 405\n"
            } else {
                banner += "  https:        none (a reverse proxy answers CONNECT with 405)\n"
            }
        } else {
            banner +=
                https
                ?? "  https:        CONNECT is tunnelled untouched (no host is intercepted; see --intercept)\n"
        }
        banner += "  version:      \(cookieProxyBuild)\n"
        banner += "  stop:         Ctrl-C"
        if let port = proxy.metricsPort, let host = metricsHost {
            banner +=
                "\n  metrics:      http://\(HostPort.format(host, port))/metrics (Authorization: Bearer, the inspector's"
                + " token)"
        }
        return banner
    }

    /// The proxy variables set in the environment (`http_proxy`, `HTTPS_PROXY`, …) that name another proxy than this
    /// one (the banner suggests exporting this one's own address), or nil when none is.
    static func ignoredProxyVariables(ownPort: Int) -> [String]? {
        var names: [String] = []
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"] {
            guard let value = getenv(name).map({ String(cString: $0) }), !value.isEmpty else { continue }
            if case .success(let proxy) = UpstreamProxy.parse(value), proxy.address.port == ownPort,
                HostName.isLoopback(proxy.address.host)
            {
                continue
            }
            names.append(name)
        }
        return names.isEmpty ? nil : names
    }

    /// The banner's lines for reverse mode: each route, in the order they are tried.
    static func routesBanner(_ config: ProxyApp.Configuration, url: String) -> String {
        var banner = "  reverse mode: open \(url)/ in a browser or app; the routes, in the order they are tried:\n"
        for route in RouteTable(config.routes).routes { banner += "    \(route)\n" }

        if config.forwardedHeaders { banner += "  forwarded:    X-Forwarded-For, -Proto and -Host added\n" }
        return banner
    }
}
