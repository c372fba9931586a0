import ProxyCore

/// One message as a recipient reads it: start line, fields (names lowercased), body without framing.
struct ReadMessage: Equatable, CustomStringConvertible {
    struct Field: Equatable {
        var name: [UInt8]
        var value: [UInt8]
    }
    var startLine: [UInt8]
    var fields: [Field]
    var body: [UInt8]

    var description: String {
        String(decoding: startLine, as: UTF8.self) + " "
            + fields.map { String(decoding: $0.name, as: UTF8.self) + "=" + String(decoding: $0.value, as: UTF8.self) }
            .joined(separator: "|") + " body=" + String(decoding: body, as: UTF8.self)
    }

    var status: Int? {
        guard startLine.count >= 12, startLine.starts(with: Array("HTTP/".utf8)) else { return nil }
        return Int(String(decoding: startLine[9..<12], as: UTF8.self))
    }
}

/// A recipient that reads by the letter of RFC 9112, written apart from the proxy's codec: every line ends in
/// CRLF (a bare CR or LF fails the stream), field names are tokens, no obs-fold, no NUL or CR in a value, chunk
/// lines exactly `chunk-size [chunk-ext] CRLF`, trailers field lines. Nil when the bytes are not a whole sequence
/// of such messages. (CTLs other than NUL, CR and LF in a response value are kept, as RFC 9110 §5.5 lets a
/// recipient do.)
enum StrictReader {
    static func isToken(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || ((b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A)
            || "!#$%&'*+-.^_`|~".utf8.contains(b)
    }

    static func read(_ stream: [UInt8], responsesTo methods: [String]? = nil) -> [ReadMessage]? {
        var messages: [ReadMessage] = []
        var at = 0
        var exchange = 0
        /// One line without its CRLF; nil when there is no CRLF or the line holds a bare CR or LF.
        func line() -> [UInt8]? {
            var i = at
            while i + 1 < stream.count {
                if stream[i] == 0x0D {
                    guard stream[i + 1] == 0x0A else { return nil }
                    let l = Array(stream[at..<i])
                    at = i + 2
                    return l
                }
                if stream[i] == 0x0A { return nil }
                i += 1
            }
            return nil
        }
        func field(_ l: [UInt8]) -> ReadMessage.Field? {
            guard let colon = l.firstIndex(of: 0x3A), colon > 0, l[..<colon].allSatisfy(isToken) else { return nil }
            var value = Array(l[(colon + 1)...])
            guard !value.contains(0x00) else { return nil }
            while let f = value.first, f == 0x20 || f == 0x09 { value.removeFirst() }
            while let x = value.last, x == 0x20 || x == 0x09 { value.removeLast() }
            return ReadMessage.Field(name: l[..<colon].map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }, value: value)
        }
        while at < stream.count {
            if methods == nil {
                while at + 1 < stream.count && stream[at] == 0x0D && stream[at + 1] == 0x0A { at += 2 }
            }
            guard at < stream.count else { break }
            guard let start = line() else { return nil }
            var fields: [ReadMessage.Field] = []
            while true {
                guard let l = line() else { return nil }
                if l.isEmpty { break }
                guard l.first != 0x20 && l.first != 0x09, let f = field(l) else { return nil }
                fields.append(f)
            }
            func values(_ name: String) -> [[UInt8]] { fields.filter { $0.name == Array(name.utf8) }.map(\.value) }
            var codings: [String] = []
            for v in values("transfer-encoding") {
                for element in v.split(separator: 0x2C, omittingEmptySubsequences: false) {
                    let e = String(decoding: element, as: UTF8.self).trimmingCharacters(in: " \t").lowercased()
                    if !e.isEmpty { codings.append(e) }
                }
            }
            var lengths = Set<Int>()
            for v in values("content-length") {
                for element in v.split(separator: 0x2C, omittingEmptySubsequences: false) {
                    let e = String(decoding: element, as: UTF8.self).trimmingCharacters(in: " \t")
                    guard !e.isEmpty, e.utf8.allSatisfy({ $0 &- 0x30 < 10 }), let n = Int(e) else { return nil }
                    lengths.insert(n)
                }
            }
            guard lengths.count <= 1 else { return nil }
            let message = ReadMessage(startLine: start, fields: fields, body: [])
            guard
                let (framing, interim) = readerFraming(
                    codings: codings, length: lengths.first, of: message, responseTo: methods?[safe: exchange],
                    isResponse: methods != nil, bothFieldsAreAnError: true)
            else { return nil }
            var body: [UInt8] = []
            switch framing {
            case .none, .length, .close:
                guard let b = fixedBody(framing, stream, &at) else { return nil }
                body = b
            case .chunked:
                while true {
                    guard let sizeLine = line(), let size = chunkSize(sizeLine) else { return nil }
                    if size == 0 {
                        while true {
                            guard let l = line() else { return nil }
                            if l.isEmpty { break }
                            guard l.first != 0x20 && l.first != 0x09, field(l) != nil else { return nil }
                        }
                        break
                    }
                    guard at + size + 2 <= stream.count, stream[at + size] == 0x0D, stream[at + size + 1] == 0x0A
                    else { return nil }
                    body += stream[at..<(at + size)]
                    at += size + 2
                }
            }
            messages.append(ReadMessage(startLine: start, fields: fields, body: body))
            if !interim { exchange += 1 }
        }
        return messages
    }

