/// Browser-acceptance lint: what browsers will make of a Set-Cookie line from a request URL, and where
/// that differs from what its author probably meant. Each finding has a stable ``LintFinding/code``.
public struct LintFinding: Sendable, Hashable, CustomStringConvertible {
    /// How much a finding matters.
    public enum Severity: String, Sendable, Hashable, Comparable {
        /// Browsers will not store the cookie.
        case rejects
        /// Stored, but not as the author probably expects (an attribute ignored, a lifetime capped, …).
        case warning
        /// Worth knowing; browsers behave as written.
        case info

        private var rank: Int {
            switch self {
            case .rejects: return 0
            case .warning: return 1
            case .info: return 2
            }
        }
        public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
    }

    /// A stable, kebab-case code, e.g. `samesite-none-insecure`.
    public let code: String
    public let severity: Severity
    /// One line that says what happens and why.
    public let message: String

    public var description: String { "\(severity.rawValue) \(code): \(message)" }
}

/// The lint itself.
public enum CookieLint {
    /// Every finding for `setCookie` received from `url` at `now`, most severe first.
    public static func findings(
        for setCookie: SetCookie, from url: RequestURL, now: Int64, suffixes: PublicSuffixList = .system
    ) -> [LintFinding] {
        var out: [LintFinding] = []
        func add(_ code: String, _ severity: LintFinding.Severity, _ message: String) {
            out.append(LintFinding(code: code, severity: severity, message: message))
        }
        if let problem = setCookie.problem {
            add(problem.code, .rejects, problem.description)
        }
        checkCharacters(setCookie, add)
        let a = setCookie.attributes
        let host = url.host
        // Attributes: values over 1024 bytes, conflicts, unparseable values (strings only for findings).
        var seen = [ArraySlice<UInt8>?](repeating: nil, count: 16)
        var conflicted = [Bool](repeating: false, count: 16)
        setCookie.forEachWrittenAttribute { kind, name, valueBytes, isIgnored in
            if isIgnored {
                add(
                    "attribute-value-too-long", .warning,
                    "\(String(lossy: name)) value is over 1024 bytes; browsers ignore the attribute (RFC 6265bis §5.6)")
                return
            }
            guard kind != .unknown else { return }
            let k = Int(kind.rawValue)
            let value = valueBytes ?? []
            if let previous = seen[k], !ASCII.equalIgnoringCase(previous, value), !conflicted[k] {
                conflicted[k] = true
                add(
                    "attribute-conflict", .warning,
                    "\(kind.canonicalName) is repeated with different values; the last valid one wins (RFC 6265bis §5.7)"
                )
            }
            seen[k] = value
            switch kind {
            case .expires where CookieDate.parse(value) == nil:
                add(
                    "expires-invalid", .warning,
                    "Expires=\(String(lossy: value)) is not a cookie-date; browsers ignore it (RFC 6265bis §5.1.1)")
            case .maxAge where !isValidMaxAge(value):
                add("max-age-invalid", .warning, "Max-Age=\(String(lossy: value)) is not a number; browsers ignore it")
            case .sameSite:
                let ok = ["strict", "lax", "none"].contains { ASCII.equalIgnoringCase(value, ArraySlice($0.utf8)) }
                if !ok {
                    add(
                        "samesite-invalid", .warning,
                        "SameSite=\(String(lossy: value)) is not Strict, Lax or None; browsers use the default (Lax in Chromium)"
                    )
                }
            case .path where value.first != 0x2F:
                add(
                    "path-invalid", .warning,
                    "Path=\(String(lossy: value)) does not start with '/'; browsers use the default path \(url.defaultPath)"
                )
            default: break
            }
        }
        if a.isLifetimeCapped(now: now) {
            add(
                "lifetime-capped", .warning, "lifetime is over 400 days; browsers cap it at 400 days (RFC 6265bis §5.5)"
            )
        }
        if let expiry = a.expiry(now: now), expiry <= now {
            add("already-expired", .info, "the cookie is already expired: browsers delete any stored cookie it matches")
        }

        // Domain.
        if let written = a.domainAsWritten, let domain = a.domain {
            if domain.isEmpty && !written.isEmpty {
                add("domain-mismatch", .rejects, "Domain=\(written) names no domain; browsers reject the cookie")
            } else if domain.utf8.contains(where: { $0 >= 0x80 }) {
                add("domain-non-ascii", .rejects, "Domain=\(written) is not ASCII (RFC 6265bis §5.7 step 8)")
            } else if case .invalid(let reason) = IPHost.parse(domain) {
                add(
                    "domain-invalid", .rejects,
                    "Domain=\(reason); host parsing fails and browsers reject the cookie (draft-ietf-httpbis-layered-cookies, Parse a Cookie)"
                )
            } else if !domain.isEmpty {
                // Host parsing, as the jar does it: IP addresses in their serialised form.
                var domain = domain
                var isIP = false
                if case .ip(let ip) = IPHost.parse(domain) {
                    domain = ip
                    isIP = true
                }
                if domain == "localhost" || isIP {
                    add(
                        "domain-ip-or-localhost", domain == host ? .warning : .rejects,
                        "Domain=\(written) is \(isIP ? "an IP address" : "localhost"); it can only ever mean this one host"
                    )
                }
                if !isIP && suffixes.isPublicSuffix(domain) && domain != "localhost" {
                    if domain == host {
                        add(
                            "domain-public-suffix", .warning,
                            "Domain=\(domain) is a public suffix equal to the host; browsers make the cookie host-only")
                    } else {
                        add(
                            "domain-public-suffix", .rejects,
                            "Domain=\(domain) is a public suffix; browsers reject the cookie (RFC 6265bis §5.7 step 9)")
                    }
                } else if !domainMatches(host, domain) {
                    add(
                        "domain-mismatch", .rejects,
                        "host \(host) is not within Domain=\(domain); browsers reject the cookie (RFC 6265bis §5.7 step 10)"
                    )
                }
                if written.hasPrefix(".") {
                    add(
                        "domain-leading-dot", .info,
                        "Domain=\(written): browsers ignore the leading dot; Netscape-style clients such as HTTPCookie(properties:) need it to reach subdomains"
                    )
                }
            }
        }

        // Secure and the things that need it.
        if a.secure && !url.isSecure {
            add(
                "secure-from-insecure-origin", .rejects,
                "Secure cookie set over plain \(url.scheme) from \(host); browsers reject it (RFC 6265bis §5.7 step 13)"
            )
        }
        if a.sameSite == .none && !a.secure {
            add(
                "samesite-none-insecure", .rejects,
                "SameSite=None without Secure; Chromium and Firefox reject it (RFC 6265bis §5.7 step 19)")
        }
        if a.partitioned && !a.secure {
            add("partitioned-insecure", .rejects, "Partitioned without Secure; browsers reject it (CHIPS)")
        }
        let name = setCookie.nameBytes
        if ASCII.hasPrefixIgnoringCase(name, "__secure-") && !a.secure {
            add("secure-prefix-insecure", .rejects, "__Secure- cookie without Secure (RFC 6265bis §5.7 step 20)")
        }
        if ASCII.hasPrefixIgnoringCase(name, "__host-") {
            if a.domain.map({ !$0.isEmpty }) ?? false {
                add("host-prefix-domain", .rejects, "__Host- cookie with a Domain attribute (RFC 6265bis §5.7 step 21)")
            }
            if !a.secure {
                add("host-prefix-insecure", .rejects, "__Host- cookie without Secure (RFC 6265bis §5.7 step 21)")
            }
            if !a.hasPath || (a.path ?? url.defaultPath) != "/" {
                add("host-prefix-path", .rejects, "__Host- cookie needs Path=/ (RFC 6265bis §5.7 step 21)")
            }
        }
        // What more than one engine does differently, worked out once.
        let shared = setCookie.problem == nil ? EngineEdges(setCookie, a, host: host) : nil
        if let shared {
            chromiumDifferences(setCookie, shared, host: host, add)
            firefoxDifferences(setCookie, shared, host: host, add)
        }
        webkitDifferences(setCookie, a, shared, url: url, draft: out, add)
        return out.enumerated().sorted {
            $0.element.severity != $1.element.severity
                ? $0.element.severity < $1.element.severity : $0.offset < $1.offset
        }.map(\.element)
    }

