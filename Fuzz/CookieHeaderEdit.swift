// libFuzzer target: the request-cookie edits. For any Cookie header, removing, setting and renaming each of its
// pairs changes that pair's bytes (and, for a removal, one separator) and no other byte.
import CookieKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCookieHeaderEdit(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: min(size, 2048)))
    let header = CookieHeader(input)
    let b = header.bytes
    precondition(b == input)
    for (k, pair) in header.pairs.enumerated() {
        precondition(pair.range.lowerBound <= pair.name.lowerBound && pair.value.upperBound == pair.range.upperBound)
        var removed = header
        removed.remove(at: k)
        let cut =
            k > 0
            ? header.pairs[k - 1].range.upperBound..<pair.range.upperBound
            : header.pairs.count > 1 ? pair.range.lowerBound..<header.pairs[1].range.lowerBound : 0..<b.count
        precondition(removed.bytes == Array(b[..<cut.lowerBound] + b[cut.upperBound...]), "remove touched another byte")
        precondition(removed.pairs.count == header.pairs.count - 1 || pair.range.isEmpty, "remove lost another pair")
        var set = header
        set.setValue(at: k, to: Array("V".utf8))
        precondition(set.bytes == Array(b[..<pair.value.lowerBound] + [0x56] + b[pair.value.upperBound...]))
        var renamed = header
        renamed.setName(at: k, to: Array("N".utf8))
        let expected =
            pair.name.isEmpty && pair.value.lowerBound == pair.range.lowerBound
            ? Array(b[..<pair.range.lowerBound] + Array("N=".utf8) + b[pair.range.lowerBound...])
            : Array(b[..<pair.name.lowerBound] + [0x4E] + b[pair.name.upperBound...])
        precondition(renamed.bytes == expected, "rename touched another byte")
    }
    return 0
}
