/// Whether a request is same-site, a cross-site top-level navigation, or a cross-site subresource or frame (RFC
/// 6265bis §5.2, "same-site" and "site for cookies"), as far as its headers tell. A proxy sees no browsing context,
/// so the site for cookies is inferred, in order of trust, from `Sec-Fetch-Site`/`Sec-Fetch-Dest`/`Sec-Fetch-Mode`
/// (Fetch Metadata: every current engine sends them over https and to localhost), then `Origin`, then `Referer`; a
/// request with none of them (curl, an app's own HTTP client, a typed-in URL) is taken as same-site, which is what
/// a browser does for a top-level navigation the user started. What headers cannot show: a same-origin request
/// from inside a cross-site frame is cross-site for cookies (the frame's ancestors are cross-site), but it says
/// `Sec-Fetch-Site: same-origin`.
public struct RequestSite: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case sameSite = "same-site"
        /// A cross-site top-level navigation (a link or a form from another site): SameSite=Lax cookies go with a
        /// safe method (§5.8.3 step 1).
        case crossSiteNavigation = "cross-site-navigation"
        /// A cross-site fetch, image, script or frame: only SameSite=None cookies, and browsers that block
        /// third-party cookies send only partitioned ones.
        case crossSiteSubresource = "cross-site-subresource"
        /// No header tells: taken as same-site.
        case unknown = "unknown"

        public var isCrossSite: Bool { self == .crossSiteNavigation || self == .crossSiteSubresource }
    }

    public var kind: Kind
    /// The headers the decision was made from, as `Sec-Fetch-Site: cross-site, Sec-Fetch-Dest: iframe`.
    public var evidence: String
    public var isSafeMethod: Bool
    /// Whether the request carried Fetch Metadata (`Sec-Fetch-Site`): a browser's.
    public var fetchMetadata: Bool
    /// A navigation of a top-level document (`Sec-Fetch-Dest: document`; without Fetch Metadata, a GET asking for
    /// HTML first): its site is the top-level site, the partition of what its page loads (CHIPS).
    public var isDocument: Bool

    public init(
        kind: Kind, evidence: String, isSafeMethod: Bool = true, fetchMetadata: Bool = false, isDocument: Bool = false
    ) {
        (self.kind, self.evidence, self.isSafeMethod) = (kind, evidence, isSafeMethod)
        (self.fetchMetadata, self.isDocument) = (fetchMetadata, isDocument)
    }

    /// The jar's view of the request (RFC 6265bis §5.8.3 step 1's same-site checks).
    public var jarContext: CookieJar.RequestContext {
        CookieJar.RequestContext(
            isSameSite: !kind.isCrossSite, isTopLevelNavigation: kind != .crossSiteSubresource,
            isSafeMethod: isSafeMethod)
    }

    /// The request headers the decision reads (lowercase names), each the first such field's value.
    public struct Headers: Sendable, Hashable {
        public var secFetchSite: String?
        public var secFetchDest: String?
        public var secFetchMode: String?
        public var origin: String?
        public var referer: String?
        public var accept: String?
        public init(
            secFetchSite: String? = nil, secFetchDest: String? = nil, secFetchMode: String? = nil,
            origin: String? = nil, referer: String? = nil, accept: String? = nil
        ) {
            (self.secFetchSite, self.secFetchDest, self.secFetchMode) = (secFetchSite, secFetchDest, secFetchMode)
            (self.origin, self.referer, self.accept) = (origin, referer, accept)
        }

        /// Reads the fields by name from `(name, value)` pairs (names compared without case).
        public init(fields: some Sequence<(name: String, value: String)>) {
            self.init()
            for (name, value) in fields {
                switch name.asciiLowercased {
                case "sec-fetch-site": if secFetchSite == nil { secFetchSite = value }
                case "sec-fetch-dest": if secFetchDest == nil { secFetchDest = value }
                case "sec-fetch-mode": if secFetchMode == nil { secFetchMode = value }
                case "origin": if origin == nil { origin = value }
                case "referer": if referer == nil { referer = value }
                case "accept": if accept == nil { accept = value }
                default: break
                }
            }
        }

        public var isEmpty: Bool {
            secFetchSite == nil && origin == nil && referer == nil
        }
    }

    /// Classifies a request to `url` with `method` and these headers.
    public static func classify(
        url: RequestURL, method: String, headers h: Headers, suffixes: PublicSuffixList = .system
    ) -> RequestSite {
        // RFC 9110 §9.2.1's safe methods; §5.8.3 lets Lax cookies go only with these.
        let safe = ["GET", "HEAD", "OPTIONS", "TRACE"].contains(method)
        let guessedDocument = navigationGuess(method, h.accept)
        func make(_ kind: Kind, _ evidence: String) -> RequestSite {
            RequestSite(
                kind: kind, evidence: evidence, isSafeMethod: safe,
                isDocument: guessedDocument && kind != .crossSiteSubresource)
        }
        if let site = h.secFetchSite?.asciiLowercased.trimmingSpaces {
            let dest = h.secFetchDest?.asciiLowercased.trimmingSpaces
            let mode = h.secFetchMode?.asciiLowercased.trimmingSpaces
            func make(_ kind: Kind, _ evidence: String) -> RequestSite {
                RequestSite(
                    kind: kind, evidence: evidence, isSafeMethod: safe, fetchMetadata: true,
                    isDocument: dest == "document" || (dest == nil && mode == "navigate"))
            }
            var evidence = "Sec-Fetch-Site: \(site)"
            if let dest { evidence += ", Sec-Fetch-Dest: \(dest)" }
            if let mode { evidence += ", Sec-Fetch-Mode: \(mode)" }
            switch site {
            // "none": the user started it (typed URL, bookmark): a top-level same-site request.
            case "same-origin", "same-site", "none": return make(.sameSite, evidence)
            default:
                // Only a navigation of the top-level document is a top-level navigation; an iframe's is not.
                let topLevel = (dest == nil || dest == "document") && mode == "navigate"
                return make(topLevel ? .crossSiteNavigation : .crossSiteSubresource, evidence)
            }
        }
        let requestSite = Site(url, suffixes)
        if let origin = h.origin?.trimmingSpaces {
            let evidence = "Origin: \(origin)"
            // An opaque origin (sandboxed frame, privacy-sensitive redirect) is never same-site.
            guard origin != "null", let from = RequestURL(origin) else { return make(.crossSiteSubresource, evidence) }
            if Site(from, suffixes) == requestSite { return make(.sameSite, evidence) }
            return make(navigationGuess(method, h.accept) ? .crossSiteNavigation : .crossSiteSubresource, evidence)
        }
        if let referer = h.referer?.trimmingSpaces, let from = RequestURL(referer) {
            let evidence = "Referer: \(Site(from, suffixes).description)"
            if Site(from, suffixes) == requestSite { return make(.sameSite, evidence) }
            return make(navigationGuess(method, h.accept) ? .crossSiteNavigation : .crossSiteSubresource, evidence)
        }
        return make(.unknown, "no Sec-Fetch-Site, Origin or Referer")
    }

    /// Without Fetch Metadata, a GET that asks for HTML first is taken for a navigation.
    static func navigationGuess(_ method: String, _ accept: String?) -> Bool {
        method == "GET" && (accept?.asciiLowercased.hasPrefix("text/html") ?? false)
    }

    /// A schemeful site (HTML's "same site": scheme and registrable domain; a host without one, such as an IP
    /// address or `localhost`, is its own site).
    struct Site: Hashable, CustomStringConvertible {
        var scheme: String
        var domain: String
        init(_ url: RequestURL, _ suffixes: PublicSuffixList) {
            // ws/wss are http/https's schemes for site purposes.
            scheme = url.scheme == "wss" ? "https" : url.scheme == "ws" ? "http" : url.scheme
            domain = suffixes.registrableDomain(of: url.host) ?? url.host
        }
        var description: String { "\(scheme)://\(domain)" }
    }
}

extension RequestURL {
    /// The schemeful site (scheme and registrable domain) as text: `https://example.com`.
    public func site(_ suffixes: PublicSuffixList) -> String { RequestSite.Site(self, suffixes).description }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }
}
