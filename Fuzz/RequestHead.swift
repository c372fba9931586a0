// libFuzzer target: the request-head parser. Whatever the bytes, no crash; an accepted head re-parses to itself
// (its normalised bytes have one reading), and its framing is decided or refused without a crash.
import ProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestHead(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
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
