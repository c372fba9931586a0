#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Edits with a minimal diff: only the bytes of the edited part change, everything else stays as it was.
/// Writing is strict: a name or value that would change the structure of the line (a `;`, a control
/// character, a `=` in a name) is refused with ``SetCookie/EditError``.
extension SetCookie {
    /// A refused edit.
    public struct EditError: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    /// Sets an attribute's value. The last occurrence (the one in effect, §5.7) gets the new value;
    /// when there is none, `; Name=value` is appended. Setting the value it already has changes nothing.
    public mutating func set(_ kind: CookieAttributeKind, to value: String) throws(EditError) {
        precondition(kind != .unknown, "use set(attributeNamed:to:) for other attributes")
        var value = value
        let error: EditError? = value.withUTF8 { v in
            if let error = Self.valueError(v, what: kind.canonicalName) { return error }
            self.set(kind, validated: v)
            return nil
        }
        if let error { throw error }
    }

    /// Sets an attribute's value given as bytes, as ``set(_:to:)``.
    public mutating func set(_ kind: CookieAttributeKind, toBytes value: [UInt8]) throws(EditError) {
        precondition(kind != .unknown, "use set(attributeNamed:to:) for other attributes")
        let error: EditError? = value.withUnsafeBufferPointer { v in
            if let error = Self.valueError(v, what: kind.canonicalName) { return error }
            self.set(kind, validated: v)
            return nil
        }
        if let error { throw error }
    }

    /// The work of ``set(_:to:)`` once the value is known to be valid (the rule engine's compiled values are
    /// checked once, when the rules are loaded).
    package mutating func set(_ kind: CookieAttributeKind, validated v: UnsafeBufferPointer<UInt8>) {
        if let index = layout.spans.lastIndex(where: { $0.kind == kind }) {
            setValue(ofSpan: index, to: v)
        } else {
            var name = kind.canonicalName
            name.withUTF8 { appendAttribute(name: $0, value: v, kind: kind) }
        }
    }

    /// Whether `value` may be written as an attribute value (no `;`, no control character, at most 1024 bytes).
    public static func checkWritableValue(_ value: String) throws(EditError) {
        try checkValue(value, what: "value")
    }

    /// `Domain=example.com` → `Domain=.example.com`: the Domain in effect gets a leading dot; nothing when it is
    /// absent, empty or already dotted. (As `set(.domain, to: "." + value)`, without building the value.)
    public mutating func addLeadingDotToDomain() {
        // Positions only: a slice of the bytes held across the edit would make the edit copy them.
        guard let written = lastWrittenValue(of: .domain).map({ $0.startIndex..<$0.endIndex }), !written.isEmpty,
            bytes[written.lowerBound] != 0x2E
        else { return }
        guard let index = layout.spans.lastIndex(where: { $0.kind == .domain }),
            Int(layout.spans[index].valueStart) == written.lowerBound, layout.pair.problem == nil
        else {
            // The last Domain is not the one in effect (an over-long value): the general edit.
            try? set(.domain, toBytes: [0x2E] + bytes[written])
            return
        }
        let dot: [UInt8] = [0x2E]
        let at = written.lowerBound
        dot.withUnsafeBufferPointer { Self.replace(&bytes, at..<at, with: $0) }
        // The value grew by one byte at its front: it ends one later, and everything after moves by one.
        layout.spans[index].valueEnd += 1
        layout.spans[index].end += 1
        shiftSpans(from: index + 1, by: 1)
    }

    /// Makes room for `extra` more bytes of edits, so a run of edits reallocates at most once (the first
    /// edit of a value that shares its bytes copies them anyway).
    public mutating func reserveCapacity(forAdding extra: Int) {
        if bytes.capacity < bytes.count + extra { bytes.reserveCapacity(bytes.count + extra) }
        if layout.spans.capacity < layout.spans.count + 4 { layout.spans.reserveCapacity(layout.spans.count + 4) }
    }

    /// Sets any attribute by name (matched case-insensitively), as ``set(_:to:)``.
    public mutating func set(attributeNamed name: String, to value: String?) throws(EditError) {
        try Self.checkToken(name, what: "attribute name")
        if let value {
            try set(spanIndex: indices(ofAttributeNamed: name).last, name: name, value: value)
        } else if !contains(attributeNamed: name) {
            append(name)
        }
    }

    /// Turns a flag attribute (Secure, HttpOnly, Partitioned) on or off. Idempotent: never `Secure; Secure`.
    public mutating func setFlag(_ kind: CookieAttributeKind, _ on: Bool) {
        precondition(kind.isFlag, "\(kind) is not a flag")
        if on {
            if !contains(kind) {
                var name = kind.canonicalName
                name.withUTF8 { appendAttribute(name: $0, value: nil, kind: kind) }
            }
        } else {
            remove(kind)
        }
    }

