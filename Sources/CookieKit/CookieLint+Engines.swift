import HTTPGrammar

/// What each browser engine does differently from the draft, as measured live (docs/browser-differences.md): the
/// lint's `chromium-…`, `firefox-…` and `webkit-…` findings.
extension CookieLint {
    /// What more than one engine reads differently from the draft, worked out once per line (with no problem).
    struct EngineEdges {
        /// The last Expires, when it is a cookie-date before 1601 (which the draft ignores, §5.1.1 step 5), whether or
        /// not a Max-Age overrides it (WebKit drops the cookie either way).
        var expiresBefore1601Anyway: ArraySlice<UInt8>?
        /// The same, when Max-Age does not override it (Chromium and Firefox drop the cookie only then).
        var expiresBefore1601: ArraySlice<UInt8>? { maxAgeWritten ? nil : expiresBefore1601Anyway }
        var maxAgeWritten: Bool
        /// The last Max-Age as written (last one wins, §5.7), when it is a '+' and digits: the draft ignores it,
        /// Chromium and WebKit read it as the number.
        var maxAgePlus: ArraySlice<UInt8>?
        /// Domain is the request host's own IP address (compared serialised, as the draft does).
        var ipDomainIsHost: Bool
        /// ... written as the host is (`127.0.0.1`, `[::1]`), not in another form of the same address (`127.1`,
        /// `0x7f.0.0.1`, `[0:0:0:0:0:0:0:1]`): the engines compare the text.
        var ipDomainAsWritten: Bool
        /// The Domain's text without brackets, lowercased (for WebKit's comparison).
        var domainText: String

        init(_ c: SetCookie, _ a: CookieAttributes, host: String) {
            maxAgeWritten = a.maxAge != nil
            expiresBefore1601Anyway = nil
            if let v = c.lastWrittenValue(of: .expires), CookieDate.parse(v) == nil,
                CookieDate.parse(v, minimumYear: 0) != nil
            {
                expiresBefore1601Anyway = v
            }
            maxAgePlus = nil
            if let v = c.lastWrittenValue(of: .maxAge), v.count > 1, v.first == 0x2B,
                v.dropFirst().allSatisfy(ASCII.isDigit)
            {
                maxAgePlus = v
            }
            // The Domain as written (the attributes' value is already serialised).
            let written = c.lastWrittenValue(of: .domain).map { String(lossy: $0).asciiLowercased } ?? ""
            var text = written.hasPrefix(".") ? String(written.dropFirst()) : written
            if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
            domainText = text
            if let domain = a.domain, !domain.isEmpty, case .ip(let ip) = IPHost.parse(domain), ip == host {
                ipDomainIsHost = true
            } else {
                ipDomainIsHost = false
            }
            ipDomainAsWritten = ipDomainIsHost && text == host
        }
    }

    /// Where Chromium (the engine of most browsers and many embedded web views) parts from the draft, seen with
    /// Chromium 156 through bench/browser-diff.py (docs/browser-differences.md). The jar stays the draft; these
    /// findings say what a Chromium-based browser does instead.
    static func chromiumDifferences(
        _ c: SetCookie, _ shared: EngineEdges, host: String, _ add: (String, LintFinding.Severity, String) -> Void
    ) {
        let name = c.nameBytes
        let value = c.valueBytes
        if name.isEmpty && value.contains(0x3D) {
            add(
                "chromium-drops-nameless-with-equals", .warning,
                "Chromium does not store a cookie with an empty name whose value contains '=' (it would come back as name=value); the draft keeps it (RFC 6265bis §5.6 step 4)"
            )
        }
        if name.contains(0x09) || value.contains(0x09) {
            add(
                "chromium-drops-tab", .warning,
                "Chromium does not store a cookie whose name or value contains a tab; the draft allows HTAB (RFC 6265bis §5.6 step 1)"
            )
        }
        maxAgePlus("chromium", "Chromium", shared, add)
        sharedEdges("chromium", "Chromium", shared, host: host, add)
    }

    /// `Max-Age=+N`, which Chromium and WebKit read as N seconds.
    static func maxAgePlus(
        _ code: String, _ engine: String, _ shared: EngineEdges, _ add: (String, LintFinding.Severity, String) -> Void
    ) {
        guard let v = shared.maxAgePlus else { return }
        add(
            "\(code)-max-age-plus", .warning,
            "\(engine) reads Max-Age=\(String(lossy: v)) as \(String(lossy: v.dropFirst())) seconds; the draft ignores a Max-Age with a '+' (RFC 6265bis §5.6.2) and keeps a session cookie"
        )
    }

