/// Edits planned over a parsed line and written out once: the rule engine's per-cookie path.
///
/// The in-place edits (``SetCookie/setFlag(_:_:)``, ``SetCookie/set(_:toBytes:)``,
/// ``SetCookie/addLeadingDotToDomain()``) each move the bytes after the edit and the spans that describe them.
/// A run of rules makes several such edits to every cookie of a response. Here the edits only mark the
/// attributes (kept, removed, a new value, a dot before the value) and list the ones to append; the result is
/// then written in one pass: the bytes of every kept attribute copied as received, each changed one rebuilt
/// around its new value, the appended ones after them. The result is byte for byte what the in-place edits give
/// (the tests compare the two over the corpora): where they would do something this plan does not model (a line
/// with a problem, an empty cookie-av that an append would reuse, a value given to an attribute written without
/// `=`), ``begin(_:)`` or the edit returns false and the caller edits in place instead.
///
/// The plan holds pointers to the texts it is given (precompiled by the caller): they must stay valid until
/// ``write(_:)``.
package struct SetCookieRewrite: ~Copyable {
    struct Entry {
        var kind: CookieAttributeKind
        /// Index into the line's spans, or -1 for an appended attribute.
        var span: Int32
        var removed: Bool
        /// A `.` written before the value (``SetCookie/addLeadingDotToDomain()``).
        var dot: Bool
        /// A new value; nil keeps the received one (or, appended, has none).
        var value: UnsafeBufferPointer<UInt8>?
        /// Appended: `; Name`.
        var name: UnsafeBufferPointer<UInt8>?
    }

    /// The line's attributes in order, then the appended ones.
    private var entries = GrowableBuffer<Entry>(capacity: 16)
    /// Per kind (``CookieAttributeKind/index``), the last entry not removed, or -1: the occurrence an edit of
    /// the kind looks at, without a scan.
    private var lastLive: UnsafeMutablePointer<Int32>
    private static let kinds = 9
    /// The line as edited, after ``write(_:)``.
    private var output = ByteWriter(capacity: 512)

    package init() {
        lastLive = .allocate(capacity: Self.kinds)
        lastLive.initialize(repeating: -1, count: Self.kinds)
    }

    deinit {
        lastLive.deallocate()
    }

    private mutating func add(_ entry: Entry) {
        if !entry.removed { lastLive[entry.kind.index] = Int32(entries.count) }
        entries.append(entry)
    }

    /// The line as edited, after ``write(_:)``, valid until the next edit.
    package func withOutput<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        output.withElements(body)
    }

    /// Starts a plan for `cookie`; false for a line the plan does not model.
    package mutating func begin(_ cookie: SetCookie) -> Bool {
        guard cookie.layout.problem == nil else { return false }
        entries.removeAll()
        lastLive.update(repeating: -1, count: Self.kinds)
        return cookie.layout.spans.withUnsafeBufferPointer { spans in
            for index in spans.indices {
                let span = spans[index]
                // An empty cookie-av (`a=b;`) would be reused by an append.
                if span.nameStart == span.nameEnd && !span.hasEquals { return false }
                add(Entry(kind: span.kind, span: Int32(index), removed: false, dot: false, value: nil, name: nil))
            }
            return true
        }
    }

    /// The value an entry has now (as ``SetCookie/lastWrittenValue(of:)`` would see it), without the dot.
    private func value(_ entry: Entry, in cookie: SetCookie, _ b: UnsafeBufferPointer<UInt8>)
        -> UnsafeBufferPointer<UInt8>
    {
        if let value = entry.value { return value }
        guard entry.span >= 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
        let span = cookie.layout.spans[Int(entry.span)]
        return UnsafeBufferPointer(rebasing: b[Int(span.valueStart)..<Int(span.valueEnd)])
    }

    /// The last entry of a kind that is not removed; with `written`, the last whose value a user agent reads
    /// (at most 1024 bytes, RFC 6265bis §5.6 attributes step 6).
    private func last(_ kind: CookieAttributeKind, written: Bool, in cookie: SetCookie, _ b: UnsafeBufferPointer<UInt8>)
        -> Int?
    {
        var i = Int(lastLive[kind.index])
        if !written || i < 0 { return i < 0 ? nil : i }
        while i >= 0 {
            let e = entries[i]
            if e.kind == kind && !e.removed
                && (!written
                    || value(e, in: cookie, b).count + (e.dot ? 1 : 0) <= Int(SetCookie.maximumAttributeValueLength))
            {
                return i
            }
            i -= 1
        }
        return nil
    }

    /// ``SetCookie/setFlag(_:_:)`` on: `text` (`; Name`) appended unless the attribute is written.
    package mutating func flagOn(_ kind: CookieAttributeKind, text: UnsafeBufferPointer<UInt8>) {
        if lastLive[kind.index] >= 0 { return }
        add(Entry(kind: kind, span: -1, removed: false, dot: false, value: nil, name: text))
    }

    /// ``SetCookie/setFlag(_:_:)`` off, ``SetCookie/remove(_:)``: every occurrence removed.
    package mutating func remove(_ kind: CookieAttributeKind) {
        for i in 0..<entries.count where entries[i].kind == kind { entries[i].removed = true }
        lastLive[kind.index] = -1
    }

    /// ``SetCookie/set(_:toBytes:)`` with a checked value: the last occurrence gets it, or `name` (`; Name`) and
    /// the value are appended. With `unlessEqualIgnoringCase`, a value in effect that differs only in ASCII case
    /// is left. False when the last occurrence is written without `=` (the caller edits in place).
    package mutating func set(
        _ kind: CookieAttributeKind, value: UnsafeBufferPointer<UInt8>, name: UnsafeBufferPointer<UInt8>,
        unlessEqualIgnoringCase: Bool, in cookie: SetCookie
    ) -> Bool {
        cookie.bytes.withUnsafeBufferPointer { b in
            if unlessEqualIgnoringCase, let w = last(kind, written: true, in: cookie, b) {
                let current = self.value(entries[w], in: cookie, b)
                if entries[w].dot
                    ? value.first == 0x2E && SetCookie.valuesEqualIgnoringCase(value.dropFirst(), current)
                    : SetCookie.valuesEqualIgnoringCase(current, value)
                {
                    return true
                }
            }
            guard let i = last(kind, written: false, in: cookie, b) else {
                add(Entry(kind: kind, span: -1, removed: false, dot: false, value: value, name: name))
                return true
            }
            let e = entries[i]
            if e.span >= 0 ? !cookie.layout.spans[Int(e.span)].hasEquals : e.value == nil { return false }
            entries[i].value = value
            entries[i].dot = false
            return true
        }
    }

    /// ``SetCookie/addLeadingDotToDomain()``. False when the Domain in effect is not the last one written (an
    /// over-long value after it).
    package mutating func addLeadingDotToDomain(in cookie: SetCookie) -> Bool {
        cookie.bytes.withUnsafeBufferPointer { b in
            guard let w = last(.domain, written: true, in: cookie, b) else { return true }
            let current = value(entries[w], in: cookie, b)
            if entries[w].dot || current.isEmpty || current[0] == 0x2E { return true }
            guard last(.domain, written: false, in: cookie, b) == w else { return false }
            entries[w].dot = true
            return true
        }
    }

    /// Writes the edited line (read it with ``withOutput(_:)``); true when it differs from the received one.
    package mutating func write(_ cookie: SetCookie) -> Bool {
        output.removeAll()
        let spans = cookie.layout.spans
        var changed = false
        cookie.bytes.withUnsafeBufferPointer { b in
            // Runs of received bytes are copied at once.
            var run = 0..<Int(cookie.layout.pairEnd)
            func flush() {
                if !run.isEmpty { output.append(UnsafeBufferPointer(rebasing: b[run])) }
            }
            for i in 0..<entries.count {
                let e = entries[i]
                if e.span >= 0 {
                    let span = spans[Int(e.span)]
                    // The attribute with its `;`.
                    let whole = Int(span.start) - 1..<Int(span.end)
                    if e.removed {
                        flush()
                        run = whole.upperBound..<whole.upperBound
                        changed = true
                    } else if e.value == nil && !e.dot {
                        run = run.lowerBound..<whole.upperBound
                    } else {
                        run = run.lowerBound..<Int(span.valueStart)
                        flush()
                        if e.dot { output.append(0x2E) }
                        if let value = e.value {
                            output.append(value)
                        } else {
                            output.append(UnsafeBufferPointer(rebasing: b[Int(span.valueStart)..<Int(span.valueEnd)]))
                        }
                        run = Int(span.valueEnd)..<whole.upperBound
                        changed = true
                    }
                } else if !e.removed, let name = e.name {
                    flush()
                    run = b.count..<b.count
                    output.append(name)
                    if let value = e.value {
                        output.append(0x3D)
                        if e.dot { output.append(0x2E) }
                        output.append(value)
                    }
                    changed = true
                }
            }
            flush()
        }
        // A new value equal to the old one, or a removal undone by an append of the same bytes, is no change.
        return changed && !output.withElements { cookie.hasBytes($0) }
    }
}
