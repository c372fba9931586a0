import Foundation

/// Commands and events over a channel, as the DevTools protocol and WebDriver BiDi both frame them: a command
/// `{"id","method","params"}` (CDP adds the page's `sessionId`), answered by the message with its `id` — a `result`,
/// or an `error` (CDP: an object with a `message`; BiDi: a string beside a `message`) — and events
/// `{"method","params"}` without an `id`. Events that arrive while a reply is awaited are kept in order for
/// ``nextEvent(until:)`` (a page's network events come between the replies of the commands that drive it). Every
/// message is decoded into the `Decodable` type the caller names; one that is not JSON is skipped.
final class RPCSession {
    let channel: any BrowserChannel
    /// The browser's name, for the failures.
    private let peer: String
    private var nextID = 0
    private var events: [Event] = []

    init(_ channel: any BrowserChannel, peer: String) {
        (self.channel, self.peer) = (channel, peer)
    }

    /// An event: its method, the page session it came from (CDP) and its parameters, decoded on demand.
    struct Event {
        let method: String
        let sessionId: String?
        let text: String

        /// The parameters as `P`; nil when they are not of that shape.
        func params<P: Decodable>(_ type: P.Type) -> P? {
            decodeJSON(Carrier<P>.self, text)?.params
        }
    }

    private struct Carrier<P: Decodable>: Decodable { var params: P }
    private struct Reply<R: Decodable>: Decodable { var result: R }

    private struct Envelope: Decodable {
        var id: Int?
        var method: String?
        var sessionId: String?
        var error: Refusal?
        var message: String?
    }

    /// A command's error: CDP's `{"code", "message"}` or BiDi's error code (a string, its text in `message`).
    private enum Refusal: Decodable {
        case code(String), object(String)
        init(from decoder: any Decoder) throws {
            struct Object: Decodable { var message: String? }
            let c = try decoder.singleValueContainer()
            if let code = try? c.decode(String.self) {
                self = .code(code)
            } else {
                self = .object((try? c.decode(Object.self))?.message ?? "")
            }
        }
    }

    private struct Command<P: Encodable>: Encodable {
        var id: Int
        var method: String
        var params: P
        var sessionId: String?
    }

    /// Sends a command (to `session`, a page's, for CDP) and waits at most `seconds` for its reply: its `result`
    /// as `R`, or the browser's error as a ``BrowserFailure``.
    func call<R: Decodable>(
        _ method: String, _ params: some Encodable = NoParameters(), session: String? = nil, seconds: Double = 20,
        as type: R.Type
    ) throws(BrowserFailure) -> R {
        nextID += 1
        let id = nextID
        guard let text = encodeJSON(Command(id: id, method: method, params: params, sessionId: session)) else {
            throw BrowserFailure("cannot encode \(method)")
        }
        try channel.send(text)
        let deadline = channel.now.addingTimeInterval(seconds)
        while true {
            guard let text = try channel.receive(until: deadline) else {
                throw BrowserFailure("\(peer) did not answer \(method) in time")
            }
            guard let envelope = decodeJSON(Envelope.self, text) else { continue }
            guard let replyID = envelope.id else {
                if let method = envelope.method {
                    events.append(Event(method: method, sessionId: envelope.sessionId, text: text))
                }
                continue
            }
            guard replyID == id else { continue }
            switch envelope.error {
            case .code(let code):
                throw BrowserFailure("\(peer) refused \(method): \(code) \(envelope.message ?? "")")
            case .object(let message): throw BrowserFailure("\(peer) refused \(method): \(message)")
            case nil: break
            }
            guard let reply = decodeJSON(Reply<R>.self, text) else {
                throw BrowserFailure("\(peer) answered \(method) in an unexpected shape: \(text.prefix(200))")
            }
            return reply.result
        }
    }

    /// A command whose result is not read.
    func call(
        _ method: String, _ params: some Encodable = NoParameters(), session: String? = nil, seconds: Double = 20
    ) throws(BrowserFailure) {
        _ = try call(method, params, session: session, seconds: seconds, as: Ignored.self)
    }

    /// The next event, kept or read; nil when none came by `deadline`.
    func nextEvent(until deadline: Date) throws(BrowserFailure) -> Event? {
        if !events.isEmpty { return events.removeFirst() }
        while let text = try channel.receive(until: deadline) {
            if let envelope = decodeJSON(Envelope.self, text), envelope.id == nil, let method = envelope.method {
                return Event(method: method, sessionId: envelope.sessionId, text: text)
            }
        }
        return nil
    }
}

/// A command without parameters (`{}`).
struct NoParameters: Codable {}

/// A result that is not read (any JSON).
struct Ignored: Decodable {
    init(from decoder: any Decoder) throws {}
}

/// A value that is read when it is a string (a script's result may be anything).
struct StringIfAny: Decodable {
    var string: String?
    init(from decoder: any Decoder) throws {
        string = try? decoder.singleValueContainer().decode(String.self)
    }
}

/// The text of `value` as the drivers send it: keys sorted (a transcript compares what is sent byte for byte).
func encodeJSON(_ value: some Encodable) -> String? {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
}

/// `text` decoded as `T`; nil when it is not JSON of that shape.
func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
    try? JSONDecoder().decode(T.self, from: Data(text.utf8))
}
