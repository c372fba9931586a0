import HTTPGrammar
import HTTPHeads
import Locking
import ProxyCore
import ProxyPlatform

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A request to the proxy's own web service (the inspector, its API, the onboarding pages).
public struct LocalRequest: Sendable {
    public var method: String
    /// As sent: origin form, with the query.
    public var target: String
    /// Field names lowercased, values as sent.
    public var fields: [(name: String, value: String)]
    /// The numeric address of the client.
    public var client: String

    public init(method: String, target: String, fields: [(name: String, value: String)], client: String) {
        self.method = method
        self.target = target
        self.fields = fields
        self.client = client
    }

    /// The first field with this (lowercase) name.
    public func field(_ name: String) -> String? { fields.first { $0.name == name }?.value }
    public var path: String { String(target.prefix { $0 != "?" }) }
    /// The query's parameters, percent-decoded (`+` as space).
    public var query: [String: String] {
        guard let mark = target.firstIndex(of: "?") else { return [:] }
        var out: [String: String] = [:]
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = Self.decode(parts[0])
            if out[key] == nil { out[key] = parts.count > 1 ? Self.decode(parts[1]) : "" }
        }
        return out
    }

    static func decode(_ s: Substring) -> String {
        String(decoding: PercentEncoding.decode(s.utf8, plusIsSpace: true, invalid: .keep) ?? [], as: UTF8.self)
    }
}

/// The answer: a whole response, or a head followed by a stream that stays open (Server-Sent Events).
public struct LocalResponse: Sendable {
    public var status: Int
    public var fields: [(name: String, value: String)]
    public var body: [UInt8]
    /// When set, the connection stays open after `body` and carries what the stream sends.
    public var stream: LocalStream?

    public init(
        status: Int, fields: [(name: String, value: String)] = [], body: [UInt8] = [], stream: LocalStream? = nil
    ) {
        self.status = status
        self.fields = fields
        self.body = body
        self.stream = stream
    }

    /// A 200 of this type, with more fields after Content-Type.
    public static func ok(_ contentType: String, _ body: [UInt8], _ fields: [(name: String, value: String)] = [])
        -> LocalResponse
    {
        LocalResponse(status: 200, fields: [("Content-Type", contentType)] + fields, body: body)
    }

    public static func text(_ status: Int, _ text: String) -> LocalResponse {
        LocalResponse(
            status: status, fields: [("Content-Type", "text/plain; charset=utf-8")], body: Array((text + "\n").utf8))
    }
}

/// Answers the local service's requests; called on an event loop's thread, so it must not block.
public protocol LocalService: AnyObject, Sendable {
    func respond(_ request: LocalRequest) -> LocalResponse
}

/// Bytes pushed to one open connection from any thread. Bounded: a reader that falls more than `limit` bytes
/// behind is disconnected (an EventSource reconnects and asks for the list again) rather than holding memory.
public final class LocalStream: Sendable {
    private struct State {
        var pending: [UInt8] = []
        var closed = false
        var wake: (@Sendable () -> Void)?
        var scheduled = false
    }
    private let state = Locked(State())
    let limit: Int
    private let onClose: (@Sendable () -> Void)?

    /// `onClose` runs once, when the connection ends (on its loop's thread) or the stream is closed.
    public init(limit: Int = 4 << 20, onClose: (@Sendable () -> Void)? = nil) {
        self.limit = limit
        self.onClose = onClose
    }

    /// Queues `bytes`; false when the stream is closed (or just was, for falling too far behind).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        let (open, wake) = state.withLock { s -> (Bool, (@Sendable () -> Void)?) in
            guard !s.closed else { return (false, nil) }
            if s.pending.count + bytes.count > limit {
                s.closed = true
                s.pending.removeAll()
                return (false, s.wake)
            }
            s.pending.append(contentsOf: bytes)
            guard !s.scheduled, let wake = s.wake else { return (true, nil) }
            s.scheduled = true
            return (true, wake)
        }
        wake?()
        return open
    }

    public var isOpen: Bool { state.withLock { !$0.closed } }

    /// Ends the stream: the connection closes once what is queued has gone.
    public func close() {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            guard !s.closed else { return nil }
            s.closed = true
            return s.wake
        }
        wake?()
    }

    func attach(_ wake: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            s.wake = wake
            s.scheduled = !s.pending.isEmpty || s.closed
            return s.scheduled
        }
        if now { wake() }
    }

    /// What is queued, and whether the stream has ended.
    func take() -> (bytes: [UInt8], closed: Bool) {
        state.withLock { s in
            let bytes = s.pending
            s.pending.removeAll(keepingCapacity: true)
            s.scheduled = false
            return (bytes, s.closed)
        }
    }

    func ended() {
        let first = state.withLock { s -> Bool in
            let first = s.wake != nil
            s.closed = true
            s.wake = nil
            return first
        }
        if first { onClose?() }
    }
}