    /// Characters a server should not send (RFC 6265bis §4.1.1): name not a token, value not cookie-octets.
    private static func checkCharacters(_ c: SetCookie, _ add: (String, LintFinding.Severity, String) -> Void) {
        if c.problem != nil { return }
        if let bad = c.nameBytes.first(where: { !ASCII.isTokenChar($0) }) {
            add(
                "invalid-character", .warning,
                "cookie name has \(describe(bad)), which is not allowed in a token (RFC 6265bis §4.1.1); servers and clients may disagree on it"
            )
        }
        var value = c.valueBytes
        if value.count >= 2 && value.first == 0x22 && value.last == 0x22 { value = value.dropFirst().dropLast() }
        if let bad = value.first(where: { !ASCII.isCookieOctet($0) }) {
            add(
                "invalid-character", .warning,
                "cookie value has \(describe(bad)), which is not a cookie-octet (RFC 6265bis §4.1.1); servers and clients may disagree on it"
            )
        }
    }

    private static func describe(_ byte: UInt8) -> String {
        if byte >= 0x80 { return "a non-ASCII byte" }
        if byte == 0x20 { return "a space" }
        if byte == 0x09 { return "a tab" }
        return "'\(Character(Unicode.Scalar(byte)))'"
    }

    private static func isValidMaxAge(_ v: ArraySlice<UInt8>) -> Bool {
        let digits = v.first == 0x2D ? v.dropFirst() : v
        return !digits.isEmpty && digits.allSatisfy(ASCII.isDigit)
    }
}