    /// The edges Chromium and Firefox part from the draft on alike: an Expires before 1601 (without Max-Age) drops the
    /// cookie; a Domain that is the host's IP address makes it host-only, written another way refused.
    static func sharedEdges(
        _ code: String, _ engine: String, _ shared: EngineEdges, host: String,
        _ add: (String, LintFinding.Severity, String) -> Void
    ) {
        if let v = shared.expiresBefore1601 {
            add(
                "\(code)-drops-expires-before-1601", .warning,
                "Expires=\(String(lossy: v)) is before 1601: \(engine) drops the cookie; the draft ignores such an Expires (RFC 6265bis §5.1.1 step 5) and keeps a session cookie"
            )
        }
        if shared.ipDomainIsHost && !shared.ipDomainAsWritten {
            add(
                "\(code)-drops-ip-domain-written-otherwise", .warning,
                "\(engine) does not store a cookie whose Domain is the host's IP address written another way (\(shared.domainText) for \(host)): it compares the text; the draft compares the addresses and keeps a domain cookie (draft-ietf-httpbis-layered-cookies)"
            )
        }
        if shared.ipDomainAsWritten {
            add(
                "\(code)-ip-domain-host-only", .info,
                "\(engine) makes a cookie whose Domain is the host's IP address host-only; the draft keeps a domain cookie (no other host matches an IP address, so both send it to this host only)"
            )
        }
    }

    /// Where Firefox parts from the draft, seen with Firefox 153 ESR through `bench/browser-diff.py --engine firefox`
    /// (docs/browser-differences.md).
    static func firefoxDifferences(
        _ c: SetCookie, _ shared: EngineEdges, host: String, _ add: (String, LintFinding.Severity, String) -> Void
    ) {
        if c.nameBytes.isEmpty {
            // The name-value-pair is what comes before the first ';' (§5.6 step 2).
            if c.bytes.prefix(while: { $0 != 0x3B }).contains(0x3D) {
                add(
                    "firefox-drops-empty-name", .warning,
                    "Firefox does not store a cookie with an empty name ('=value'); the draft keeps it (RFC 6265bis §5.6 step 4)"
                )
            } else {
                add(
                    "firefox-nameless-as-name", .warning,
                    "Firefox keeps a cookie without '=' as a name with an empty value and sends '\(String(lossy: c.valueBytes))='; the draft (and Chromium) keep an empty name and send '\(String(lossy: c.valueBytes))' (RFC 6265bis §5.6 step 4)"
                )
            }
        }
        sharedEdges("firefox", "Firefox", shared, host: host, add)
    }

