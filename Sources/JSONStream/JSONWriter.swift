/// JSON text (RFC 8259) written straight into bytes, for output whose shape is fixed in code (the transformation
/// log): no ``JSONValue`` tree is built and freed per object. The caller writes the punctuation of the object
/// it knows; strings are escaped as ``JSONValue`` escapes them, so both write the same text.
public struct JSONWriter: ~Copyable {
    @usableFromInline var out: ByteWriter

    public init(capacity: Int = 1024) { out = ByteWriter(capacity: capacity) }

    /// Bytes written as they are (keys and punctuation known to be valid JSON).
    @inlinable @inline(__always) public mutating func raw(_ text: StaticString) { out.append(text) }
    @inlinable @inline(__always) public mutating func raw(_ byte: UInt8) { out.append(byte) }
    @inlinable @inline(__always) public mutating func raw(_ bytes: UnsafeBufferPointer<UInt8>) { out.append(bytes) }
    /// Another writer's bytes, as they are (a part written once and kept).
    @inlinable @inline(__always) public mutating func raw(_ other: borrowing JSONWriter) {
        out.append(other.out.elements)
    }
    public mutating func raw(_ bytes: ArraySlice<UInt8>) { bytes.withUnsafeBufferPointer { out.append($0) } }

    /// A JSON string of `text`.
    public mutating func string(_ text: String) { JSONValue.writeString(text, to: &out) }

    /// A JSON string of the UTF-8 bytes (invalid UTF-8 is written through as the bytes are; callers pass text).
    public mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) {
        out.append(0x22)
        JSONValue.writeEscaped(bytes, to: &out)
        out.append(0x22)
    }

    /// The escaped bytes without quotes (a string written in parts).
    public mutating func escaped(_ bytes: UnsafeBufferPointer<UInt8>) { JSONValue.writeEscaped(bytes, to: &out) }
    public mutating func escaped(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBufferPointer { JSONValue.writeEscaped($0, to: &out) }
    }

    public mutating func string(_ text: String?) {
        if let text { string(text) } else { out.append("null") }
    }

    public mutating func int(_ value: Int64) { out.appendDecimal(value) }
    public mutating func bool(_ value: Bool) { out.append(value ? "true" : "false") }

    public var count: Int { out.count }
    public mutating func removeAll() { out.removeAll() }

    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R { out.withElements(body) }
}
