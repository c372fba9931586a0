import CookieInspector
import CookieKit
import CookieLifecycle
import CookieRules
import ExchangeFacts
import Foundation
import HTTPGrammar
import HTTPHeads
import Locking
import ProxyCore

/// The rules plugged into the proxy: which tunnels are intercepted, the request side of the cookie stage
/// (``forwardRequest(_:context:time:lintsLines:facts:)``), and each event loop's ``CookieStage`` (made by ``makeStage()``), which runs
/// the response side and tells the observers every step. The rule set can be swapped at any time (hot reload); each
/// message uses the set that was current when its head arrived.
package final class RulesHooks: ProxyHooks, Sendable {
    private let engine: Locked<RuleEngine>
    let dryRun: Bool
    /// Each request's site context, and with `lifecycle` each client's cookies across requests.
    let tracker: LifecycleTracker
    /// Whether requests are judged against the client's jar (expected vs sent) and responses fed to it.
    let lifecycle: Bool
    /// What is told every step of every exchange (``ExchangeObserver``), in order.
    let observers: [any ExchangeObserver]
    /// What the exit line says (`N cookies rewritten · M seen`): Set-Cookie lines the stages read, and those a rule
    /// rewrote or dropped (not in a dry run). The stage's own count of its work, not an observer's: with no rule and
    /// no observer a line is not read at all.
    package let seen = AtomicCounter()
    package let changed = AtomicCounter()
    /// Exchanges cut short (a body ended early by either side, not by a deadline), noted as they end for stderr and
    /// the log (``takeCuts()``), and counted for the exit summary.
    private let cuts = Locked(Cuts())

    /// Cut exchanges waiting to be said: at most ``Cuts/limit`` between two takes, the rest counted.
    struct Cuts {
        static let limit = 100
        var notes: [Cut] = []
        var leftOut = 0
        var total = 0
    }

    /// One exchange cut short: `GET http://…`, its client, its request id, why, and the body bytes relayed.
    package struct Cut: Sendable {
        package var exchange: String
        package var client: String
        package var requestID: UInt64
        package var why: String
        package var bodyBytes: Int
    }

    /// Notes an exchange that ended cut short (``ExchangeEnd/cut``; nil: a deadline, noted as a closing).
    func noteCut(_ context: ExchangeContext, _ end: ExchangeEnd) {
        guard end.ending == .cut, let why = end.cut else { return }
        let cut = Cut(
            exchange: "\(context.method) \(context.url)", client: context.clientAddress, requestID: context.requestID,
            why: why, bodyBytes: end.bodyBytes)
        cuts.withLock { c in
            c.total += 1
            if c.notes.count < Cuts.limit { c.notes.append(cut) } else { c.leftOut += 1 }
        }
    }

    /// The cuts noted since the last call, and how many more there were (past the limit).
    package func takeCuts() -> (notes: [Cut], leftOut: Int) {
        cuts.withLock { c in
            defer { (c.notes, c.leftOut) = ([], 0) }
            return (c.notes, c.leftOut)
        }
    }

    /// Exchanges cut short since the start.
    package var cutCount: Int { cuts.withLock { $0.total } }

    /// Hosts named with --intercept / --intercept-all.
    let interceptFlags: HostPatternList
    /// Hosts the current rules target (their non-negated `host` conditions).
    private let ruleHosts: Locked<HostPatternList>

    package init(
        engine: RuleEngine, dryRun: Bool, intercept: HostPatternList, lifecycle: Bool = false,
        tracker: LifecycleTracker = LifecycleTracker(), observers: [any ExchangeObserver] = []
    ) {
        self.engine = Locked(engine)
        self.observers = observers
        self.lifecycle = lifecycle
        self.tracker = tracker
        self.dryRun = dryRun
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

    /// What the request side found (``forwardRequest(_:context:time:lintsLines:facts:)``), for the observers.
    struct RequestFacts {
        var cookieEdits: [RequestCookieChange] = []
        var judged: RequestJudgement? = nil
        var site: RequestSite? = nil
        var client: String? = nil
    }

    /// The request side of the cookie stage: the request's site context and, with the lifecycle on, its cookies
    /// judged against the client's jar (RFC 6265bis §5.2); then header actions, `request-cookie` rules and renames
    /// undone, on the head as it will go upstream. Returns the rule set it used; what it found is in `facts`.
    /// `lintsLines`: some observer of the loop reads lines (the log, the inspector, a report, the site audit's
    /// recorder), whose findings include the site lint.
    func forwardRequest(
        _ head: inout OutgoingHead, context: ExchangeContext, time: Int64, lintsLines: Bool = false,
        facts: inout RequestFacts
    ) -> RuleEngine {
        let engine = current
        // The site context (RFC 6265bis §5.2) when the lifecycle, a `site` condition or the lint reads it (a line's
        // site findings, cross-site-samesite and the like, are the only explanation of a browser's silent refusal:
        // they do not wait for the lifecycle); kept for the response by the tracker.
        if lifecycle || engine.readsSite || lintsLines {
            let s = tracker.site(of: head.source, context: context)
            facts.site = s
            if lifecycle {
                // Judged on the Cookie header as the client sent it: the browser's behaviour, before any rule.
                let r = tracker.request(head: head.source, context: context, site: s, time: time)
                facts.client = r.client
                if !r.verdicts.isEmpty { facts.judged = r }
            } else if engine.readsSite {
                let client = tracker.client(of: head.source, address: context.clientAddress)
                facts.client = client
                tracker.note(context.requestID, client: client, site: s)
            } else if s.kind != .unknown {
                // For the lint alone: a request no header places (nearly every non-browser client's) has no site
                // finding to give, and is not noted (the response reads no site, as for unknown).
                tracker.note(context.requestID, client: context.clientAddress, site: s)
            }
        }
        guard engine.touchesRequests else { return engine }
        var message = MessageContext(context)
        message.site = facts.site?.kind
        if !dryRun { Self.applyHeaderActions(engine.requestHeaderActions(message), to: &head) }
        if engine.editsRequestCookies {
            facts.cookieEdits = editRequestCookies(
                &head, engine: engine, context: context, message: message,
                client: facts.client ?? context.clientAddress, time: time)
        }
        guard !dryRun else { return engine }
        for index in head.indices(of: .cookie) {
            if let renamed = engine.renameBack(cookieHeader: head.value(at: index), context: message) {
                head.replaceValue(at: index, with: renamed)
            }
        }
        return engine
    }

    /// `request-cookie` actions: each Cookie field edited in place (an emptied field removed, a field added for a
    /// cookie set on a request without one); the changes returned for the observers (in a dry run, returned and not
    /// made).
    private func editRequestCookies(
        _ head: inout OutgoingHead, engine: RuleEngine, context: ExchangeContext, message: MessageContext,
        client: String, time: Int64
    ) -> [RequestCookieChange] {
        let indices = head.indices(of: .cookie)
        var headers = indices.map { CookieHeader(head.valueBytes(at: $0)) }
        let jar = lifecycle ? tracker.jarCookie(client: client, context: context, time: time) : nil
        let changes = engine.editRequestCookies(&headers, context: message, jar: jar)
        guard !changes.isEmpty, !dryRun else { return changes }
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
        return changes
    }

    /// The cookie stage of one event loop.
    package func makeStage() -> any ExchangeStage { CookieStage(hooks: self) }

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
