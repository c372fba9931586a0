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
        try set(spanIndex: layout.spans.lastIndex { $0.kind == kind }, name: kind.canonicalName, value: value)
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
            if !contains(kind) { append(kind.canonicalName) }
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
        if layout.pairHasEquals {
            replace(Int(layout.nameStart)..<Int(layout.nameEnd), with: Array(newName.utf8))
        } else if !newName.isEmpty {
            let at = Int(layout.valueStart)
            replace(at..<at, with: Array((newName + "=").utf8))
        }
    }

    /// Changes the cookie-value (quotes, if wanted, are part of `newValue`).
    public mutating func setValue(_ newValue: String) throws(EditError) {
        try Self.checkValue(newValue, what: "cookie value")
        replace(Int(layout.valueStart)..<Int(layout.valueEnd), with: Array(newValue.utf8))
    }

    // MARK: - Mechanics

    private mutating func set(spanIndex: Int?, name: String, value: String) throws(EditError) {
        try Self.checkValue(value, what: "\(name) value")
        guard let spanIndex else {
            append("\(name)=\(value)")
            return
        }
        let span = layout.spans[spanIndex]
        if span.hasEquals {
            replace(Int(span.valueStart)..<Int(span.valueEnd), with: Array(value.utf8))
        } else {
            let at = Int(span.nameEnd)
            replace(at..<at, with: Array("=\(value)".utf8))
        }
    }

    /// Appends `; text`, reusing an empty trailing cookie-av (`a=b;`) instead of writing `;;`.
    private mutating func append(_ text: String) {
        if let last = layout.spans.last, last.nameStart == last.nameEnd, !last.hasEquals {
            replace(Int(last.start)..<Int(last.end), with: Array(" \(text)".utf8))
        } else {
            // Appending one cookie-av (validated: no ';', no control character) cannot change what comes before
            // it, so the layout gains one span instead of being recomputed.
            let start = bytes.count + 1
            bytes.append(0x3B)
            bytes.append(0x20)
            bytes.append(contentsOf: text.utf8)
            layout.spans.append(bytes.withUnsafeBufferPointer { Layout.span(in: $0, from: start, to: $0.count) })
        }
    }

    private mutating func removeSpans(_ indices: [Int]) {
        guard !indices.isEmpty else { return }
        for index in indices.reversed() {
            let span = layout.spans[index]
            bytes.removeSubrange(Int(span.start) - 1..<Int(span.end))
        }
        reparse()
    }

    private mutating func replace(_ range: Range<Int>, with new: [UInt8]) {
        if bytes[range].elementsEqual(new) { return }
        bytes.replaceSubrange(range, with: new)
        reparse()
    }

    private mutating func reparse() {
        layout = bytes.withUnsafeBufferPointer { Layout.parse($0) }
    }

    static func checkValue(_ value: String, what: String) throws(EditError) {
        for byte in value.utf8 where byte == 0x3B || ASCII.isForbiddenControl(byte) {
            throw EditError(description: "\(what) must not contain ';' or control characters: \(value.debugDescription)")
        }
        if value.utf8.count > Int(maximumAttributeValueLength) {
            throw EditError(description: "\(what) is longer than 1024 bytes")
        }
    }

    static func checkToken(_ name: String, what: String, allowEmpty: Bool = false) throws(EditError) {
        if name.isEmpty && !allowEmpty { throw EditError(description: "\(what) must not be empty") }
        for byte in name.utf8 where !ASCII.isTokenChar(byte) {
            throw EditError(description: "\(what) must be an HTTP token (RFC 9110 §5.6.2): \(name.debugDescription)")
        }
    }
}
