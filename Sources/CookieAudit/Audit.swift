import CookieKit
import CookieRules

/// `cookie-proxy audit URL`: fetch a URL with libcurl, follow its redirects as a browser would, carry cookies
/// across hops in our own jar (not curl's), and check every Set-Cookie on the way.
public struct AuditOptions: Sendable {
    public var url: String
    public var method = "GET"
    public var body: [UInt8]? = nil
    public var headers: [String] = []
    /// `-b name=value`: cookies the jar starts with (host-only, for the first URL's host, Path=/).
    public var cookies: [String] = []
    public var proxy: String? = nil
    /// `--resolve HOST:ADDRESS`: connect to ADDRESS for HOST, on every hop (as `run --resolve`).
    public var resolve: [(host: String, address: String)] = []
    public var caFile: String? = nil
    public var insecure = false
    public var maximumRedirects = 10
    public var timeout: Double = 30
    public var rules: RuleSet? = nil
    public init(url: String) { self.url = url }
}

/// One Set-Cookie seen on a hop.
public struct AuditedCookie: Sendable {
    /// As the server sent it.
    public var received: SetCookie
    /// What the rules would make of it (nil without --rules).
    public var outcome: Transformation?
    /// What the browser would get: the rules' result, else what the server sent; nil when a rule drops it.
    public var delivered: SetCookie?
    /// Why the jar refused the delivered cookie (nil when stored).
    public var rejection: String?
    public var findings: [LintFinding]
}

public struct AuditHop: Sendable {
    public var url: String
    public var method: String
    public var status: Int
    public var httpVersion: String
    public var location: String?
    public var cookies: [AuditedCookie]
}

public struct AuditReport: Sendable {
    public var hops: [AuditHop]
    public var finalURL: String
    /// The Cookie header a browser would send to the final URL.
    public var cookieHeader: String
    public var held: [StoredCookie]
    /// Cookies the jar refused, with the hop URL and the reason.
    public var dropped: [(name: String, url: String, reason: String)]
    public var stoppedBecause: String?
    /// Why a later hop could not be fetched, naming the redirect that led there: the hops before it are reported,
    /// not thrown away (a first request that fails is an ``AuditError``).
    public var failure: String?
    public var anyRejected: Bool { !dropped.isEmpty }
}

public struct AuditError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

