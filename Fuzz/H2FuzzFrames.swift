// Shared by the HTTP/2 fuzz targets: fuzz input read as HTTP/2 frames (RFC 9113 §4.1).

/// Frames from `input[start...]`: each a type (the first byte mod 10), flags, a stream (`stream` maps the byte) and
/// a payload. A HEADERS payload (its first byte under 0x80) is HPACK literals without indexing from fields, each
/// name and value a `names`/`values` entry (a byte under 200) or raw input bytes, so that the fuzzer reaches
/// requests and responses nghttp2 accepts; any other payload is up to 63 raw bytes.
func fuzzFrames(
    _ input: [UInt8], from start: Int, names: [[UInt8]], values: [[UInt8]], maximumFields: Int,
    stream: (UInt8) -> UInt8
) -> [UInt8] {
    var i = start
    func next() -> UInt8? {
        guard i < input.count else { return nil }
        defer { i += 1 }
        return input[i]
    }
    func raw(_ count: Int) -> [UInt8] {
        defer { i = min(input.count, i + count) }
        return Array(input[i..<min(input.count, i + count)])
    }
    var wire: [UInt8] = []
    while let kind = next(), let flags = next(), let streamByte = next() {
        let type = kind % 10
        var payload: [UInt8] = []
        if type == 1 && kind & 0x80 == 0 {
            let count = Int(next() ?? 0) % maximumFields
            for _ in 0..<count {
                guard let n = next(), let v = next() else { break }
                let name = n < 200 ? names[Int(n) % names.count] : raw(Int(n % 8))
                let value = v < 200 ? values[Int(v) % values.count] : raw(Int(v % 16))
                payload += [0x00, UInt8(name.count)] + name + [UInt8(value.count)] + value
            }
        } else {
            payload = raw(Int(next() ?? 0) % 64)
        }
        let n = payload.count
        wire += [UInt8(n >> 16), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags | (type == 1 ? 0x04 : 0)]
        wire += [0, 0, 0, stream(streamByte)] + payload
    }
    return wire
}
