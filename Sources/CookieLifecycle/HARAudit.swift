import CookieKit
import JSONStream

/// The lifecycle over a HAR file (HAR 1.2, as Chrome, Firefox and Safari DevTools, Charles, Proxyman, mitmproxy
/// and cookie-proxy's inspector export it): entries are read one at a time from a ``JSONReader`` (a 200 MB file is
/// never held whole), in file order (DevTools exports them in the order they started); each entry's Cookie header is
/// judged against the jar replayed from the earlier entries' Set-Cookie lines (``ClientCookies``), then its own
/// Set-Cookie lines are linted, optionally run through rules (a dry run), and fed to the jar.
public struct HARAudit {
    /// What rules would make of a line (nil: dropped) and which matched; nil when no rules are given.
    public typealias Transform = (SetCookie, ClientCookies.Request, _ status: Int) -> (SetCookie?, [String])

    public struct SetCookieLine: Sendable {
        public var received: SetCookie
        /// What rules would send (nil: dropped); the received line without rules.
        public var forwarded: SetCookie?
        public var rules: [String]
        public var findings: [LintFinding]
        /// What the jar did with the line forwarded.
        public var event: ClientCookies.Event?
    }

    public struct EntryReport: Sendable {
        /// The entry's index in `log.entries`.
        public var index: Int
        public var method: String
        public var url: String
        public var status: Int
        public var site: RequestSite
        public var setCookies: [SetCookieLine]
        public var verdicts: [CookieVerdict]
        /// The client whose jar judged it, as the inspector's HAR names it (`_cookieProxy.client`); empty for a
        /// browser's own export (one client).
        public var client: String = ""
        /// Whether there is anything to say: a Set-Cookie line or a cookie judged.
        public var isNotable: Bool { !setCookies.isEmpty || !verdicts.isEmpty }
    }

    public struct Summary: Sendable {
        public var entries = 0
        public var creator: String?
        public var setCookieLines = 0
        public var cookieHeaders = 0
        /// Entries whose `cookies` arrays list cookies (what a sanitized export may keep when it strips headers).
        public var cookieArrays = 0
        public var findings: [LintFinding.Severity: Int] = [:]
        public var verdicts: [CookieVerdict.Kind: Int] = [:]
        public var rulesChanged = 0
        /// Entries skipped: no usable URL.
        public var skipped = 0
        /// Whose jar judged the file: the engine its first `User-Agent` names (a HAR is one browser's), or the one
        /// asked for; the draft's when neither tells. With several clients, the first client's.
        public var engine = CookieJar.Profile.Engine.rfc6265bis
        var engineChosen = false
        /// The clients the file names (`_cookieProxy.client`, as the inspector exports several), each replayed in a
        /// jar of its own; 1 for a browser's export.
        public var clients = 0

        /// No Cookie or Set-Cookie header anywhere, in an export that had them to strip: Chrome's default "Export
        /// HAR (sanitized)" removes Cookie, Set-Cookie and Authorization.
        public var looksSanitized: Bool {
            entries > 0 && cookieHeaders == 0 && setCookieLines == 0
                && (cookieArrays > 0 || creator == "WebInspector")
        }
        /// Something a browser refuses, or a cookie expected and not sent.
        public var hasFindings: Bool { (findings[.rejects] ?? 0) > 0 || (verdicts[.expectedNotSent] ?? 0) > 0 }
    }

    public var suffixes: PublicSuffixList
    public var transform: Transform?
    /// The engine whose jar replays the file (`audit --engine`); nil: the file's `User-Agent` tells.
    public var engine: CookieJar.Profile.Engine?

    public init(suffixes: PublicSuffixList = .system, transform: Transform? = nil) {
        self.suffixes = suffixes
        self.transform = transform
    }