    /// Where WebKitGTK (2.50, libsoup 3's cookie jar: not Safari's CFNetwork store) parts from the draft, seen through
    /// `bench/browser-diff.py --engine webkit` (docs/browser-differences.md). Unlike the other two engines', some of
    /// these concern lines the draft ignores (an empty cookie, an over-long name or attribute), which WebKit stores.
    static func webkitDifferences(
        _ c: SetCookie, _ a: CookieAttributes, _ shared: EngineEdges?, url: RequestURL, draft: [LintFinding],
        _ add: (String, LintFinding.Severity, String) -> Void
    ) {
        let host = url.host
        let pair = c.bytes.prefix { $0 != 0x3B }
        switch c.problem?.code {
        case "empty-cookie":
            add(
                "webkit-stores-empty-cookie", .warning,
                "WebKit stores a cookie with an empty name and an empty value; the draft ignores the line (RFC 6265bis §5.6 step 5)"
            )
        case "name-value-too-long":
            add(
                "webkit-no-size-limit", .warning,
                "WebKit stores a name and value over 4096 bytes; the draft ignores the line (RFC 6265bis §5.6 step 6)")
        default: break
        }
        if c.problem == nil {
            var long = false
            c.forEachWrittenAttribute { _, _, _, isIgnored in long = long || isIgnored }
            if long {
                add(
                    "webkit-no-size-limit", .warning,
                    "WebKit applies an attribute whose value is over 1024 bytes; the draft ignores it (RFC 6265bis §5.6)"
                )
            }
        }
        // A tab in the pair, or in an attribute's name: libsoup trims spaces only.
        let tabInName = c.bytes.split(separator: 0x3B, omittingEmptySubsequences: false).dropFirst().contains {
            $0.prefix { $0 != 0x3D }.contains(0x09)
        }
        if pair.contains(0x09) || tabInName {
            add(
                "webkit-tab-ends-token", .warning,
                "WebKit ends a name, a value or an attribute's name at a tab (here it stores something else or ignores the attribute); the draft trims tabs as whitespace and keeps those inside a value (RFC 6265bis §5.6)"
            )
        }
        if pair.contains(where: { $0 >= 0x80 }) {
            add(
                "webkit-cuts-non-ascii", .warning,
                "WebKit keeps a name or value only up to its first non-ASCII byte; the draft keeps the bytes (RFC 6265bis §5.6)"
            )
        }
        guard let shared else { return }
        if let d = c.lastWrittenValue(of: .domain), d.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) {
            add(
                "webkit-rejects-uppercase-domain", .warning,
                "WebKit does not store a cookie whose Domain has capital letters; the draft compares it in lower case (RFC 6265bis §5.6.3)"
            )
        }
        if let v = shared.expiresBefore1601Anyway {
            add(
                "webkit-drops-expires-before-1601", .warning,
                "Expires=\(String(lossy: v)) is before 1601: WebKit drops the cookie even beside a Max-Age; the draft ignores such an Expires (RFC 6265bis §5.1.1 step 5)"
            )
        }
        maxAgePlus("webkit", "WebKit", shared, add)
        if let v = c.lastWrittenValue(of: .maxAge), v.count > 18, v.allSatisfy(ASCII.isDigit) {
            add(
                "webkit-max-age-overflow", .warning,
                "WebKit keeps a session cookie for a Max-Age beyond 64 bits; the draft caps it (RFC 6265bis §5.6.2, §5.5)"
            )
        }
        if shared.ipDomainIsHost && host.contains(":") {
            add(
                "webkit-drops-ipv6-domain", .warning,
                "WebKit does not store a cookie whose Domain is an IPv6 address (\(shared.domainText)), in any form; the draft keeps a domain cookie for the host's own address (draft-ietf-httpbis-layered-cookies)"
            )
        } else if shared.ipDomainIsHost && !shared.ipDomainAsWritten {
            add(
                "webkit-drops-ip-domain-written-otherwise", .warning,
                "WebKit does not store a cookie whose Domain is the host's IP address written another way (\(shared.domainText) for \(host)): it compares the text; the draft compares the addresses and keeps a domain cookie (draft-ietf-httpbis-layered-cookies)"
            )
        } else if shared.ipDomainIsHost {
            add(
                "webkit-ip-domain-host-only", .info,
                "WebKit makes a cookie whose Domain is the host's IP address host-only; the draft keeps a domain cookie (no other host matches an IP address, so both send it to this host only)"
            )
        }
        // What the draft and WebKit decide differently on storage comes from the profile's table
        // (``CookieJar/Profile/Acceptance``), the one the replayed WebKit jar applies.
        let webkit = CookieJar.Profile.webkit.acceptance
        if !webkit.loopbackIsSecure && a.secure && HostName.isLoopback(host) && url.scheme == "http" {
            add(
                "webkit-rejects-secure-from-loopback", .warning,
                "WebKit does not store a Secure cookie set over http from \(host); Chromium and Firefox treat a loopback host as a secure origin and keep it, as the draft lets them (RFC 6265bis §5.7 step 13)"
            )
        }
        // What the draft rejects and WebKit keeps: read from the draft's own findings (a second reading of the
        // prefix rules here missed a __Host- cookie without a Path attribute, which WebKit keeps too).
        if !webkit.sameSiteNoneNeedsSecure && draft.contains(where: { $0.code == "samesite-none-insecure" }) {
            add(
                "webkit-keeps-samesite-none-insecure", .info,
                "WebKit stores SameSite=None without Secure (as a SameSite=None cookie); the draft and Chromium reject it (RFC 6265bis §5.7 step 19)"
            )
        }
        let prefixRules = ["secure-prefix-insecure", "host-prefix-domain", "host-prefix-insecure", "host-prefix-path"]
        if !webkit.enforcesPrefixes && draft.contains(where: { prefixRules.contains($0.code) }) {
            add(
                "webkit-ignores-prefix", .warning,
                "WebKit stores a __Secure- or __Host- cookie that breaks its prefix's rules; the draft rejects it (RFC 6265bis §5.7 steps 20-21)"
            )
        }
    }
}

/// What each measured engine does with a line, read from the lint's findings: the draft's verdict (a `rejects`
/// finding means it keeps nothing) and the engine findings, each of which says the engine drops a line the draft
/// keeps, keeps one it rejects, or keeps the cookie another way.
public struct EngineVerdict: Sendable, Equatable {
    public enum Engine: String, Sendable, CaseIterable {
        case chromium = "Chromium"
        case firefox = "Firefox"
        case webkit = "WebKit"
    }
    public let engine: Engine
    /// Whether the engine keeps a cookie.
    public let stores: Bool
    /// How what it keeps differs from the draft's cookie (`host-only`, `persistent`); nil: as the draft.
    public let how: String?

