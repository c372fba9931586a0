// libFuzzer target: the request-head parser. Whatever the bytes, no crash; an accepted head re-parses to itself
// (its normalised bytes have one reading), and its framing is decided or refused without a crash. The same bytes
// sent as plain HTTP to a TLS listener get a 400 of one reading: three fields, and a body of its declared length
// (what it reflects of the request cannot add a line).
import HTTPHeads
import ProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestHead(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let answer = PlainHTTPOnTLSPort.response(to: input[...], fallback: Origin(host: "127.0.0.1", port: 8443))
    var answerParser = HTTPHeadParser()
    guard let answerLength = (try? answerParser.headLength(answer[...])) ?? nil,
        let answerHead = try? answerParser.parseResponse(Array(answer[0..<answerLength])),
        answerHead.head.fields.count == 3,
        case .contentLength(let declared)? = try? BodyFraming.forResponse(
            answerHead.head, status: 400, requestMethod: "GET", version: answerHead.version),
        declared == answer.count - answerLength
    else { fatalError("the plain-HTTP answer has another reading: \(answer)") }
    var parser = HTTPHeadParser()
    guard let length = try? parser.headLength(input[...]) else { return 0 }
    guard let request = try? parser.parseRequest(Array(input[0..<length])) else { return 0 }
    _ = try? BodyFraming.forRequest(request.head, version: request.version)
    guard let again = try? HTTPHeadParser().parseRequest(request.head.bytes) else {
        fatalError("an accepted head does not re-parse: \(request.head.bytes)")
    }
    precondition(again.head.bytes == request.head.bytes && again.head.fields.count == request.head.fields.count)
    if let difference = readingsDiffer(request.head.bytes) { fatalError(difference) }
    return 0
}
