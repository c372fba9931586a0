/// A field section as fields, not text: what one codec hands another for a message's trailers (RFC 9110 §6.5),
/// whichever protocol each speaks. HTTP/1.1's chunked decoder reads a trailer section into it and its encoder writes
/// one from it (RFC 9112 §7.1.2); HTTP/2's sessions make it from a HEADERS frame's fields and submit it as one
/// (RFC 9113 §8.1). Names and values are kept as received (an HTTP/2 codec lowercases its names itself), in one
/// buffer with their bounds beside it: a gRPC response's `grpc-status` allocates two arrays, not two per field.
///
/// Whoever makes one leaves out what a trailer section must not carry (``KnownField/isForbiddenInTrailers``).
public struct FieldSection: Sendable, Hashable {
    private var storage: [UInt8] = []
    /// Each field's name end and value end in ``storage`` (its name starts where the one before it ends).
    private var bounds: [Int] = []
    /// A field being read byte by byte (``startField(_:)``): where its value starts, once its name has ended.
    private var valueStart: Int? = nil

    public init() {}

    /// A section of `fields`, in order.
    public init(_ fields: [(String, String)]) {
        for (name, value) in fields { append(name: name.utf8, value: value.utf8) }
    }

    public var isEmpty: Bool { bounds.isEmpty }

    /// The field `name: value`, after those appended before it.
    public mutating func append(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        storage.append(contentsOf: name)
        bounds.append(storage.count)
        storage.append(contentsOf: value)
        bounds.append(storage.count)
    }

    /// Each field's name and value, in order.
    public func forEach(_ body: (ArraySlice<UInt8>, ArraySlice<UInt8>) -> Void) {
        var start = 0
        for i in stride(from: 0, to: bounds.count, by: 2) {
            body(storage[start..<bounds[i]], storage[bounds[i]..<bounds[i + 1]])
            start = bounds[i + 1]
        }
    }

    /// The fields as HTTP/1.1's field lines (`name: value` CRLF each; RFC 9112 §5), appended to `out`.
    public func writeLines(into out: inout [UInt8]) {
        forEach { name, value in
            out.append(contentsOf: name)
            out += [0x3A, 0x20]
            out.append(contentsOf: value)
            out += [0x0D, 0x0A]
        }
    }

    // MARK: Read byte by byte (the chunked decoder's trailer section)

    /// The first byte of a field's name.
    package mutating func startField(_ byte: UInt8) {
        valueStart = nil
        storage.append(byte)
    }

    /// A byte of the name, or of the value once ``endName()`` was called; the value's leading whitespace
    /// (OWS, RFC 9110 §5.6.3) is not part of it.
    package mutating func appendByte(_ byte: UInt8) {
        if let valueStart, storage.count == valueStart, byte == 0x20 || byte == 0x09 { return }
        storage.append(byte)
    }

    /// The name has ended (its colon was read).
    package mutating func endName() {
        bounds.append(storage.count)
        valueStart = storage.count
    }

    /// The value has ended (its CR was read): its trailing whitespace is not part of it.
    package mutating func endValue() {
        let start = valueStart ?? storage.count
        while storage.count > start, storage[storage.count - 1] == 0x20 || storage[storage.count - 1] == 0x09 {
            storage.removeLast()
        }
        bounds.append(storage.count)
        valueStart = nil
    }

    /// Leaves out the field just read (one a trailer section must not carry).
    package mutating func dropLast() {
        bounds.removeLast(2)
        storage.removeSubrange((bounds.last ?? 0)...)
    }

    /// The last field's name.
    package var lastName: ArraySlice<UInt8> {
        storage[(bounds.count > 2 ? bounds[bounds.count - 3] : 0)..<bounds[bounds.count - 2]]
    }
}