    /// chunk-size [ chunk-ext ] (RFC 9112 §7.1, §7.1.1), the line without its CRLF.
    static func chunkSize(_ l: [UInt8]) -> Int? {
        var i = 0
        var size = 0
        while i < l.count, let d = Int(String(UnicodeScalar(l[i])), radix: 16) {
            guard size < 1 << 56 else { return nil }
            size = size * 16 + d
            i += 1
        }
        guard i > 0 else { return nil }
        func bws() { while i < l.count && (l[i] == 0x20 || l[i] == 0x09) { i += 1 } }
        while i < l.count {
            bws()
            guard i < l.count, l[i] == 0x3B else { return nil }
            i += 1
            bws()
            let name = i
            while i < l.count && isToken(l[i]) { i += 1 }
            guard i > name else { return nil }
            let afterName = i
            bws()
            if i < l.count && l[i] == 0x3D {
                i += 1
                bws()
                if i < l.count && l[i] == 0x22 {
                    i += 1
                    var closed = false
                    while i < l.count {
                        if l[i] == 0x22 {
                            closed = true
                            i += 1
                            break
                        }
                        if l[i] == 0x5C { i += 1 }
                        guard i < l.count, l[i] >= 0x20 || l[i] == 0x09, l[i] != 0x7F else { return nil }
                        i += 1
                    }
                    guard closed else { return nil }
                } else {
                    let value = i
                    while i < l.count && isToken(l[i]) { i += 1 }
                    guard i > value else { return nil }
                }
            } else {
                i = afterName
                // BWS after a name is only allowed before "=" or the next ";".
                var j = i
                while j < l.count && (l[j] == 0x20 || l[j] == 0x09) { j += 1 }
                guard j == l.count || l[j] == 0x3B else { return nil }
                if j == l.count && j > i { return nil }
            }
        }
        return size
    }
}