    /// Walks the document; `report` is called for each entry in order.
    public func run(_ reader: inout JSONReader, report: (EntryReport) -> Void) throws(JSONReader.Failure) -> Summary {
        var summary = Summary()
        // One jar per client: the inspector's HAR holds every client's exchanges, and one client's cookies are
        // never expected from another (as the live lifecycle keeps them apart).
        var clients: [String: Replay] = [:]
        if let engine { (summary.engine, summary.engineChosen) = (engine, true) }
        var sawLog = false
        var sawEntries = false
        guard try reader.peekKind("") == 0x7B else {
            throw reader.fail("", "not a HAR file: the document is not a JSON object")
        }
        try reader.readObject("") { (r: inout JSONReader, key: String) throws(JSONReader.Failure) in
            guard key == "log" else { return try r.skipValue(key) }
            sawLog = true
            guard try r.peekKind("log") == 0x7B else { throw r.fail("log", "not a HAR file: 'log' is not an object") }
            try r.readObject("log") { (r: inout JSONReader, key: String) throws(JSONReader.Failure) in
                switch key {
                case "creator":
                    summary.creator = try r.readValue("log.creator")["name"]?.string
                case "entries":
                    sawEntries = true
                    try r.readArray("log.entries") { (r: inout JSONReader, i: Int) throws(JSONReader.Failure) in
                        let path = "log.entries[\(i)]"
                        let entry = try r.readValue(path)
                        let key = entry["_cookieProxy"]?["client"]?.string ?? ""
                        var replay = clients.removeValue(forKey: key) ?? self.replay()
                        let one = try self.entry(
                            entry, index: i, path: path, replay: &replay, summary: &summary, reader: r)
                        clients[key] = replay
                        if var one {
                            one.client = key
                            report(one)
                        }
                    }
                default: try r.skipValue("log." + key)
                }
            }
        }
        summary.clients = clients.count
        try reader.finish()
        if !sawLog {
            throw JSONReader.Failure(path: "log", offset: reader.offset, message: "not a HAR file: no 'log' object")
        }
        if !sawEntries {
            throw JSONReader.Failure(
                path: "log.entries", offset: reader.offset, message: "not a HAR file: no 'entries' array")
        }
        return summary
    }

    /// Name/value pairs of a HAR headers array (pseudo-headers of HTTP/2 exports skipped).
    static func headers(_ v: JSONValue?, _ path: String, _ reader: JSONReader) throws(JSONReader.Failure) -> [(
        String, String
    )] {
        guard let v else { return [] }
        guard let list = v.array else { throw reader.fail(path, "expected an array of {name, value}") }
        var out: [(String, String)] = []
        for (i, h) in list.enumerated() {
            guard let name = h["name"]?.string, let value = h["value"]?.string else {
                throw reader.fail("\(path)[\(i)]", "a header needs a string 'name' and 'value'")
            }
            if name.hasPrefix(":") { continue }
            out.append((name, value))
        }
        return out
    }

    /// One client's replay: its jar, and whether its engine is chosen (by `--engine`, or its first `User-Agent`).
    struct Replay {
        var cookies: ClientCookies
        var engineChosen: Bool
    }

    func replay() -> Replay {
        var cookies = ClientCookies(suffixes: suffixes, keepsCookies: true)
        if let engine { cookies.profile = .of(engine) }
        return Replay(cookies: cookies, engineChosen: engine != nil)
    }

