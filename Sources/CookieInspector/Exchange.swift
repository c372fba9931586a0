import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import HTTPGrammar
import HTTPHeads
import Locking

/// One recorded exchange: what the proxy saw, as it saw it, and (computed on first look) what that means.
public final class Exchange: Sendable {
    public let sequence: UInt64
    public let context: ExchangeContext
    let record: Record
    public let requestTime: Int64
    public let responseTime: Int64
    /// The rule set in force for this response (its rules' names and places, for the transformations).
    let engine: RuleEngine
    public let dryRun: Bool
    /// The outcomes the record's bytes cannot hold (rules past the 64th, notes, a dry run's would-be line).
    let rest: [LineEdit.Rest]
    /// The lifecycle's verdicts on the request's cookies (nil with `--lifecycle off`).
    public let judgement: RequestJudgement?
    /// The request's site context (nil when nothing worked it out).
    public let site: RequestSite.Kind?
    /// The client as the lifecycle tells clients apart (`--client-by`): its address, with its engine on loopback,
    /// or a header's value.
    public let client: String
    /// What the list shows, computed on first look and kept (a few hundred bytes; the whole analysis is several
    /// kilobytes and is computed again when asked for). Guarded by one lock for all exchanges (a lock each would
    /// cost every recording an allocation and a mutex initialisation, for something only a viewer contends for).
    nonisolated(unsafe) private var summarised: Summary?
    private static let summaryLock = Locked(())

    /// The three heads back to back in one buffer, and for each forwarded Set-Cookie line the received field it
    /// came from (two bytes each, big-endian; 0xFFFF for a line the proxy added).
    struct Record: Sendable {
        var bytes: [UInt8]
        var request: Range<Int>
        /// The request head as it went upstream (empty when it is not known).
        var sent: Range<Int>
        var received: Range<Int>
        var forwarded: Range<Int>
        var origins: Range<Int>
        var outcomes: Range<Int>