/// One connection to the local service: a request head is read, answered, and the connection closed (or kept
/// for a stream). Only GET and HEAD; no request bodies.
final class LocalConnection: LoopHandler {
    let fd: Int32
    let address: String
    unowned(unsafe) let loop: EventLoop
    let service: any LocalService
    var input: [UInt8] = []
    var output: [UInt8] = []
    var sent = 0
    var parser: HTTPHeadParser
    var answered = false
    var stream: LocalStream?
    var streamEnded = false
    var closed = false
    let started: Int64

    init(fd: Int32, address: String, loop: EventLoop, service: any LocalService) {
        self.fd = fd
        self.address = address
        self.loop = loop
        self.service = service
        parser = HTTPHeadParser(limits: loop.configuration.proxy.parserLimits)
        started = loop.now
    }

    override func handle(_ events: UInt32) {
        if events & (Poller.readable | Poller.hangup) != 0 { readable() }
        if !closed && events & Poller.writable != 0 { flush() }
    }

    private func readable() {
        let n = loop.readBuffer.withUnsafeMutableBytes { Sys.recv(fd, $0) }
        if n == 0 || (n < 0 && Int32(-n) != Sys.EAGAIN && Int32(-n) != Sys.EINTR) {
            close()
            return
        }
        guard n > 0, !answered else { return }
        input.append(contentsOf: loop.readBuffer[0..<n])
        let length: Int
        do {
            guard let l = try parser.headLength(input[...]) else { return }
            length = l
        } catch {
            return answer(.text(431, "request head too large"))
        }
        let request: RequestHead
        do {
            request = try parser.parseRequest(Array(input[0..<length]))
        } catch {
            return answer(.text(400, "malformed request: \(error.description)"))
        }
        let head = request.head
        let fields = head.fields.map {
            (name: head.name($0).lowercased(), value: String(decoding: head.valueBytes($0), as: UTF8.self))
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = LocalResponse.text(405, "this service is read-only: GET and HEAD only")
            response.fields.append(("Allow", "GET, HEAD"))
            return answer(response)
        }
        let local = LocalRequest(method: request.method, target: request.target, fields: fields, client: address)
        var response = service.respond(local)
        if request.method == "HEAD" {
            response.body = []
            response.stream = nil
        }
        answer(response)
    }

    private func answer(_ response: LocalResponse) {
        answered = true
        var text = "HTTP/1.1 \(response.status) \(ProxyAnswer.reasonPhrase(response.status))\r\n"
        for (name, value) in response.fields { text += "\(name): \(value)\r\n" }
        if response.stream == nil { text += "Content-Length: \(response.body.count)\r\n" }
        text += "Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n"
        output = Array(text.utf8) + response.body
        if let stream = response.stream {
            self.stream = stream
            let bound = LoopBound(self, on: loop)
            stream.attach { bound.post { $0.pump() } }
        }
        flush()
    }

    private func pump() {
        guard !closed, let stream else { return }
        let (bytes, ended) = stream.take()
        output.append(contentsOf: bytes)
        streamEnded = ended
        flush()
    }

    private func flush() {
        // The proxy's one send loop (``Sys/send(_:_:_:_:)``): a failed send closes, a whole one empties the
        // buffer.
        var progress = false
        if Sys.send(fd, &output, &sent, &progress) != nil {
            close()
            return
        }
        if output.isEmpty && answered && (stream == nil || streamEnded) {
            close()
            return
        }
        let wanted = output.isEmpty ? Poller.readable : Poller.readable | Poller.writable
        loop.poller.modify(fd, wanted, token: UInt64(slot))
    }

    /// A request head not complete in time (the service's own slowloris limit), checked by the loop's timer.
    func checkDeadline() {
        if !answered && loop.now - started >= Int64(loop.configuration.headerTimeout * 1000) {
            answer(.text(408, "request head not received in time"))
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        stream?.ended()
        loop.unregisterAndClose(self, fd: fd)
        loop.localClosed(self)
    }
}