    private func entry(
        _ e: JSONValue, index: Int, path: String, replay: inout Replay, summary: inout Summary,
        reader: JSONReader
    ) throws(JSONReader.Failure) -> EntryReport? {
        summary.entries += 1
        guard let request = e["request"], case .object = request else {
            throw reader.fail(path + ".request", "missing: every HAR entry has a request object")
        }
        guard let urlText = request["url"]?.string else {
            throw reader.fail(path + ".request.url", "missing: a request needs its URL")
        }
        let method = request["method"]?.string ?? "GET"
        let response = e["response"]
        let status = Int(response?["status"]?.int ?? 0)
        let requestHeaders = try Self.headers(request["headers"], path + ".request.headers", reader)
        if !replay.engineChosen, let agent = requestHeaders.first(where: { $0.0.lowercased() == "user-agent" }) {
            // Chosen before the client's first cookie is judged: one browser's recording is judged by one jar.
            replay.engineChosen = true
            let engine = CookieJar.Profile.engine(userAgent: agent.1)
            if let engine { replay.cookies.profile = .of(engine) }
            if !summary.engineChosen {
                summary.engineChosen = true
                if let engine { summary.engine = engine }
            }
        }
        let responseHeaders = try Self.headers(response?["headers"], path + ".response.headers", reader)
        if !(request["cookies"]?.array?.isEmpty ?? true) || !(response?["cookies"]?.array?.isEmpty ?? true) {
            summary.cookieArrays += 1
        }
        guard let url = RequestURL(urlText), ["http", "https", "ws", "wss"].contains(url.scheme) else {
            summary.skipped += 1
            return nil
        }
        let time = e["startedDateTime"]?.string.flatMap(Self.milliseconds) ?? 0
        let site = RequestSite.classify(
            url: url, method: method,
            headers: RequestSite.Headers(fields: requestHeaders.map { (name: $0.0, value: $0.1) }),
            suffixes: suffixes)
        let facts = ClientCookies.Request(
            id: UInt64(index), time: time, method: method, url: url, urlText: urlText, site: site)
        let cookieValues = requestHeaders.filter { $0.0.lowercased() == "cookie" }.map(\.1)
        if !cookieValues.isEmpty { summary.cookieHeaders += 1 }
        let header = cookieValues.isEmpty ? nil : CookieHeader(Array(cookieValues.joined(separator: "; ").utf8))
        let verdicts = replay.cookies.request(facts, cookieHeader: header)
        for v in verdicts { summary.verdicts[v.kind, default: 0] += 1 }
        // Firefox writes a response's Set-Cookie fields as one header, its values on lines of their own.
        let lines = responseHeaders.filter { $0.0.lowercased() == "set-cookie" }.flatMap {
            $0.1.split(separator: "\n", omittingEmptySubsequences: true).map { SetCookie(String($0)) }
        }
        var results: [SetCookieLine] = []
        var feed: [ClientCookies.SetLine] = []
        for line in lines {
            summary.setCookieLines += 1
            var forwarded: SetCookie? = line
            var rules: [String] = []
            if let transform {
                (forwarded, rules) = transform(line, facts, status)
                if forwarded?.bytes != line.bytes { summary.rulesChanged += 1 }
            }
            let findings =
                CookieLint.findings(for: forwarded ?? line, from: url, now: time / 1000, suffixes: suffixes)
                + CookieLint.siteFindings(for: forwarded ?? line, site: site.kind)
            for f in findings { summary.findings[f.severity, default: 0] += 1 }
            results.append(SetCookieLine(received: line, forwarded: forwarded, rules: rules, findings: findings))
            feed.append(.init(received: line, forwarded: forwarded, rules: rules))
        }
        let events = replay.cookies.response(facts, lines: feed)
        for (k, event) in events.enumerated() where k < results.count { results[k].event = event }
        return EntryReport(
            index: index, method: method, url: urlText, status: status, site: site, setCookies: results,
            verdicts: verdicts)
    }

    /// `2026-12-04T09:46:39.563Z` or with an offset (`+01:00`): milliseconds since the epoch (ISO 8601, as HAR
    /// writes startedDateTime).
    public static func milliseconds(_ s: String) -> Int64? {
        let b = Array(s.utf8)
        func num(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var v = 0
            for i in from..<(from + count) {
                guard b[i] &- 0x30 < 10 else { return nil }
                v = v * 10 + Int(b[i] - 0x30)
            }
            return v
        }
        guard b.count >= 19, let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2),
            let mi = num(14, 2), let sec = num(17, 2), (1...12).contains(mo), (1...31).contains(d)
        else { return nil }
        var i = 19
        var ms = 0
        if i < b.count && b[i] == 0x2E {
            i += 1
            var scale = 100
            while i < b.count && b[i] &- 0x30 < 10 {
                ms += Int(b[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
        }
        var offset = 0
        if i < b.count && (b[i] == 0x2B || b[i] == 0x2D), let oh = num(i + 1, 2) {
            let om = num(i + 4, 2) ?? num(i + 3, 2) ?? 0
            offset = (oh * 60 + om) * 60 * (b[i] == 0x2B ? 1 : -1)
        }
        // Days from the civil date (Howard Hinnant's algorithm).
        let yy = mo <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let seconds = Int64(days) * 86_400 + Int64(h * 3600 + mi * 60 + sec) - Int64(offset)
        return seconds * 1000 + Int64(ms)
    }
}
