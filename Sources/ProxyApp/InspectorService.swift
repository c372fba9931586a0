import BuildVersion
import HTTPGrammar
import CookieInspector
import CookieKit
import CookieLifecycle
import CookieRules
import Dispatch
import Foundation
import JSONStream
import Locking
import ProxyServer

/// The inspector's web service, answered on the proxy's first event loop: the page, its read-only API, HAR, and
/// (for requests through the proxy to `cookie-proxy.local`) the onboarding pages. Every inspector request needs
/// the installation's token and must name the inspector's own address in Host (DNS rebinding); the onboarding
/// pages need neither, and serve only the CA certificate, never a key.
final class InspectorService: LocalService {
    static let version = cookieProxyBuildVersion
    static let cookieName = "cookie-proxy-inspector"

    let store: InspectorStore
    let views: InspectorViews
    let token: String
    /// `host:port` spellings a browser may send in Host for the inspector (set once the port is bound).
    private let ownHosts = Locked<Set<String>>([])
    package let rules: @Sendable () -> RuleSet
    package let reloadStatus: @Sendable () -> JSONValue
    /// The CA certificate (PEM, DER) when https interception is on; the onboarding page names no CA otherwise.
    let caCertificate: (pem: [UInt8], der: [UInt8], name: String)?
    let onboardingHost: String
    /// False with `--ui off`: only the onboarding pages are served.
    let inspectorEnabled: Bool
    private let feed: Feed
    /// Each client's cookies across requests (nil with `--lifecycle off`).
    let lifecycle: LifecycleTracker?

    init(
        store: InspectorStore, redaction: Redaction, token: String, rules: @escaping @Sendable () -> RuleSet,
        reloadStatus: @escaping @Sendable () -> JSONValue, caCertificate: (pem: [UInt8], der: [UInt8], name: String)?,
        onboardingHost: String = "cookie-proxy.local", inspectorEnabled: Bool = true, lifecycle: LifecycleTracker? = nil
    ) {
        self.lifecycle = lifecycle
        self.inspectorEnabled = inspectorEnabled
        self.store = store
        self.views = InspectorViews(redaction: redaction)
        self.token = token
        self.rules = rules
        self.reloadStatus = reloadStatus
        self.caCertificate = caCertificate
        self.onboardingHost = onboardingHost
        feed = Feed(store: store, views: views)
    }

    /// The address the inspector answers on: `host` as given (or its loopback spellings) with `port`.
    func bound(host: String, port: Int) {
        var names: Set<String> = []
        let hosts =
            host == "127.0.0.1" || host == "0.0.0.0"
            ? ["127.0.0.1", "localhost"] : host == "::1" || host == "::" ? ["[::1]", "localhost"] : [host]
        for h in hosts + (host == "0.0.0.0" || host == "::" ? ServerConfiguration.networkAddresses() : []) {
            names.insert(HostPort.format(h, port).lowercased())
        }
        ownHosts.withLock { $0 = names }
    }

    func respond(_ request: LocalRequest) -> LocalResponse {
        let host = (request.field("host") ?? "").lowercased()
        if host == onboardingHost || host == onboardingHost + ":80" { return onboarding(request) }
        guard inspectorEnabled else { return .text(404, "the inspector is off (--ui off)") }
        guard ownHosts.withLock({ $0.contains(host) }) else {
            // DNS rebinding: a page elsewhere whose name now points here must not read the inspector.
            return .text(403, "refused: Host '\(host)' is not this inspector's address")
        }
        let query = request.query
        let presented =
            query["token"] ?? request.field("authorization").flatMap {
                $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil
            }
            ?? cookieToken(request.field("cookie"))
        guard let presented else {
            return .text(401, "this inspector needs its token: open the URL cookie-proxy run printed (…/?token=…)")
        }
        guard Self.constantTimeEqual(presented, token) else { return .text(403, "wrong token") }
        if query["token"] != nil && (request.path == "/" || request.path == "/index.html") {
            // The token leaves the address bar for a cookie only this origin sends (and scripts cannot read).
            return LocalResponse(
                status: 302,
                fields: [
                    ("Location", "/"),
                    ("Set-Cookie", "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict"),
                ])
        }
        return inspector(request)
    }