    /// Removes every occurrence of an attribute, with the `;` before it. Absent: changes nothing.
    public mutating func remove(_ kind: CookieAttributeKind) {
        removeSpans(layout.spans.indices.filter { layout.spans[$0].kind == kind })
    }

    /// Removes every occurrence of an attribute spelled `name` (case-insensitive).
    public mutating func remove(attributeNamed name: String) {
        removeSpans(indices(ofAttributeNamed: name))
    }

    /// Changes the cookie-name. A nameless cookie (`Set-Cookie: foo`) gains `name=` in front of its value.
    public mutating func rename(to newName: String) throws(EditError) {
        try Self.checkToken(newName, what: "cookie name", allowEmpty: true)
        if layout.pair.pairHasEquals {
            replace(Int(layout.pair.nameStart)..<Int(layout.pair.nameEnd), with: Array(newName.utf8))
        } else if !newName.isEmpty {
            let at = Int(layout.pair.valueStart)
            replace(at..<at, with: Array((newName + "=").utf8))
        }
    }

    /// Changes the cookie-value (quotes, if wanted, are part of `newValue`).
    public mutating func setValue(_ newValue: String) throws(EditError) {
        try Self.checkValue(newValue, what: "cookie value")
        replace(Int(layout.pair.valueStart)..<Int(layout.pair.valueEnd), with: Array(newValue.utf8))
    }

    /// The span of a cookie-av just appended as `; name` or `; name=value` (no edge whitespace), from just after
    /// its `;` to the end of the bytes.
    private mutating func appendSpan(from start: Int, nameLength: Int, hasValue: Bool, kind: CookieAttributeKind) {
        let nameStart = start + 1
        let nameEnd = nameStart + nameLength
        let end = bytes.count
        layout.spans.append(
            Layout.Span(
                start: Int32(truncatingIfNeeded: start), end: Int32(truncatingIfNeeded: end),
                nameStart: Int32(truncatingIfNeeded: nameStart), nameEnd: Int32(truncatingIfNeeded: nameEnd),
                valueStart: Int32(truncatingIfNeeded: hasValue ? nameEnd + 1 : end),
                valueEnd: Int32(truncatingIfNeeded: end), hasEquals: hasValue, kind: kind))
    }

    // MARK: - Mechanics

    private mutating func set(spanIndex: Int?, name: String, value: String) throws(EditError) {
        try Self.checkValue(value, what: "\(name) value")
        var value = value
        value.withUTF8 { v in
            if let spanIndex {
                setValue(ofSpan: spanIndex, to: v)
            } else {
                var name = name
                name.withUTF8 { appendAttribute(name: $0, value: v) }
            }
        }
    }

    /// Replaces the value of one attribute (validated by the caller).
    private mutating func setValue(ofSpan index: Int, to value: UnsafeBufferPointer<UInt8>) {
        let span = layout.spans[index]
        guard span.hasEquals else {
            let at = Int(span.nameEnd)
            replace(at..<at, with: [0x3D] + value)
            return
        }
        let range = Int(span.valueStart)..<Int(span.valueEnd)
        if range.count == value.count
            && bytes.withUnsafeBufferPointer({ b in
                value.count == 0 || memcmp(b.baseAddress! + range.lowerBound, value.baseAddress!, value.count) == 0
            })
        {
            return
        }
        // A non-empty value without edge whitespace, put where a non-empty value was, parses back into the same
        // places (it has no ';' or control character): only the spans after it move, no reparse.
        let keepsLayout =
            layout.pair.problem == nil && !range.isEmpty && !value.isEmpty && !ASCII.isWSP(value[0])
            && !ASCII.isWSP(value[value.count - 1])
        Self.replace(&bytes, range, with: value)
        guard keepsLayout else { return reparse() }
        let delta = Int32(value.count - range.count)
        layout.spans[index].valueEnd += delta
        layout.spans[index].end += delta
        shiftSpans(from: index + 1, by: delta)
    }