        /// `request`: the request head's bytes as the client sent them; `sent`: as they went upstream (empty: not
        /// known); `forwarded`: `response` as the proxy wrote it.
        init(
            request: ArraySlice<UInt8>, sent: ArraySlice<UInt8> = [], response: OutgoingHead,
            forwarded head: ArraySlice<UInt8>, edits: borrowing LineEdits
        ) {
            // The origins and outcomes are written on the stack in one pass over the head's lines, then the buffer
            // is made at its exact size and filled with four appends (appending them byte by byte cost more than
            // the copies; an array made with `unsafeUninitializedCapacity` looked its type's metadata up at run
            // time each time).
            var bytes: [UInt8] = []
            var origins = 0..<0
            var outcomes = 0..<0
            let (requestCount, receivedCount) = (request.count + sent.count, response.source.bytes.count)
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, 2 * response.count + 11 * edits.count)) {
                tail in
                let start = tail.baseAddress!
                var p = start
                for index in 0..<response.count where response.name(at: index, is: .setCookie) {
                    let origin: Int
                    switch response.lines[index] {
                    case .original(let i), .edited(let i, _): origin = i
                    case .written: origin = 0xFFFF
                    }
                    p[0] = UInt8(truncatingIfNeeded: origin >> 8)
                    p[1] = UInt8(truncatingIfNeeded: origin)
                    p += 2
                }
                let originBytes = p - start
                // Each outcome in 11 bytes: the field (2), the first 64 rules' bits (8, big-endian), flags (1).
                for e in edits.lines[0..<edits.count] {
                    p[0] = UInt8(truncatingIfNeeded: e.field >> 8)
                    p[1] = UInt8(truncatingIfNeeded: e.field)
                    UnsafeMutableRawPointer(p + 2).storeBytes(of: e.matchedLow.bigEndian, as: UInt64.self)
                    p[10] = (e.dropped ? 1 : 0) | (e.logRequested ? 2 : 0) | (e.hasRest ? 4 : 0)
                    p += 11
                }
                let headsEnd = requestCount + receivedCount + head.count
                origins = headsEnd..<(headsEnd + originBytes)
                outcomes = origins.upperBound..<(headsEnd + (p - start))
                bytes.reserveCapacity(outcomes.upperBound)
                bytes.append(contentsOf: request)
                bytes.append(contentsOf: sent)
                bytes.append(contentsOf: response.source.bytes)
                bytes.append(contentsOf: head)
                bytes.append(contentsOf: UnsafeBufferPointer(start: start, count: p - start))
            }
            self.request = 0..<request.count
            self.sent = request.count..<requestCount
            received = requestCount..<(requestCount + receivedCount)
            forwarded = received.upperBound..<(received.upperBound + head.count)
            self.origins = origins
            self.outcomes = outcomes
            self.bytes = bytes
        }
    }

    init(
        sequence: UInt64, context: ExchangeContext, record: Record, requestTime: Int64, responseTime: Int64,
        engine: RuleEngine, dryRun: Bool, rest: [LineEdit.Rest] = [], judgement: RequestJudgement? = nil,
        site: RequestSite.Kind? = nil, client: String? = nil
    ) {
        self.client = client ?? context.clientAddress
        self.rest = rest
        self.judgement = judgement
        self.site = site
        self.sequence = sequence
        self.context = context
        self.record = record
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.engine = engine
        self.dryRun = dryRun
    }

    static func parse(_ bytes: ArraySlice<UInt8>) -> HTTPHead {
        let copy = Array(bytes)
        return (try? HTTPHeadParser().parseHead(copy)) ?? HTTPHead(bytes: copy, startLine: 0..<0, fields: [])
    }

    /// The request head as the client sent it.
    public var request: HTTPHead { Self.parse(record.bytes[record.request]) }
    /// The request head as it went upstream: a route's target and Host, `X-Forwarded-*`, `Via`, and what header
    /// actions and `request-cookie` rules changed (nil when it is not known).
    public var sent: HTTPHead? { record.sent.isEmpty ? nil : Self.parse(record.bytes[record.sent]) }
    /// The response head as the upstream sent it.
    public var received: HTTPHead { Self.parse(record.bytes[record.received]) }
    /// The response head as the client received it.
    public var forwarded: HTTPHead { Self.parse(record.bytes[record.forwarded]) }
    /// The response head bytes the client received.
    public var forwardedHead: [UInt8] { Array(record.bytes[record.forwarded]) }

    /// How the proxy decided each received Set-Cookie line (by received field): the rules' outcome and a dry run's
    /// would-be line.
    var edits: [(field: Int, edit: RuleEngine.Edit, wouldBe: [UInt8]?)] {
        var r = 0
        return stride(from: record.outcomes.lowerBound, to: record.outcomes.upperBound, by: 11).map { at in
            let b = record.bytes
            let field = Int(b[at]) << 8 | Int(b[at + 1])
            if b[at + 10] & 4 != 0, r < rest.count {
                r += 1
                return (field, rest[r - 1].edit, rest[r - 1].wouldBe)
            }
            let low = b[(at + 2)..<(at + 10)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let edit = RuleEngine.Edit(matchedLow: low, dropped: b[at + 10] & 1 != 0, logRequested: b[at + 10] & 2 != 0)
            return (field, edit, nil)
        }
    }

    /// For each forwarded Set-Cookie line, in order: the received field it came from, or nil for an added one.
    var origins: [Int?] {
        stride(from: record.origins.lowerBound, to: record.origins.upperBound, by: 2).map {
            let v = Int(record.bytes[$0]) << 8 | Int(record.bytes[$0 + 1])
            return v == 0xFFFF ? nil : v
        }
    }

    /// The request URL as a browser's jar sees it.
    public var requestURL: RequestURL { context.requestURL }

    /// Each line as received and forwarded, with the rules' outcome and the lint: computed each time.
    public var analysis: Analysis { Analysis(self) }

    public var summary: Summary {
        if let done = Self.summaryLock.withLock({ _ in summarised }) { return done }
        let result = Summary(analysis)
        Self.summaryLock.withLock { _ in summarised = result }
        return result
    }

    /// The row of the live list.
    public struct Summary: Sendable {
        public var setCookies: [String]
        public var sentCookies: [String]
        public var rules: [String]
        /// Each rule name once per line it matched (the rules view's counts).
        public var ruleMatches: [String]
        public var changed: Bool
        public var findings: [String]
        public var severity: [LintFinding.Severity: Int]

        init(_ a: Analysis) {
            setCookies = a.cookies.map(\.name)
            sentCookies = a.requestCookies.flatMap { InspectorViews.pairs($0).map(\.name) }
            rules = a.ruleNames
            ruleMatches = a.cookies.flatMap(\.rules)
            changed = a.cookies.contains { !$0.changes.isEmpty }
            findings = Array(Set(a.cookies.flatMap { $0.findings.map(\.code) })).sorted()
            var counts: [LintFinding.Severity: Int] = [:]
            for finding in a.cookies.flatMap(\.findings) { counts[finding.severity, default: 0] += 1 }
            severity = counts
        }
    }

    /// Each Set-Cookie line: as received, as forwarded, and what the rules and the lint say about it.
    public struct Analysis: Sendable {
        public var cookies: [CookieLine]
        /// Set-Cookie lines the proxy added (a rule's `add header`), not received.
        public var added: [SetCookie]
        /// The values of the request's Cookie fields, as the client sent them.
        public var requestCookies: [String]
        /// The most severe finding among the forwarded lines, if any.
        public var worst: LintFinding.Severity?
        /// The rules that matched any line, each once, in file order (as each line's rules and the log's are).
        public var ruleNames: [String] {
            let matched = Set(cookies.flatMap(\.rules))
            return ruleOrder.filter(matched.contains)
        }
        /// The rule set's cookie rules in file order.
        let ruleOrder: [String]

        init(_ e: Exchange) {
            ruleOrder = e.engine.cookieRuleNameTable
            let source = e.received
            let forwardedHead = e.forwarded
            // Which received field each forwarded line came from.
            var forwarded: [Int: SetCookie] = [:]
            var added: [SetCookie] = []
            let origins = e.origins
            for (k, field) in forwardedHead.fields.filter({ $0.known == .setCookie }).enumerated() {
                let value = SetCookie(bytes: Array(forwardedHead.valueBytes(field)))
                if k < origins.count, let i = origins[k] { forwarded[i] = value } else { added.append(value) }
            }
            let url = e.requestURL
            let now = e.responseTime / 1000
            var lines: [CookieLine] = []
            let edits = e.edits
            for (i, field) in source.fields.enumerated() where field.known == .setCookie {
                let received = SetCookie(bytes: Array(source.valueBytes(field)))
                // The outcome the proxy decided for this line (no rule ran on it: nothing matched).
                let noted = edits.first { $0.field == i }
                let edit = noted?.edit ?? .untouched
                let sent = e.dryRun ? received : forwarded[i]
                let edited = e.dryRun ? noted?.wouldBe.map { SetCookie(bytes: $0) } ?? received : sent ?? received
                let transformation = e.engine.transformation(received: received, edited: edited, edit)
                let judged = sent ?? transformation.result ?? received
                lines.append(
                    CookieLine(
                        transformation: transformation, forwarded: sent, dryRun: e.dryRun,
                        findings: CookieLint.findings(for: judged, from: url, now: now)
                            + CookieLint.siteFindings(for: judged, site: e.site)))
            }
            cookies = lines
            self.added = added
            let request = e.request
            requestCookies = request.fields.filter { $0.known == .cookie }.map {
                String(decoding: request.valueBytes($0), as: UTF8.self)
            }
            worst = (lines.flatMap(\.findings) + added.flatMap { CookieLint.findings(for: $0, from: url, now: now) })
                .map(\.severity).min()
        }
    }

    /// A received line's ``Transformation`` (made from the proxy's own outcome) as the inspector shows it.
    public struct CookieLine: Sendable {
        public var transformation: Transformation
        /// Nil when a rule dropped it.
        public var forwarded: SetCookie?
        /// In a dry run, what the rules would have sent (nil: dropped); nil otherwise.
        public var wouldBe: SetCookie?
        /// The lint of what the client got (of the received line when dropped).
        public var findings: [LintFinding]
        /// The attribute-level changes: what the rules did (or would have done, in a dry run).
        public var changes: [AttributeChange]

        init(transformation t: Transformation, forwarded: SetCookie?, dryRun: Bool, findings: [LintFinding]) {
            transformation = t
            self.forwarded = forwarded
            wouldBe = dryRun ? t.result : nil
            self.findings = findings
            changes = t.changes
        }

        public var received: SetCookie { transformation.received }
        public var rules: [String] { transformation.rules }
        public var notes: [String] { transformation.notes }
        public var name: String { received.name }
    }
}
