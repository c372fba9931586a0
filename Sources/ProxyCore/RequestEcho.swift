import HTTPGrammar
import HTTPHeads

/// What of a request the proxy read, for an exchange that forwarded none (one the proxy answered itself, a CONNECT
/// tunnel): the facts an access log line names, which a forwarded request gives its observers instead. Scanned
/// leniently from the bytes read, a malformed head included (nginx and Caddy log what they could read of a request
/// they refused): the start line's method and target when they are tokens, and the Host, User-Agent and Referer
/// fields. Nothing here is trusted or parsed for framing; it is only shown (escaped where it is written).
///
/// A class: every exchange's end carries one reference (nil for nearly all), not five strings' room.
public final class RequestEcho: Sendable, Hashable {
    public let method: String?
    public let target: String?
    public let host: String?
    public let userAgent: String?
    public let referer: String?

    public init(
        method: String? = nil, target: String? = nil, host: String? = nil, userAgent: String? = nil,
        referer: String? = nil
    ) {
        (self.method, self.target, self.host, self.userAgent, self.referer) = (method, target, host, userAgent, referer)
    }

    public static func == (a: RequestEcho, b: RequestEcho) -> Bool {
        (a.method, a.target, a.host, a.userAgent, a.referer) == (b.method, b.target, b.host, b.userAgent, b.referer)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(target)
        hasher.combine(host)
        hasher.combine(userAgent)
        hasher.combine(referer)
    }

    /// At most this many bytes of a head are looked at (a refused head may be as large as the limit it broke).
    static let scanLimit = 16384

    /// The facts of `bytes`, a request head or what arrived of one: lines split at LF (a CR before it dropped); the
    /// first is the start line, the others `name: value` fields, the first of each name kept.
    public convenience init(scanning bytes: ArraySlice<UInt8>) {
        var (method, target, host, userAgent, referer): (String?, String?, String?, String?, String?)
        let head = bytes.prefix(Self.scanLimit)
        var lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).makeIterator()
        func text(_ b: ArraySlice<UInt8>) -> String {
            var b = b
            while let last = b.last, last == 0x0D || last == 0x20 || last == 0x09 { b.removeLast() }
            while let first = b.first, first == 0x20 || first == 0x09 { b.removeFirst() }
            return String(decoding: b, as: UTF8.self)
        }
        if let start = lines.next() {
            let words = start.split(separator: 0x20, omittingEmptySubsequences: true)
            if words.count == 3, words[0].allSatisfy(ByteClass.isTokenChar) {
                method = text(words[0])
                target = text(words[1])
            }
        }
        while let line = lines.next() {
            if line.isEmpty || line == [0x0D] { break }  // the end of the head
            guard let colon = line.firstIndex(of: 0x3A) else { continue }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self).lowercased()
            let value = text(line[(colon + 1)...])
            switch name {
            case "host" where host == nil: host = value
            case "user-agent" where userAgent == nil: userAgent = value
            case "referer" where referer == nil: referer = value
            default: break
            }
        }
        self.init(method: method, target: target, host: host, userAgent: userAgent, referer: referer)
    }
}