public enum CookieAudit {
    public static func run(_ options: AuditOptions, now: Int64, suffixes: PublicSuffixList = .system) throws(AuditError)
        -> AuditReport
    {
        guard let firstURL = RequestURL(options.url), firstURL.scheme == "http" || firstURL.scheme == "https" else {
            throw AuditError(description: "'\(options.url)' is not an http:// or https:// URL")
        }
        var jar = CookieJar(publicSuffixes: suffixes, clock: { now })
        for pair in options.cookies {
            jar.receive(
                SetCookie(pair + "; Path=/"),
                from: RequestURL(scheme: firstURL.scheme, host: firstURL.host, port: firstURL.port, path: "/"))
        }
        let engine = options.rules.map { RuleEngine($0, suffixes: suffixes) }
        let curl = CurlEasy()
        var hops: [AuditHop] = []
        var dropped: [(String, String, String)] = []
        var url = options.url
        var method = options.method
        var body = options.body
        var stopped: String? = nil
        var failure: String? = nil
        // What a failed later hop says: which redirect led there.
        func ledThere(_ hops: [AuditHop]) -> String {
            guard let last = hops.last else { return "" }
            return " (the redirect from \(last.method) \(last.url), Location: \(last.location ?? "?"), led there)"
        }
        while true {
            guard let requestURL = RequestURL(url) else {
                if hops.isEmpty { throw AuditError(description: "'\(url)' is not a URL") }
                failure = "redirected to an invalid URL '\(url)'" + ledThere(hops)
                break
            }
            var headers = options.headers
            let cookieHeader = jar.cookieHeader(for: requestURL)
            if !cookieHeader.isEmpty { headers.append("Cookie: \(cookieHeader)") }
            let response: CurlEasy.Response
            do {
                response = try curl.perform(
                    CurlEasy.Request(
                        url: url, method: method, body: body, headers: headers, proxy: options.proxy,
                        // curl's form, HOST:PORT:ADDRESS, for the port this hop goes to.
                        resolve: options.resolve.map {
                            "\($0.host):\(requestURL.port ?? (requestURL.scheme == "https" ? 443 : 80)):\($0.address)"
                        },
                        caFile: options.caFile,
                        insecure: options.insecure, timeout: options.timeout))
            } catch {
                let description = describe(error, url: requestURL, timeout: options.timeout)
                if hops.isEmpty { throw AuditError(description: description) }
                failure = "hop \(hops.count + 1): \(description)" + ledThere(hops)
                break
            }
            var location: String? = nil
            var setCookies: [SetCookie] = []
            for line in response.headerLines.dropFirst() {
                guard let colon = line.firstIndex(of: 0x3A) else { continue }
                let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
                var value = line[(colon + 1)...]
                while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
                if name == "set-cookie" { setCookies.append(SetCookie(value)) }
                if name == "location" { location = String(decoding: value, as: UTF8.self) }
            }
            let context = MessageContext(
                scheme: requestURL.scheme, host: requestURL.host,
                port: requestURL.port ?? (requestURL.scheme == "https" ? 443 : 80),
                path: requestURL.path, method: method, status: response.status)
            let outcomes = engine?.apply(to: setCookies, context: context, now: now)
            var audited: [AuditedCookie] = []
            for (i, received) in setCookies.enumerated() {
                let outcome = outcomes?[i]
                let delivered = outcome.map { $0.result } ?? received
                var rejection: String? = nil
                if let delivered {
                    if case .failure(let r) = jar.receive(delivered, from: requestURL) {
                        rejection = r.reason
                        dropped.append((delivered.name, url, r.reason))
                    }
                }
                let findings = CookieLint.findings(
                    for: delivered ?? received, from: requestURL, now: now, suffixes: suffixes)
                audited.append(
                    AuditedCookie(
                        received: received, outcome: outcome, delivered: delivered, rejection: rejection,
                        findings: findings))
            }
            let isRedirect = [301, 302, 303, 307, 308].contains(response.status) && location != nil
            hops.append(
                AuditHop(
                    url: url, method: method, status: response.status, httpVersion: response.httpVersion,
                    location: isRedirect ? location : nil, cookies: audited))
            guard isRedirect, let location else { break }
            if hops.count > options.maximumRedirects {
                stopped = "stopped after \(options.maximumRedirects) redirects (--max-redirs)"
                break
            }
            url = resolve(location, against: url)
            // Browsers turn a redirected POST into GET on 301/302/303, and keep method and body on 307/308.
            if response.status == 303 || ((response.status == 301 || response.status == 302) && method == "POST") {
                if method != "HEAD" { method = "GET" }
                body = nil
            }
        }
        // After a failed hop, what a browser would send is judged at the last URL that answered.
        let answered = failure == nil ? url : hops.last!.url
        let finalURL = RequestURL(answered)!
        return AuditReport(
            hops: hops, finalURL: answered, cookieHeader: jar.cookieHeader(for: finalURL), held: jar.allCookies(),
            dropped: dropped, stoppedBecause: stopped, failure: failure)
    }

    static func describe(_ error: CurlEasy.Failure, url: RequestURL, timeout: Double) -> String {
        switch error.code {
        case CurlEasy.codeCouldntResolveHost: return "cannot resolve host '\(url.host)' (\(error.message))"
        case CurlEasy.codeCouldntConnect:
            return "cannot connect to \(url.host)\(url.port.map { ":\($0)" } ?? ""): \(error.message)"
        case CurlEasy.codeTimedOut: return "timed out after \(timeout) s fetching \(url): \(error.message)"
        case CurlEasy.codePeerFailedVerification, CurlEasy.codeSSLConnect:
            return
                "TLS verification failed for \(url.host): \(error.message) (use --cacert FILE for a private CA, or -k to skip verification)"
        default: return "\(url): \(error.message) (curl error \(error.code))"
        }
    }

    /// Resolves a Location value against the URL it came from (RFC 3986 §5.2, the common cases).
    public static func resolve(_ location: String, against base: String) -> String {
        let lower = location.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return location }
        let b = Array(base)
        guard let colon = b.firstIndex(of: ":"), colon + 2 < b.count, b[colon + 1] == "/", b[colon + 2] == "/" else {
            return location
        }
        let scheme = String(b[..<colon])
        if location.hasPrefix("//") { return scheme + ":" + location }
        let authorityStart = colon + 3
        let authorityEnd = b[authorityStart...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? b.count
        let origin = String(b[..<authorityEnd])
        let rest = b[authorityEnd...]
        let path = String(rest.prefix { $0 != "?" && $0 != "#" })
        if location.hasPrefix("/") { return origin + location }
        if location.hasPrefix("?") { return origin + path + location }
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = String(path[...slash])
        } else {
            directory = "/"
        }
        return origin + directory + location
    }
}
