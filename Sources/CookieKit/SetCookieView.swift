import JSONStream

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the parser puts each cookie-av it finds: a ``SetCookie``'s own list, or the reused storage of a
/// ``SetCookieParser``.
@usableFromInline
protocol SetCookieSpans: ~Copyable {
    /// Called once, before the first attribute, when the line has any.
    mutating func reserveForAttributes()
    mutating func append(_ span: SetCookie.Layout.Span)
}

extension GrowableBuffer: SetCookieSpans where Element == SetCookie.Layout.Span {
    @usableFromInline func reserveForAttributes() {}
}

/// A Set-Cookie line parsed where it lies: its bytes and the positions of its parts, in memory that someone
/// else owns: until the parser's next line (``SetCookieParser/parse(_:)``), or for one call (``SetCookie/withView(_:)``).
///
/// The proxy's path: each line of a response head is parsed in the head's own buffer, its attributes listed in
/// storage reused from line to line, so nothing is copied or allocated per line before the rules look at it.
package struct SetCookieView {
    /// The field value.
    package let bytes: UnsafeBufferPointer<UInt8>
    let pair: SetCookie.Layout.Pair
    /// The cookie-avs in order.
    let spans: UnsafeBufferPointer<SetCookie.Layout.Span>

    /// See ``SetCookie/problem``.
    package var problem: SetCookie.Problem? { pair.problem }

    /// The cookie-name bytes (``SetCookie/nameBytes``).
    package var nameBytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[Int(pair.nameStart)..<Int(pair.nameEnd)])
    }

    /// The cookie-name as text (``SetCookie/name``).
    package var name: String { String(lossy: nameBytes) }

    /// Where the value of the Domain attribute in effect lies in ``bytes`` (§5.6.3: the last one whose value a user
    /// agent reads), leading dot dropped but not lowercased; nil when there is none (``SetCookie/domainRange``).
    package var domainRange: Range<Int>? {
        var i = spans.count - 1
        while i >= 0 {
            let span = spans[i]
            i -= 1
            guard span.kind == .domain else { continue }
            var vs = Int(span.valueStart)
            let ve = Int(span.valueEnd)
            if ve - vs > Int(SetCookie.maximumAttributeValueLength) { continue }
            if vs < ve && bytes[vs] == 0x2E { vs += 1 }
            return vs..<ve
        }
        return nil
    }

    /// Whether the line is exactly the bytes in `other`.
    package func hasBytes(_ other: UnsafeBufferPointer<UInt8>) -> Bool { SetCookie.same(bytes, other) }

    /// The line as a ``SetCookie`` of its own (a copy, parsed again).
    package func copy() -> SetCookie { SetCookie(bytes) }
}

/// Parses lines into ``SetCookieView``s, one at a time, reusing its storage for their attributes.
package struct SetCookieParser: ~Copyable {
    private var spans = GrowableBuffer<SetCookie.Layout.Span>(capacity: 16)

    package init() {}

    /// `bytes` parsed (RFC 6265bis §5.6, as ``SetCookie/init(bytes:)``). The view is valid while `bytes` is and
    /// until this parser's next parse.
    package mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> SetCookieView {
        spans.removeAll()
        let pair = SetCookie.Layout.parse(bytes, into: &spans)
        return SetCookieView(bytes: bytes, pair: pair, spans: spans.elements)
    }
}

extension SetCookie {
    /// `body` with a view of this value (for the code paths that take one).
    package func withView<R, E: Error>(_ body: (SetCookieView) throws(E) -> R) throws(E) -> R {
        try bytes.withUnsafeBufferPointer { (b) throws(E) -> R in
            try layout.spans.withUnsafeBufferPointer { (spans) throws(E) -> R in
                try body(SetCookieView(bytes: b, pair: layout.pair, spans: spans))
            }
        }
    }
}

extension SetCookie {
    /// Where the name-value-pair of the field value `b` ends (at its `;`, or the end) when the pair itself gives a
    /// user agent no reason to ignore the line (RFC 6265bis §5.6: no control character, a name or a value, the two
    /// at most 4096 bytes together); nil otherwise, and for a pair with a tab (allowed, but told apart from the
    /// control characters only by the full parse).
    package static func pairEnd(ifSound b: UnsafeBufferPointer<UInt8>) -> Int? {
        var controls: UInt64 = 0
        let pair = Layout.scanPair(b, controls: &controls)
        // The scan may also have flagged bytes of the word after the `;`: nil then too, which only costs the
        // caller the full parse.
        guard controls == 0, Layout.lengthProblem(pair) == nil else { return nil }
        return Int(pair.pairEnd)
    }
}
