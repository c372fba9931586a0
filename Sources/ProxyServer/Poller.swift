internal import CProxyShims
import ProxyPlatform

/// Which system interface waits for the loops' events.
public enum PollerKind: String, Sendable, CaseIterable {
    case epoll, kqueue, poll

    /// epoll on Linux, kqueue on macOS and the BSDs.
    public static var native: PollerKind {
        switch CProxy_poller_native_kind() {
        case Int32(CPROXY_POLLER_EPOLL): .epoll
        case Int32(CPROXY_POLLER_KQUEUE): .kqueue
        default: .poll
        }
    }

    /// `COOKIE_PROXY_POLLER` (epoll, kqueue or poll), else the native one; a value this system lacks is an error.
    public static func fromEnvironment(_ environment: [String: String]) -> Result<PollerKind, PollerError> {
        guard let text = environment["COOKIE_PROXY_POLLER"], !text.isEmpty else { return .success(native) }
        guard let kind = PollerKind(rawValue: text) else {
            return .failure(PollerError(description: "COOKIE_PROXY_POLLER=\(text): say epoll, kqueue or poll"))
        }
        guard kind == .poll || kind == native else {
            return .failure(
                PollerError(description: "COOKIE_PROXY_POLLER=\(text): this system has \(native.rawValue) and poll"))
        }
        return .success(kind)
    }

    var code: Int32 {
        switch self {
        case .epoll: Int32(CPROXY_POLLER_EPOLL)
        case .kqueue: Int32(CPROXY_POLLER_KQUEUE)
        case .poll: Int32(CPROXY_POLLER_POLL)
        }
    }

    /// Whether each loop can have a listening socket of its own (SO_REUSEPORT shares connections between them, on
    /// Linux). Elsewhere, and with the portable poll poller (so that this path runs on Linux too), the loops share
    /// one listening socket, each through a descriptor of its own.
    var listenerPerLoop: Bool { self != .poll && CProxy_reuseport_balances() != 0 }
}

public struct PollerError: Error, CustomStringConvertible {
    public var description: String
}

/// A level-triggered poller (CProxyShims: epoll, kqueue or poll) with a wake-up other threads may signal.
final class Poller {
    private let handle: OpaquePointer
    let kind: PollerKind
    package static let wakeToken: UInt64 = .max
    package static let readable = CProxy_EV_IN | CProxy_EV_RDHUP
    package static let writable = CProxy_EV_OUT
    package static let hangup = CProxy_EV_HUP | CProxy_EV_ERR
    private var events = [CProxy_Event](repeating: CProxy_Event(), count: 256)

    init(kind: PollerKind) {
        var created: OpaquePointer?
        let rc = CProxy_poller_create(kind.code, &created)
        precondition(rc == 0 && created != nil, "cannot create the \(kind.rawValue) poller: \(Sys.errorText(rc))")
        handle = created!
        self.kind = kind
    }

    deinit { CProxy_poller_destroy(handle) }

    func add(_ fd: Int32, _ events: UInt32, token: UInt64) { _ = CProxy_poller_add(handle, fd, events, token) }
    func modify(_ fd: Int32, _ events: UInt32, token: UInt64) {
        _ = CProxy_poller_modify(handle, fd, events, token)
    }
    /// Before `fd` is closed.
    func remove(_ fd: Int32) { _ = CProxy_poller_remove(handle, fd) }

    func wake() { _ = CProxy_poller_wake(handle) }
    func drainWake() { _ = CProxy_poller_drain_wake(handle) }

    /// Waits for events; calls `body(token, events)` for each.
    func wait(timeoutMilliseconds: Int32, _ body: (UInt64, UInt32) -> Void) {
        let n = events.withUnsafeMutableBufferPointer {
            CProxy_poller_wait(handle, $0.baseAddress, 256, timeoutMilliseconds)
        }
        guard n > 0 else { return }
        for i in 0..<Int(n) { body(events[i].token, events[i].events) }
    }
}