    private func cookieToken(_ header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix(Self.cookieName + "=") { return String(trimmed.dropFirst(Self.cookieName.count + 1)) }
        }
        return nil
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }

    static func json(_ value: JSONValue, status: Int = 200) -> LocalResponse {
        var response = LocalResponse.ok("application/json; charset=utf-8", Array(value.serialized.utf8))
        response.status = status
        return response
    }

    private func inspector(_ request: LocalRequest) -> LocalResponse {
        let path = request.path
        let query = request.query
        switch path {
        case "/", "/index.html":
            return .ok(
                "text/html; charset=utf-8", Array(InspectorPage.html.utf8),
                [
                    (
                        "Content-Security-Policy",
                        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
                    ),
                    ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"),
                ])
        case "/app.js":
            return .ok("text/javascript; charset=utf-8", Array(InspectorPage.script.utf8))
        case "/app.css":
            return .ok("text/css; charset=utf-8", Array(InspectorPage.style.utf8))
        case "/favicon.svg", "/favicon.ico":
            return .ok("image/svg+xml", Array(InspectorPage.favicon.utf8))
        case "/api/exchanges":
            let after = UInt64(query["after"] ?? "") ?? 0
            return Self.json(.array(store.exchanges(after: after).map(views.row)))
        case "/api/events":
            let stream = feed.subscribe()
            var response = LocalResponse.ok(
                "text/event-stream; charset=utf-8", Array(": cookie-proxy inspector\nretry: 2000\n\n".utf8))
            response.stream = stream
            return response
        case "/api/clients":
            return Self.json(.array(InspectorViews.clients(store.exchanges()).map { .string($0) }))
        case "/api/jar":
            let exchanges = store.exchanges()
            guard let client = query["client"] ?? InspectorViews.clients(exchanges).last else {
                return Self.json(.object([("client", .null), ("cookies", .array([])), ("rejected", .array([]))]))
            }
            var url: RequestURL? = nil
            if let text = query["url"], !text.isEmpty {
                guard let parsed = RequestURL(text) else {
                    return Self.json(.object([("error", .string("'\(text)' is not an absolute URL"))]), status: 400)
                }
                url = parsed
            }
            return Self.json(
                views.jar(exchanges, client: client, url: url, now: Int64(Date().timeIntervalSince1970 * 1000)))
        case "/api/rules":
            return Self.json(
                .object([
                    ("rules", views.rules(rules(), exchanges: store.exchanges())),
                    ("reload", reloadStatus()),
                    ("held", .int(Int64(store.count))), ("capacity", .int(Int64(store.capacity))),
                ]))
        case "/har":
            return .ok(
                "application/json; charset=utf-8", views.harBytes(store.exchanges(), version: Self.version),
                [("Content-Disposition", "attachment; filename=\"cookie-proxy.har\"")])
        default:
            if path.hasPrefix("/api/cookies/") {
                // A cookie's timeline: /api/cookies/NAME[?client=…] (every client when none is named).
                let name = String(
                    decoding: PercentEncoding.decode(path.utf8.dropFirst("/api/cookies/".utf8.count), invalid: .keep)
                        ?? [], as: UTF8.self)
                guard !name.isEmpty else {
                    return Self.json(.object([("error", "name a cookie: /api/cookies/NAME")]), status: 400)
                }
                guard let lifecycle else {
                    return Self.json(
                        .object([("error", "the lifecycle is off (run --lifecycle on)")]), status: 404)
                }
                let client = query["client"].flatMap { $0.isEmpty ? nil : $0 }
                return Self.json(views.timeline(name: name, events: lifecycle.timeline(name: name, client: client)))
            }
            if path.hasPrefix("/api/exchanges/"), let seq = UInt64(path.dropFirst("/api/exchanges/".count)) {
                guard let e = store.exchange(sequence: seq) else {
                    return Self.json(.object([("error", "no such exchange (no longer held?)")]), status: 404)
                }
                return Self.json(views.detail(e, rules: rules()))
            }
            return .text(404, "no such page")
        }
    }

    // MARK: Onboarding (http://cookie-proxy.local/ through the proxy)

    private func onboarding(_ request: LocalRequest) -> LocalResponse {
        switch request.path {
        case "/", "/index.html":
            return .ok(
                "text/html; charset=utf-8", Array(Onboarding.page(caName: caCertificate?.name).utf8),
                [("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")])
        case "/ca.pem", "/ca.der", "/ca.mobileconfig":
            guard let ca = caCertificate else {
                return .text(404, "https interception is off: there is no CA to install")
            }
            func download(_ type: String, _ file: String, _ body: [UInt8]) -> LocalResponse {
                .ok(type, body, [("Content-Disposition", "attachment; filename=\"\(file)\"")])
            }
            switch request.path {
            case "/ca.pem": return download("application/x-pem-file", "cookie-proxy-ca.pem", ca.pem)
            case "/ca.der": return download("application/x-x509-ca-cert", "cookie-proxy-ca.cer", ca.der)
            default:
                return download(
                    "application/x-apple-aspen-config", "cookie-proxy-ca.mobileconfig",
                    Array(Onboarding.mobileconfig(der: ca.der, name: ca.name).utf8))
            }
        default:
            return .text(404, "no such page")
        }
    }

    /// Pushes a row per new exchange to every open event stream (Server-Sent Events), from a thread of its own:
    /// the analysis (parse, diff, lint) is done here, not on the event loops, and only while someone listens.
    final class Feed: Sendable {
        let store: InspectorStore
        let views: InspectorViews
        private let subscribers = Locked<[LocalStream]>([])
        private let signal = DispatchSemaphore(value: 0)
        /// Open streams, and whether a wake-up is already pending: with nobody listening, recording an exchange
        /// costs the proxy one atomic load here, and a burst of exchanges wakes the thread once.
        private let listening = AtomicCounter()
        private let wakePending = AtomicCounter()
        /// The newest exchange when the feed was made: its thread sends what comes after.
        private let first: UInt64
        /// Rows pushed in one round, at most.
        static let batch = 50

        init(store: InspectorStore, views: InspectorViews) {
            self.store = store
            self.views = views
            first = store.newestSequence
            let (signal, listening, wakePending) = (self.signal, self.listening, self.wakePending)
            store.onRecord {
                if listening.load() > 0 && wakePending.add(1) == 1 { signal.signal() }
            }
            // The thread keeps the feed (it runs for the process's life): an unowned reference was read after the
            // feed was freed when `run` ended early (a port in use) and aborted the exit.
            let thread = Thread { [self] in self.run() }
            thread.name = "cookie-proxy-inspector"
            thread.start()
        }

        func subscribe() -> LocalStream {
            let stream = LocalStream()
            subscribers.withLock { $0.append(stream) }
            // Exchanges recorded while nobody listened are not pushed: the page asks for the list first.
            listening.add(1)
            return stream
        }

        private func run() {
            var last = first
            while true {
                let woke = signal.wait(timeout: .now() + 15) == .success
                wakePending.store(0)
                let listeners = subscribers.withLock { list -> [LocalStream] in
                    let before = list.count
                    list.removeAll { !$0.isOpen }
                    if list.count < before { listening.subtract(before - list.count) }
                    return list
                }
                guard !listeners.isEmpty else {
                    last = store.newestSequence
                    continue
                }
                var fresh = store.exchanges(after: last)
                if let newest = fresh.last?.sequence { last = newest }
                var bytes: [UInt8] = []
                // A person reads a few rows a second: past `batch` rows a round, the newest are shown and the page
                // is told how many it was not sent (they are in the list), so that the analysis behind each row
                // (the transformations and the lint) cannot take a core from the proxy under load.
                if fresh.count > Self.batch {
                    bytes += Array("event: skipped\ndata: \(fresh.count - Self.batch)\n\n".utf8)
                    fresh.removeFirst(fresh.count - Self.batch)
                }
                for e in fresh {
                    bytes += Array("id: \(e.sequence)\nevent: exchange\ndata: \(views.row(e).serialized)\n\n".utf8)
                }
                if bytes.isEmpty && !woke { bytes = Array(": keep-alive\n\n".utf8) }
                guard !bytes.isEmpty else { continue }
                for stream in listeners { stream.send(bytes) }
                // At most about ten rounds a second.
                usleep(100_000)
            }
        }
    }
}