    /// The three engines' verdicts on the line these findings are of.
    public static func of(_ findings: [LintFinding]) -> [EngineVerdict] {
        let draftStores = !findings.contains { $0.severity == .rejects }
        let expired = findings.contains { $0.code == "already-expired" }
        return Engine.allCases.map { engine in
            var stores = draftStores
            var how: [String] = []
            for f in findings where f.code.hasPrefix(engine.rawValue.lowercased() + "-") {
                switch effects[f.code] {
                case .drops?: stores = false
                case .keeps?: stores = true
                case .alters(let change)?: how.append(change)
                case .keepsOrAlters(let change)?:
                    if draftStores { how.append(change) } else { stores = true }
                case nil: break
                }
            }
            // An expired cookie is kept by none (it only deletes, §5.7).
            if expired { stores = false }
            return EngineVerdict(
                engine: engine, stores: stores, how: stores && !how.isEmpty ? how.joined(separator: ", ") : nil)
        }
    }

    /// One line for people (`rejects: Chromium, Firefox; WebKit stores it host-only`); nil when every engine keeps
    /// the draft's cookie.
    public static func summary(_ findings: [LintFinding]) -> String? {
        let verdicts = of(findings)
        guard verdicts.contains(where: { !$0.stores || $0.how != nil }) else { return nil }
        var parts: [String] = []
        let rejecting = verdicts.filter { !$0.stores }.map(\.engine.rawValue)
        if !rejecting.isEmpty { parts.append("rejects: " + rejecting.joined(separator: ", ")) }
        // The engines that keep it, grouped by how (as the draft first).
        let draftStores = !findings.contains { $0.severity == .rejects }
        var groups: [(how: String?, names: [String])] = []
        for v in verdicts where v.stores {
            if let i = groups.firstIndex(where: { $0.how == v.how }) {
                groups[i].names.append(v.engine.rawValue)
            } else {
                groups.append((v.how, [v.engine.rawValue]))
            }
        }
        for g in groups.sorted(by: { ($0.how == nil ? 0 : 1) < ($1.how == nil ? 0 : 1) }) {
            let how = g.how ?? (draftStores ? "as the draft" : nil)
            parts.append(
                g.names.joined(separator: ", ") + (g.names.count > 1 ? " store it" : " stores it")
                    + (how.map { " " + $0 } ?? ""))
        }
        return parts.joined(separator: "; ")
    }

    enum Effect {
        case drops, keeps
        case alters(String)
        /// Keeps a line the draft rejects, or keeps another cookie than the draft's.
        case keepsOrAlters(String)
    }

    /// What each engine finding says the engine does (docs/browser-differences.md).
    static let effects: [String: Effect] = [
        "chromium-drops-nameless-with-equals": .drops, "chromium-drops-tab": .drops,
        "chromium-max-age-plus": .alters("persistent"), "chromium-drops-expires-before-1601": .drops,
        "chromium-drops-ip-domain-written-otherwise": .drops, "chromium-ip-domain-host-only": .alters("host-only"),
        "firefox-nameless-as-name": .alters("as a name with an empty value"), "firefox-drops-empty-name": .drops,
        "firefox-drops-expires-before-1601": .drops, "firefox-drops-ip-domain-written-otherwise": .drops,
        "firefox-ip-domain-host-only": .alters("host-only"),
        "webkit-stores-empty-cookie": .keeps, "webkit-no-size-limit": .keepsOrAlters("with the over-long attribute"),
        "webkit-tab-ends-token": .alters("cut at a tab"),
        "webkit-cuts-non-ascii": .alters("cut at its first non-ASCII byte"),
        "webkit-rejects-uppercase-domain": .drops, "webkit-drops-expires-before-1601": .drops,
        "webkit-max-age-plus": .alters("persistent"), "webkit-max-age-overflow": .alters("as a session cookie"),
        "webkit-ip-domain-host-only": .alters("host-only"), "webkit-drops-ip-domain-written-otherwise": .drops,
        "webkit-drops-ipv6-domain": .drops,
        "webkit-rejects-secure-from-loopback": .drops,
        "webkit-keeps-samesite-none-insecure": .keeps, "webkit-ignores-prefix": .keeps,
    ]
}