    /// Appends `; text`, reusing an empty trailing cookie-av (`a=b;`) instead of writing `;;`.
    private mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { appendAttribute(name: $0, value: nil) }
    }

    /// Appends `; name` or `; name=value` (validated by the caller), reusing an empty trailing cookie-av
    /// (`a=b;`) instead of writing `;;`.
    private mutating func appendAttribute(
        name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>?, kind knownKind: CookieAttributeKind? = nil
    ) {
        if let last = layout.spans.last, last.nameStart == last.nameEnd, !last.hasEquals {
            var text: [UInt8] = [0x20]
            text.append(contentsOf: name)
            if let value {
                text.append(0x3D)
                text.append(contentsOf: value)
            }
            replace(Int(last.start)..<Int(last.end), with: text)
            return
        }
        // Appending one cookie-av (validated: no ';', no control character) cannot change what comes before
        // it, so the layout gains one span instead of being recomputed. Names written here are tokens and
        // values have no edge whitespace when they come from the engine; anything else is measured by `span`.
        let start = bytes.count + 1
        bytes.append(0x3B)
        bytes.append(0x20)
        bytes.append(contentsOf: name)
        if let value {
            bytes.append(0x3D)
            bytes.append(contentsOf: value)
        }
        let edgeWhitespace =
            name.isEmpty || ASCII.isWSP(name[name.count - 1])
            || (value.map { !$0.isEmpty && (ASCII.isWSP($0[0]) || ASCII.isWSP($0[$0.count - 1])) } ?? false)
        if edgeWhitespace || name.contains(0x3D) {
            layout.spans.append(bytes.withUnsafeBufferPointer { Layout.span(in: $0, from: start, to: $0.count) })
            return
        }
        let kind =
            knownKind
            ?? bytes.withUnsafeBufferPointer { CookieAttributeKind.classify($0, start + 1, start + 1 + name.count) }
        appendSpan(from: start, nameLength: name.count, hasValue: value != nil, kind: kind)
    }

    private mutating func removeSpans(_ indices: [Int]) {
        guard !indices.isEmpty else { return }
        // Removing whole cookie-avs with their ';' leaves the others as they were, shifted; a line with a
        // problem (whose offset may move or vanish) is reparsed instead.
        let keepsLayout = layout.pair.problem == nil
        for index in indices.reversed() {
            let span = layout.spans[index]
            let removed = Int(span.start) - 1..<Int(span.end)
            bytes.removeSubrange(removed)
            if keepsLayout {
                layout.spans.remove(at: index)
                shiftSpans(from: index, by: -Int32(removed.count))
            }
        }
        if !keepsLayout { reparse() }
    }

    /// Array.replaceSubrange with a generic collection allocates a new buffer even when the array is unique
    /// and has room; this moves the tail within the buffer instead.
    static func replace(_ bytes: inout [UInt8], _ range: Range<Int>, with new: UnsafeBufferPointer<UInt8>) {
        let delta = new.count - range.count
        guard delta != 0 || !new.isEmpty else { return }
        let tail = bytes.count - range.upperBound
        for _ in 0..<max(0, delta) { bytes.append(0) }
        bytes.withUnsafeMutableBufferPointer { b in
            let base = b.baseAddress!
            if delta != 0 { (base + range.upperBound + delta).update(from: base + range.upperBound, count: tail) }
            if let source = new.baseAddress { (base + range.lowerBound).update(from: source, count: new.count) }
        }
        if delta < 0 { bytes.removeLast(-delta) }
    }

    private mutating func shiftSpans(from first: Int, by delta: Int32) {
        guard delta != 0 else { return }
        for j in first..<layout.spans.count {
            layout.spans[j].start += delta
            layout.spans[j].end += delta
            layout.spans[j].nameStart += delta
            layout.spans[j].nameEnd += delta
            layout.spans[j].valueStart += delta
            layout.spans[j].valueEnd += delta
        }
    }

    private mutating func replace(_ range: Range<Int>, with new: [UInt8]) {
        if bytes[range].elementsEqual(new) { return }
        new.withUnsafeBufferPointer { Self.replace(&bytes, range, with: $0) }
        reparse()
    }

    private mutating func reparse() {
        layout = bytes.withUnsafeBufferPointer { Layout.parse($0) }
    }

    static func checkValue(_ value: String, what: @autoclosure () -> String) throws(EditError) {
        try checkValue(bytes: value.utf8, what: what())
    }

    /// `what` names the value in the error; built only when there is one.
    static func checkValue(bytes value: some Collection<UInt8>, what: @autoclosure () -> String) throws(EditError) {
        for byte in value where byte == 0x3B || ASCII.isForbiddenControl(byte) {
            let text = String(lossy: value)
            throw EditError(
                description: "\(what()) must not contain ';' or control characters: \(text.debugDescription)")
        }
        if value.count > Int(maximumAttributeValueLength) {
            throw EditError(description: "\(what()) is longer than 1024 bytes")
        }
    }

    /// The error for an attribute value that may not be written, nil when it may (``checkValue(bytes:what:)``
    /// as a value, for the closures that hold the bytes).
    static func valueError(_ value: UnsafeBufferPointer<UInt8>, what: String) -> EditError? {
        do {
            try checkValue(bytes: value, what: "\(what) value")
        } catch {
            return error
        }
        return nil
    }

    static func checkToken(_ name: String, what: String, allowEmpty: Bool = false) throws(EditError) {
        if name.isEmpty && !allowEmpty { throw EditError(description: "\(what) must not be empty") }
        for byte in name.utf8 where !ASCII.isTokenChar(byte) {
            throw EditError(description: "\(what) must be an HTTP token (RFC 9110 §5.6.2): \(name.debugDescription)")
        }
    }
}
