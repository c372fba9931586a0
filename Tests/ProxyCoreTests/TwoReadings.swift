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

/// The proxy's own codec reading a byte stream: what every conforming recipient reads from bytes with one
/// reading. Nil when the bytes are not a whole sequence of valid messages.
enum StrictReader {
    static func read(_ stream: [UInt8], responsesTo methods: [String]? = nil) -> [ReadMessage]? {
        var messages: [ReadMessage] = []
        var at = 0
        var parser = HTTPHeadParser()
        var exchange = 0
        while at < stream.count {
            if methods == nil { at += HTTPHeadParser.leadingEmptyLines(stream[at...]) }
            guard at < stream.count else { break }
            guard let length = try? parser.headLength(stream[at...]) else { return nil }
            let headBytes = Array(stream[at..<(at + length)])
            at += length
            let head: HTTPHead
            let framing: BodyFraming
            let startLine: [UInt8]
            var interim = false
            if let methods {
                guard exchange < methods.count, let r = try? parser.parseResponse(headBytes),
                    let f = try? BodyFraming.forResponse(
                        r.head, status: r.status, requestMethod: methods[exchange], version: r.version)
                else { return nil }
                (head, framing) = (r.head, f)
                interim = (100..<200).contains(r.status) && r.status != 101
            } else {
                guard let r = try? parser.parseRequest(headBytes),
                    let f = try? BodyFraming.forRequest(r.head, version: r.version)
                else { return nil }
                (head, framing) = (r.head, f)
            }
            // Read by the proxy's codec, line ends are CRLF: the head bytes must be exactly what was parsed.
            guard head.bytes == headBytes else { return nil }
            startLine = Array(head.bytes[head.startLine])
            var body: [UInt8] = []
            var reader = BodyReader(framing)
            if !reader.isComplete {
                guard
                    let n = try? withUnsafeMutablePointer(to: &body, { try reader.consume(stream[at...], payload: $0) })
                else { return nil }
                at += n
                if framing == .untilClose { _ = reader.endOfStream() }
                guard reader.isComplete else { return nil }
            }
            let fields = head.fields.map {
                ReadMessage.Field(
                    name: Array(head.bytes[$0.name]).map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 },
                    value: Array(head.valueBytes($0)))
            }
            messages.append(ReadMessage(startLine: startLine, fields: fields, body: body))
            if !interim { exchange += 1 }
        }
        return messages
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
            enum Framing { case none, length(Int), chunked, close }
            var framing: Framing
            var interim = false
            if let methods {
                guard exchange < methods.count, let status = message.status else { return nil }
                interim = (100..<200).contains(status) && status != 101
                if methods[exchange] == "HEAD" || (100..<200).contains(status) || status == 204 || status == 304 {
                    framing = .none
                } else if !codings.isEmpty {
                    framing = codings.last == "chunked" ? .chunked : .close
                } else if let lengthText, let n = Int(lengthText) {
                    framing = .length(n)
                } else {
                    framing = .close
                }
            } else if !codings.isEmpty {
                guard codings.last == "chunked" else { return nil }
                framing = .chunked
            } else if let lengthText, let n = Int(lengthText) {
                framing = .length(n)
            } else {
                framing = .none
            }
            var body: [UInt8] = []
            switch framing {
            case .none: break
            case .length(let n):
                guard at + n <= stream.count else { return nil }
                body = Array(stream[at..<(at + n)])
                at += n
            case .close:
                body = Array(stream[at...])
                at = stream.count
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
            "the proxy's own codec cannot read what it forwarded: \(String(decoding: stream, as: UTF8.self).debugDescription)"
    }
    guard let lenient = LenientReader.read(stream, responsesTo: methods) else {
        return "a lenient reader cannot read what the proxy forwarded"
    }
    if strict != lenient { return "strict: \(strict)\nlenient: \(lenient)" }
    return nil
}
