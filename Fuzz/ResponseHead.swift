// libFuzzer target: the response-head parser, with the same checks as the request head's.
import HTTPHeads
import ProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHead(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var parser = HTTPHeadParser()
    guard let length = try? parser.headLength(input[...]) else { return 0 }
    guard let response = try? parser.parseResponse(Array(input[0..<length])) else { return 0 }
    guard (try? BodyFraming.forResponse(response.head, status: response.status, requestMethod: "HEAD")) != nil else {
        return 0
    }
    guard let again = try? HTTPHeadParser().parseResponse(response.head.bytes) else {
        fatalError("an accepted head does not re-parse")
    }
    precondition(again.head.bytes == response.head.bytes)
    if let difference = readingsDiffer(response.head.bytes, responsesTo: ["HEAD"]) { fatalError(difference) }
    return 0
}
