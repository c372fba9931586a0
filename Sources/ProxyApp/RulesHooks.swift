import CookieInspector
import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import Foundation
import HTTPGrammar
import Locking
import ProxyCore

/// The rules plugged into the proxy's message heads: the request side here, the response side in each event loop's
/// ``CookieStage`` (made by ``makeResponseStage()``), and the observers both tell what happened to cookies. The rule
/// set can be swapped at any time (hot reload); each message uses the set that was current when its head arrived.
package final class RulesHooks: ProxyHooks, Sendable {
    private let engine: Locked<RuleEngine>
    let dryRun: Bool
    let sink: LogSink?
    /// The inspector's exchanges (nil with `--ui off`).
    let inspector: InspectorStore?
    /// Each request's site context, and with `lifecycle` each client's cookies across requests.
    let tracker: LifecycleTracker
    /// Whether requests are judged against the client's jar (expected vs sent) and responses fed to it.
    let lifecycle: Bool
    /// Set-Cookie lines a rule rewrote or dropped.
    package let rewritten = AtomicCounter()
    /// Cookies of requests' Cookie headers a request-cookie rule removed, set, added or renamed.
    package let requestCookiesChanged = AtomicCounter()
    package let observed = AtomicCounter()
    /// `run --report`: findings and verdicts for CI (nil without it).
    let report: RunReport?
    /// Transformations by rule and verdicts by kind and reason, for the metrics (nil without `--metrics`).
    package let counts: CookieCounts?
    /// What is told each line's outcome and each request's verdicts: the log, the inspector, the lifecycle, the
    /// report, the counts, and any given to ``init``, in that order.
    let observers: [any CookieObserver]
    /// Those of ``observers`` told each request's judgement.
    let judges: [any JudgementObserver]
    /// Responses by protocol, mode and status class, for the metrics (nil without `--metrics`).
    let responses: ResponseCounts?
    /// A line per exchange (`--access-log`; nil without it).
    let accessLog: AccessLog?

    /// Hosts named with --intercept / --intercept-all.
    let interceptFlags: HostPatternList
    /// Hosts the current rules target (their non-negated `host` conditions).
    private let ruleHosts: Locked<HostPatternList>

    package init(
        engine: RuleEngine, dryRun: Bool, sink: LogSink?, intercept: HostPatternList,
        inspector: InspectorStore? = nil, lifecycle: Bool = false, tracker: LifecycleTracker = LifecycleTracker(),
        responses: ResponseCounts? = nil, report: RunReport? = nil, observers: [any CookieObserver] = [],
        accessLog: AccessLog? = nil
    ) {
        self.engine = Locked(engine)
        self.responses = responses
        self.accessLog = accessLog
        let counts = responses == nil ? nil : CookieCounts()
        self.counts = counts
        let builtIn: [(any CookieObserver)?] = [
            sink, inspector.map { InspectorObserver(store: $0, tracker: lifecycle ? tracker : nil) },
            lifecycle ? LifecycleObserver(tracker: tracker) : nil, report, counts,
        ]
        self.observers = builtIn.compactMap { $0 } + observers
        judges = self.observers.compactMap { $0 as? any JudgementObserver }
        self.report = report
        self.lifecycle = lifecycle
        self.tracker = tracker
        self.dryRun = dryRun
        self.sink = sink
        self.inspector = inspector
        self.interceptFlags = intercept
        self.ruleHosts = Locked(Self.targetedHosts(engine.ruleSet))
    }

    package var current: RuleEngine { engine.withLock { $0 } }
    package func replace(_ new: RuleEngine) {
        let hosts = Self.targetedHosts(new.ruleSet)
        engine.withLock { $0 = new }
        ruleHosts.withLock { $0 = hosts }
    }

    /// The hosts a rule set names in non-negated `host` conditions (`host *` names every host).
    static func targetedHosts(_ set: RuleSet) -> HostPatternList {
        var list = HostPatternList()
        for rule in set.rules {
            for case let condition in rule.conditions where !condition.negated {
                guard case .host(let patterns) = condition.test else { continue }
                for p in patterns {
                    switch p {
                    case .exact(let h): _ = list.add(h)
                    case .subdomains(let suffix, _): _ = list.add("*." + suffix)
                    case .any: list.all = true
                    }
                }
            }
        }
        return list
    }

    /// What is intercepted, for the banner.
    var interceptDescription: String {
        var parts: [String] = []
        if !interceptFlags.isEmpty { parts.append(interceptFlags.description) }
        let fromRules = ruleHosts.withLock { $0 }
        if !fromRules.isEmpty { parts.append("\(fromRules.description) (targeted by rules)") }
        return parts.joined(separator: "; ")
    }

    var wantsInterception: Bool { !interceptFlags.isEmpty || !ruleHosts.withLock { $0.isEmpty } }

    package func shouldIntercept(host: String, port: Int) -> Bool {
        interceptFlags.matches(host) || ruleHosts.withLock { $0.matches(host) }
    }

    package func willForwardRequest(_ head: inout OutgoingHead, context: ExchangeContext) {
        responses?.requestForwarded(context.requestID)
        accessLog?.requestForwarded(context.requestID, head: head.source)
        let engine = current
        let time = inspector != nil || lifecycle || sink != nil ? Self.wallMilliseconds() : 0
        if let inspector {
            inspector.requestForwarded(id: context.requestID, head: head.source, time: time)
        }
        // The site context (RFC 6265bis §5.2) when the lifecycle or a `site` condition reads it; kept for the
        // response by the tracker.
        var site: RequestSite? = nil
        var judgedClient: String? = nil
        if lifecycle || engine.readsSite {
            let s = tracker.site(of: head.source, context: context)
            site = s
            if lifecycle {
                // Judged on the Cookie header as the client sent it: the browser's behaviour, before any rule. The
                // log gets the requests where something was not as expected (all of their verdicts).
                let r = tracker.request(head: head.source, context: context, site: s, time: time)
                judgedClient = r.client
                if !r.verdicts.isEmpty {
                    for judge in judges { judge.observe(judged: r, context: context, time: time) }
                }
            } else {
                let client = tracker.client(of: head.source, address: context.clientAddress)
                judgedClient = client
                tracker.note(context.requestID, client: client, site: s)
            }
        }
        guard engine.touchesRequests else { return }
        var message = MessageContext(context)
        message.site = site?.kind
        if !dryRun { Self.applyHeaderActions(engine.requestHeaderActions(message), to: &head) }
        if engine.editsRequestCookies {
            editRequestCookies(
                &head, engine: engine, context: context, message: message,
                client: judgedClient ?? context.clientAddress, site: site, time: time)
        }
        guard !dryRun else { return }
        for index in head.indices(of: .cookie) {
            if let renamed = engine.renameBack(cookieHeader: head.value(at: index), context: message) {
                head.replaceValue(at: index, with: renamed)
            }
        }
    }

    /// `request-cookie` actions: each Cookie field edited in place (an emptied field removed, a field added for a
    /// cookie set on a request without one); each change logged (in a dry run, logged and not made).
    private func editRequestCookies(
        _ head: inout OutgoingHead, engine: RuleEngine, context: ExchangeContext, message: MessageContext,
        client: String, site: RequestSite?, time: Int64
    ) {
        let indices = head.indices(of: .cookie)
        var headers = indices.map { CookieHeader(head.valueBytes(at: $0)) }
        let jar = lifecycle ? tracker.jarCookie(client: client, context: context, time: time) : nil
        let changes = engine.editRequestCookies(&headers, context: message, jar: jar)
        guard !changes.isEmpty else { return }
        if let sink {
            sink.submit(
                records: LifecycleLog.requestCookieRecords(
                    changes, context: context, client: client, time: time, dryRun: dryRun,
                    redaction: sink.redaction),
                count: changes.count)
        }
        requestCookiesChanged.add(changes.count)
        guard !dryRun else { return }
        for (k, index) in indices.enumerated().reversed() {
            if headers[k].bytes.isEmpty {
                head.remove(at: index)
            } else if !headers[k].bytes.elementsEqual(head.valueBytes(at: index)) {
                head.replaceValue(at: index, with: headers[k].bytes)
            }
        }
        if indices.isEmpty, let added = headers.first, !added.bytes.isEmpty {
            head.append(name: "Cookie", value: added.bytes)
        }
    }

    /// The cookie stage of one event loop.
    package func makeResponseStage() -> any ResponseStage { CookieStage(hooks: self) }

    package func exchangeEnded(_ context: ExchangeContext, bodyBytes: Int, _ ending: ExchangeEnding) {
        if ending == .relayed { responses?.exchangeFinished(context.requestID) }
        accessLog?.exchangeEnded(context, bodyBytes: bodyBytes, time: Self.wallMilliseconds())
    }

    /// Milliseconds since the epoch, from clock_gettime (Foundation's Date costs several times as much).
    static func wallMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    static func applyHeaderActions(_ actions: [HeaderAction], to head: inout OutgoingHead) {
        for action in actions {
            switch action {
            case .set(let name, let value):
                head.removeAll(name.lowercased())
                head.append(name: name, value: value)
            case .add(let name, let value):
                head.append(name: name, value: value)
            case .remove(let name):
                head.removeAll(name.lowercased())
            }
        }
    }
}