extension CookieLint {
    /// The codes ``siteFindings(for:site:)`` gives.
    public static let siteCodes: Set<String> = [
        "cross-site-samesite", "cross-site-samesite-default", "third-party-unpartitioned",
    ]

    /// What a Set-Cookie line meets in the site context of the response it came with (RFC 6265bis §5.2; the site
    /// as ``RequestSite`` reads it from the request's headers). A cross-site subresource or frame response is a
    /// third party's: SameSite=Lax or Strict refuses it everywhere (§5.7 step 21), no SameSite refuses it where Lax is
    /// the default (Chromium; Firefox and WebKit keep it as None), and an unpartitioned SameSite=None cookie is
    /// refused by every engine that blocks third-party cookies. A top-level navigation from another site may set any
    /// cookie (§5.7 lets Lax and Strict through on top-level navigations).
    public static func siteFindings(for setCookie: SetCookie, site: RequestSite.Kind?) -> [LintFinding] {
        guard site == .crossSiteSubresource, setCookie.problem == nil else { return [] }
        let a = setCookie.attributes
        switch a.sameSite {
        case .lax, .strict:
            return [
                LintFinding(
                    code: "cross-site-samesite", severity: .rejects,
                    message:
                        "set by a cross-site subresource or frame response with SameSite=\(a.sameSite.rawValue): every browser refuses it (RFC 6265bis §5.7 step 21); a third party's cookie needs SameSite=None; Secure"
                )
            ]
        case .default:
            return [
                LintFinding(
                    code: "cross-site-samesite-default", severity: .warning,
                    message:
                        "set by a cross-site subresource or frame response without SameSite: Chromium refuses it (Lax by default); Firefox and WebKit keep it as SameSite=None; write SameSite=None; Secure"
                )
            ]
        case .none:
            guard a.secure, !a.partitioned else { return [] }
            return [
                LintFinding(
                    code: "third-party-unpartitioned", severity: .warning,
                    message:
                        "a third party's cookie without Partitioned: Safari, WKWebView, Firefox (Total Cookie Protection) and Chrome in Incognito or with third-party cookies blocked do not keep or send it; Partitioned (CHIPS) keeps it per top-level site"
                )
            ]
        }
    }
}
