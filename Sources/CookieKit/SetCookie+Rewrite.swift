/// The rule engine's one way of editing a Set-Cookie line: edits planned over the parsed line and written out once.
///
/// The in-place edits (``SetCookie/setFlag(_:_:)``, ``SetCookie/set(_:toBytes:)``,
/// ``SetCookie/addLeadingDotToDomain()``) each move the bytes after the edit and the spans that describe them, and a
/// run of rules makes several such edits to every cookie of a response. Here the usual edits only mark the
/// attributes (kept, removed, a new value, a dot before the value) and list the ones to append; the result is then
/// written in one pass: the bytes of every kept attribute copied as received, each changed one rebuilt around its
/// new value, the appended ones after them.
///
/// What the plan does not model — a line with a problem or an empty cookie-av (an append would reuse it), a value
/// for an attribute written without `=`, a dot for a Domain that is not the last one written, and the actions that
/// need the whole cookie (``edit(_:)``: rename, value, lifetimes, `domain ensure`…) — is done on a working copy
/// the rewrite owns: the plan so far is written into it, and from then on every edit of this line is made there
/// with the in-place edits. Either way the bytes are those of the in-place edits made one after another from the
/// received line (the tests compare them over the corpora).
///
/// The texts of the edits (`; Secure`, `; SameSite=Lax`, compiled once by the caller) are ranges of one byte buffer
/// the caller keeps alive and unchanged from ``begin(_:texts:)`` to ``write(_:)`` (the engine's compiled program,
/// borrowed for one line: no reference count is taken per line); the received line is given to each call that
/// reads it, and the rewrite keeps only positions in it.
package struct SetCookieRewrite: ~Copyable {
    /// A range of ``texts``.
    package struct Text: Sendable {
        package var start: Int32
        package var end: Int32
        package init(start: Int32, end: Int32) {
            self.start = start
            self.end = end
        }
        /// These bytes of `texts`.
        @inlinable @inline(__always)
        package func of(_ texts: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: texts[Int(start)..<Int(end)])
        }
    }

    struct Entry {
        var kind: CookieAttributeKind
        /// Index into the line's spans, or -1 for an appended attribute.
        var span: Int32
        var removed: Bool
        /// A `.` written before the value (``SetCookie/addLeadingDotToDomain()``).
        var dot: Bool
        /// A new value; nil keeps the received one (or, appended, has none).
        var value: Text?
        /// Appended: `; Name`.
        var name: Text?
    }

    /// Whether this line is being edited in place, on ``working`` (see the type's description).
    private var inPlace = false
    /// The working copy, while ``inPlace``.
    private var working = SetCookie(bytes: [])
    /// The caller's texts, from ``begin(_:texts:)`` until ``write(_:)``.
    private var texts = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    /// The line's attributes in order, then the appended ones.
    private var entries = GrowableBuffer<Entry>(capacity: 16)
    /// Per kind (``CookieAttributeKind/index``), the last entry not removed, or -1: the occurrence an edit of
    /// the kind looks at, without a scan.
    private var lastLive: UnsafeMutablePointer<Int32>
    private static let kinds = 9
    /// The line as edited, after ``write()``.
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

    /// The line as edited, after ``write()``, valid until the next edit.
    package func withOutput<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        output.withElements(body)
    }

    /// Starts the edits of `cookie`, the received line, which every later call is given again (the rewrite
    /// keeps positions in it, not a copy); the edits' texts are ranges of `texts`, which must stay valid and
    /// unchanged until ``write(_:)``.
    package mutating func begin(_ cookie: SetCookie, texts: UnsafeBufferPointer<UInt8>) {
        self.texts = texts
        inPlace = false
        entries.removeAll()
        lastLive.update(repeating: -1, count: Self.kinds)
        // A line with a problem is reparsed by the in-place edits (its offset may move or vanish).
        let plain =
            cookie.layout.problem == nil
            && cookie.layout.spans.withUnsafeBufferPointer { spans in
                for index in spans.indices {
                    let span = spans[index]
                    // An empty cookie-av (`a=b;`) would be reused by an append.
                    if span.nameStart == span.nameEnd && !span.hasEquals { return false }
                    add(Entry(kind: span.kind, span: Int32(index), removed: false, dot: false, value: nil, name: nil))
                }
                return true
            }
        if !plain {
            inPlace = true
            working = cookie
        }
    }

    /// From here on, this line is edited in place: the plan so far is written into the working copy.
    private mutating func editInPlace(_ cookie: SetCookie) {
        guard !inPlace else { return }
        _ = writeLine(cookie)
        inPlace = true
        working = output.withElements { SetCookie(bytes: Array($0)) }
    }

    /// The value an entry has now (as ``SetCookie/lastWrittenValue(of:)`` would see it), without the dot.
    private func value(
        _ entry: Entry, _ cookie: SetCookie, _ b: UnsafeBufferPointer<UInt8>, _ t: UnsafeBufferPointer<UInt8>
    ) -> UnsafeBufferPointer<UInt8> {
        if let value = entry.value { return value.of(t) }
        guard entry.span >= 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
        let span = cookie.layout.spans[Int(entry.span)]
        return UnsafeBufferPointer(rebasing: b[Int(span.valueStart)..<Int(span.valueEnd)])
    }

    /// The last entry of a kind that is not removed; with `written`, the last whose value a user agent reads
    /// (at most 1024 bytes, RFC 6265bis §5.6 attributes step 6).
    private func last(
        _ kind: CookieAttributeKind, written: Bool, _ cookie: SetCookie, _ b: UnsafeBufferPointer<UInt8>,
        _ t: UnsafeBufferPointer<UInt8>
    ) -> Int? {
        var i = Int(lastLive[kind.index])
        if !written || i < 0 { return i < 0 ? nil : i }
        while i >= 0 {
            let e = entries[i]
            if e.kind == kind && !e.removed
                && value(e, cookie, b, t).count + (e.dot ? 1 : 0) <= Int(SetCookie.maximumAttributeValueLength)
            {
                return i
            }
            i -= 1
        }
        return nil
    }

    /// ``SetCookie/setFlag(_:_:)`` on; `text` is `; Name`.
    package mutating func flagOn(_ kind: CookieAttributeKind, text: Text) {
        if inPlace { return working.setFlag(kind, true) }
        if lastLive[kind.index] >= 0 { return }
        add(Entry(kind: kind, span: -1, removed: false, dot: false, value: nil, name: text))
    }

    /// ``SetCookie/setFlag(_:_:)`` off, ``SetCookie/remove(_:)``: every occurrence removed.
    package mutating func remove(_ kind: CookieAttributeKind) {
        if inPlace { return working.remove(kind) }
        for i in 0..<entries.count where entries[i].kind == kind { entries[i].removed = true }
        lastLive[kind.index] = -1
    }

    /// ``SetCookie/set(_:toBytes:)`` with a value checked when `text` was compiled: `text` is `; Name=value`,
    /// the name `nameLength` bytes. The last occurrence gets the value, or `text` is appended. With
    /// `unlessEqualIgnoringCase`, a value in effect that differs only in ASCII case is left (SameSite).
    package mutating func set(
        _ kind: CookieAttributeKind, text: Text, nameLength: Int, unlessEqualIgnoringCase: Bool, in cookie: SetCookie
    ) {
        let value = Text(start: text.start + 3 + Int32(nameLength), end: text.end)
        let name = Text(start: text.start, end: text.start + 2 + Int32(nameLength))
        if !inPlace {
            let t = texts
            let planned = cookie.bytes.withUnsafeBufferPointer { b in
                plan(kind, value: value, name: name, unlessEqualIgnoringCase: unlessEqualIgnoringCase, cookie, b, t)
            }
            if planned { return }
            editInPlace(cookie)
        }
        let v = value.of(texts)
        if unlessEqualIgnoringCase,
            let current = working.lastWrittenValue(of: kind), SetCookie.valuesEqualIgnoringCase(current, v)
        {
            return
        }
        working.set(kind, validated: v)
    }

    /// ``set(_:text:nameLength:unlessEqualIgnoringCase:)`` in the plan; false when the last occurrence is
    /// written without `=` (the in-place edit inserts one, then the line is reparsed).
    private mutating func plan(
        _ kind: CookieAttributeKind, value: Text, name: Text, unlessEqualIgnoringCase: Bool, _ cookie: SetCookie,
        _ b: UnsafeBufferPointer<UInt8>, _ t: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        if unlessEqualIgnoringCase, let w = last(kind, written: true, cookie, b, t) {
            let current = self.value(entries[w], cookie, b, t)
            let new = value.of(t)
            if entries[w].dot
                ? new.first == 0x2E && SetCookie.valuesEqualIgnoringCase(new.dropFirst(), current)
                : SetCookie.valuesEqualIgnoringCase(current, new)
            {
                return true
            }
        }
        guard let i = last(kind, written: false, cookie, b, t) else {
            add(Entry(kind: kind, span: -1, removed: false, dot: false, value: value, name: name))
            return true
        }
        let e = entries[i]
        if e.span >= 0 ? !cookie.layout.spans[Int(e.span)].hasEquals : e.value == nil { return false }
        entries[i].value = value
        entries[i].dot = false
        return true
    }

    /// ``SetCookie/addLeadingDotToDomain()``.
    package mutating func addLeadingDotToDomain(in cookie: SetCookie) {
        if !inPlace {
            let t = texts
            let planned = cookie.bytes.withUnsafeBufferPointer { b -> Bool in
                guard let w = last(.domain, written: true, cookie, b, t) else { return true }
                let current = value(entries[w], cookie, b, t)
                if entries[w].dot || current.isEmpty || current[0] == 0x2E { return true }
                // The Domain in effect is not the last one written (an over-long value after it).
                guard last(.domain, written: false, cookie, b, t) == w else { return false }
                entries[w].dot = true
                return true
            }
            if planned { return }
            editInPlace(cookie)
        }
        working.addLeadingDotToDomain()
    }

    /// Any other edit, made with the in-place edits on the working copy (``SetCookie``'s public API). Returns what
    /// `body` returns.
    package mutating func edit<R, E: Error>(in cookie: SetCookie, _ body: (inout SetCookie) throws(E) -> R) throws(E)
        -> R
    {
        editInPlace(cookie)
        return try body(&working)
    }

    /// Writes the edited line (read it with ``withOutput(_:)``); true when it differs from `cookie`, the received
    /// one.
    package mutating func write(_ cookie: SetCookie) -> Bool {
        let changed = writeLine(cookie)
        texts = UnsafeBufferPointer(start: nil, count: 0)
        // The working copy's storage would keep the caller's next line from reusing its own.
        if inPlace { working = SetCookie(bytes: []) }
        return changed
    }

    private mutating func writeLine(_ cookie: SetCookie) -> Bool {
        output.removeAll()
        if inPlace {
            working.bytes.withUnsafeBufferPointer { output.append($0) }
            return !cookie.hasBytes(working.bytes[...])
        }
        let spans = cookie.layout.spans
        var changed = false
        let t = texts
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
                            output.append(value.of(t))
                        } else {
                            output.append(
                                UnsafeBufferPointer(rebasing: b[Int(span.valueStart)..<Int(span.valueEnd)]))
                        }
                        run = Int(span.valueEnd)..<whole.upperBound
                        changed = true
                    }
                } else if !e.removed, let name = e.name {
                    flush()
                    run = b.count..<b.count
                    output.append(name.of(t))
                    if let value = e.value {
                        output.append(0x3D)
                        if e.dot { output.append(0x2E) }
                        output.append(value.of(t))
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