/// A recipient that uses every latitude RFC 9110/9112 give a reader: a bare LF ends a line (RFC 9112 §2.2),
/// CR and NUL in a value are read as SP (RFC 9110 §5.5), a chunk size is its leading hex digits and the rest of
/// the chunk line is ignored (as many implementations do). Nil when it cannot read the stream at all.
enum LenientReader {
    static func read(_ stream: [UInt8], responsesTo methods: [String]? = nil) -> [ReadMessage]? {
        var messages: [ReadMessage] = []
        var at = 0
        var exchange = 0
        func line() -> [UInt8]? {
            guard let lf = stream[at...].firstIndex(of: 0x0A) else { return nil }
            var l = Array(stream[at..<lf])
            if l.last == 0x0D { l.removeLast() }
            at = lf + 1
            return l
        }
        while at < stream.count {
            if methods == nil {
                while at < stream.count
                    && (stream[at] == 0x0A || (stream[at] == 0x0D && at + 1 < stream.count && stream[at + 1] == 0x0A))
                {
                    at += stream[at] == 0x0A ? 1 : 2
                }
            }
            guard at < stream.count else { break }
            guard let start = line() else { return nil }
            var fields: [ReadMessage.Field] = []
            while true {
                guard let l = line() else { return nil }
                if l.isEmpty { break }
                guard let colon = l.firstIndex(of: 0x3A) else { continue }
                let name = l[..<colon].map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }
                var value = l[(colon + 1)...].map { $0 == 0x0D || $0 == 0x00 ? UInt8(0x20) : $0 }
                while let f = value.first, f == 0x20 || f == 0x09 { value.removeFirst() }
                while let l = value.last, l == 0x20 || l == 0x09 { value.removeLast() }
                fields.append(ReadMessage.Field(name: name, value: value))
            }
            let message = ReadMessage(startLine: start, fields: fields, body: [])
            func values(_ name: String) -> [[UInt8]] { fields.filter { $0.name == Array(name.utf8) }.map(\.value) }
            let codings = values("transfer-encoding").flatMap { $0.split(separator: 0x2C) }.map {
                String(decoding: $0, as: UTF8.self).trimmingCharacters(in: " \t").lowercased()
            }.filter { !$0.isEmpty }
            let lengthText = values("content-length").first.map {
                String(decoding: $0.prefix { $0 &- 0x30 < 10 }, as: UTF8.self)
            }
            guard
                let (framing, interim) = readerFraming(
                    codings: codings, length: lengthText.flatMap { Int($0) }, of: message,
                    responseTo: methods?[safe: exchange], isResponse: methods != nil, bothFieldsAreAnError: false)
            else { return nil }
            var body: [UInt8] = []
            switch framing {
            case .none, .length, .close:
                guard let b = fixedBody(framing, stream, &at) else { return nil }
                body = b
            case .chunked:
                while true {
                    guard let sizeLine = line() else { return nil }
                    let digits = sizeLine.prefix { ($0 | 0x20) &- 0x61 < 6 || $0 &- 0x30 < 10 }
                    guard !digits.isEmpty, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
                        return nil
                    }
                    if size == 0 {
                        while let l = line(), !l.isEmpty {}
                        break
                    }
                    guard at + size <= stream.count else { return nil }
                    body += stream[at..<(at + size)]
                    at += size
                    guard line() != nil else { return nil }
                }
            }
            messages.append(ReadMessage(startLine: start, fields: fields, body: body))
            if !interim { exchange += 1 }
        }
        return messages
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}

/// The invariant of RFC 9112 §11.2 for bytes the proxy forwarded: the strict and the lenient reader see the
/// same messages. Returns a description of the difference, or nil.
func readingsDiffer(_ stream: [UInt8], responsesTo methods: [String]? = nil) -> String? {
    guard let strict = StrictReader.read(stream, responsesTo: methods) else {
        return
            "a reader by the letter of RFC 9112 cannot read what the proxy forwarded: \(String(decoding: stream, as: UTF8.self).debugDescription)"
    }
    guard let lenient = LenientReader.read(stream, responsesTo: methods) else {
        return "a lenient reader cannot read what the proxy forwarded"
    }
    if strict != lenient { return "strict: \(strict)\nlenient: \(lenient)" }
    return nil
}

/// How both readers frame a message (RFC 9112 §6.3: the readers differ in how they read lines and chunks, not in
/// this), and whether it is an interim response. Nil when the framing is an error for a request.
enum ReaderFraming { case none, length(Int), chunked, close }

func readerFraming(
    codings: [String], length: Int?, of message: ReadMessage, responseTo method: String?, isResponse: Bool,
    bothFieldsAreAnError: Bool
) -> (ReaderFraming, interim: Bool)? {
    if isResponse {
        guard let method, let status = message.status else { return nil }
        let interim = (100..<200).contains(status) && status != 101
        if method == "HEAD" || (100..<200).contains(status) || status == 204 || status == 304 {
            return (.none, interim)
        }
        if !codings.isEmpty { return (codings.last == "chunked" ? .chunked : .close, interim) }
        return (length.map { .length($0) } ?? .close, interim)
    }
    if !codings.isEmpty {
        guard codings.last == "chunked", !bothFieldsAreAnError || length == nil else { return nil }
        return (.chunked, false)
    }
    return (length.map { .length($0) } ?? .none, false)
}

/// The body of a message that is not chunked, from `at`; nil when the stream ends first.
func fixedBody(_ framing: ReaderFraming, _ stream: [UInt8], _ at: inout Int) -> [UInt8]? {
    switch framing {
    case .none, .chunked: return []
    case .length(let n):
        guard at + n <= stream.count else { return nil }
        defer { at += n }
        return Array(stream[at..<(at + n)])
    case .close:
        defer { at = stream.count }
        return Array(stream[at...])
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
