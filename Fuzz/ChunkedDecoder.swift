// libFuzzer target: the chunked decoder. The input is a chunked body; the first byte splits it into pieces (the
// decoder must read the same whatever the split). What it accepts must decode to the same payload in a lenient
// reader (a chunk size is its leading hex digits, the rest of the line ignored).
import ProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunkedDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let step = Int(data[0] % 16) + 1
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var whole = ChunkedDecoder()
    var wholePayload: [UInt8] = []
    let wholeResult = try? withUnsafeMutablePointer(to: &wholePayload) { try whole.consume(body[...], payload: $0) }
    var pieces = ChunkedDecoder()
    var piecesPayload: [UInt8] = []
    var consumed = 0
    var failed = false
    while consumed < body.count && !pieces.isComplete {
        let end = min(body.count, consumed + step)
        guard
            let n = try? withUnsafeMutablePointer(
                to: &piecesPayload, { try pieces.consume(body[consumed..<end], payload: $0) })
        else {
            failed = true
            break
        }
        consumed += n
    }
    precondition(failed == (wholeResult == nil), "the split changed whether the body is valid")
    guard let n = wholeResult, whole.isComplete else { return 0 }
    precondition(pieces.isComplete && consumed == n && piecesPayload == wholePayload, "the split changed the reading")
    // The same body in a message, read by the lenient reader.
    let message =
        Array("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".utf8) + body[0..<n]
    if let difference = readingsDiffer(message) { fatalError(difference) }
    return 0
}
