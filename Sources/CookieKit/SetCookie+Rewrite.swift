import JSONStream

/// The rule engine's one way of editing a Set-Cookie line: edits planned over the parsed line and written out once.
///
/// The in-place edits (``SetCookie/setFlag(_:_:)``, ``SetCookie/set(_:toBytes:)``,
/// ``SetCookie/addLeadingDotToDomain()``) each move the bytes after the edit and the spans that describe them, and a
/// run of rules makes several such edits to every cookie of a response. Here the usual edits only mark the
/// attributes (removed, a new value, a dot before the value: a bit per attribute in a mask for each) and list the
/// ones to append; the result is then written in one pass: the received bytes copied in runs up to each marked
/// attribute, each changed one rebuilt around its new value, the appended ones after them.
///
/// What the plan does not model — a line with a problem, more attributes than a mask holds (64), or an empty
/// cookie-av (an append would reuse it), a value for an attribute written without `=`, a dot for a Domain that is
/// not the last one written, and the actions that need the whole cookie (``edit(_:)``: rename, value, lifetimes,
/// `domain ensure`…) — is done on a working copy the rewrite owns: the plan so far is written into it, and from then
/// on every edit of this line is made there with the in-place edits. Either way the bytes are those of the in-place
/// edits made one after another from the received line (the tests compare them over the corpora).
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

    /// An attribute appended to the line.
    struct Appended {
        var kind: CookieAttributeKind
        var removed: Bool
        /// A `.` written before the value (``SetCookie/addLeadingDotToDomain()``).
        var dot: Bool
        /// Its value, if it has one.
        var value: Text?
        /// `; Name`.
        var name: Text
    }

    /// Whether this line is being edited in place, on ``working`` (see the type's description).
    private var inPlace = false
    /// The working copy, while ``inPlace``.
    private var working = SetCookie(bytes: [])
    /// The caller's texts, from ``begin(_:texts:)`` until ``write(_:)``.
    private var texts = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    // The entries an edit looks at are numbered: the line's attributes first (their spans' indices), then the
    // appended ones. The plan for the line's own (at most 64: a line with more is edited in place) is one bit per
    // attribute in each of these masks, and a new value where `newValues` has its bit.
    /// How many attributes the line has.
    private var received = 0
    private var removed: UInt64 = 0
    private var dots: UInt64 = 0
    private var newValues: UInt64 = 0
    /// The new values, by attribute (64).
    private var values: UnsafeMutablePointer<Text>
    /// Per kind (``CookieAttributeKind/index``), the line's attributes of that kind.
    private var ofKind: UnsafeMutablePointer<UInt64>
    private var appended = GrowableBuffer<Appended>(capacity: 16)
    /// Per kind, the last entry not removed, or -1: the occurrence an edit of the kind looks at, without a scan.
    private var lastLive: UnsafeMutablePointer<Int32>
    private static let kinds = 9
    /// The line as edited, after ``write()``.
    private var output = ByteWriter(capacity: 512)

    package init() {
        lastLive = .allocate(capacity: Self.kinds)
        lastLive.initialize(repeating: -1, count: Self.kinds)
        ofKind = .allocate(capacity: Self.kinds)
        ofKind.initialize(repeating: 0, count: Self.kinds)
        values = .allocate(capacity: 64)
        values.initialize(repeating: Text(start: 0, end: 0), count: 64)
    }

    deinit {
        lastLive.deallocate()
        ofKind.deallocate()
        values.deallocate()
    }

    @inline(__always)
    private mutating func append(_ entry: Appended) {
        lastLive[entry.kind.index] = Int32(received + appended.count)
        appended.append(entry)
    }

    /// The line as edited, after ``write()``, valid until the next edit. (Mutating only so that a rewrite kept in a
    /// class's property is read where it lies: a borrow of it copied the whole rewrite first.)
    package mutating func withOutput<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        output.withElements(body)
    }

    /// Starts the edits of `cookie`, the received line, which every later call is given again (the rewrite
    /// keeps positions in it, not a copy); the edits' texts are ranges of `texts`, which must stay valid and
    /// unchanged until ``write(_:)``.
    package mutating func begin(_ cookie: SetCookieView, texts: UnsafeBufferPointer<UInt8>) {
        self.texts = texts
        inPlace = false
        (removed, dots, newValues) = (0, 0, 0)
        appended.removeAll()
        lastLive.update(repeating: -1, count: Self.kinds)
        ofKind.update(repeating: 0, count: Self.kinds)
        let spans = cookie.spans
        received = spans.count
        // A line with a problem is reparsed by the in-place edits (its offset may move or vanish).
        var plain = cookie.problem == nil && spans.count <= 64
        if plain {
            for index in spans.indices {
                let span = spans[index]
                // An empty cookie-av (`a=b;`) would be reused by an append.
                if span.nameStart == span.nameEnd && !span.hasEquals {
                    plain = false
                    break
                }
                ofKind[span.kind.index] |= 1 << UInt64(index)
                lastLive[span.kind.index] = Int32(index)
            }
        }
        if !plain {
            inPlace = true
            working = cookie.copy()
        }
    }

    /// From here on, this line is edited in place: the plan so far is written into the working copy.
    private mutating func editInPlace(_ cookie: SetCookieView) {
        guard !inPlace else { return }
        _ = writeLine(cookie)
        inPlace = true
        working = output.withElements { SetCookie(bytes: Array($0)) }
    }

    @inline(__always) private func kind(_ i: Int, _ cookie: SetCookieView) -> CookieAttributeKind {
        i < received ? cookie.spans[i].kind : appended[i - received].kind
    }
    @inline(__always) private func isRemoved(_ i: Int) -> Bool {
        i < received ? removed >> UInt64(i) & 1 != 0 : appended[i - received].removed
    }
    @inline(__always) private func hasDot(_ i: Int) -> Bool {
        i < received ? dots >> UInt64(i) & 1 != 0 : appended[i - received].dot
    }
    @inline(__always) private func newValue(_ i: Int) -> Text? {
        i < received ? (newValues >> UInt64(i) & 1 != 0 ? values[i] : nil) : appended[i - received].value
    }

    /// The value entry `i` has now (as ``SetCookie/lastWrittenValue(of:)`` would see it), without the dot.
    @inline(__always)
    private func value(
        _ i: Int, _ cookie: SetCookieView, _ t: UnsafeBufferPointer<UInt8>
    ) -> UnsafeBufferPointer<UInt8> {
        if let value = newValue(i) { return value.of(t) }
        guard i < received else { return UnsafeBufferPointer(start: nil, count: 0) }
        let span = cookie.spans[i]
        return UnsafeBufferPointer(rebasing: cookie.bytes[Int(span.valueStart)..<Int(span.valueEnd)])
    }

    /// The last entry of a kind that is not removed; with `written`, the last whose value a user agent reads
    /// (at most 1024 bytes, RFC 6265bis §5.6 attributes step 6).
    @inline(__always)
    private func last(
        _ kind: CookieAttributeKind, written: Bool, _ cookie: SetCookieView, _ t: UnsafeBufferPointer<UInt8>
    ) -> Int? {
        var i = Int(lastLive[kind.index])
        if !written || i < 0 { return i < 0 ? nil : i }
        while i >= 0 {
            if self.kind(i, cookie) == kind && !isRemoved(i)
                && value(i, cookie, t).count + (hasDot(i) ? 1 : 0) <= Int(SetCookie.maximumAttributeValueLength)
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
        append(Appended(kind: kind, removed: false, dot: false, value: nil, name: text))
    }

    /// ``SetCookie/setFlag(_:_:)`` off, ``SetCookie/remove(_:)``: every occurrence removed.
    package mutating func remove(_ kind: CookieAttributeKind) {
        if inPlace { return working.remove(kind) }
        removed |= ofKind[kind.index]
        for i in 0..<appended.count where appended[i].kind == kind { appended[i].removed = true }
        lastLive[kind.index] = -1
    }

    /// ``SetCookie/set(_:toBytes:)`` with a value checked when `text` was compiled: `text` is `; Name=value`,
    /// the name `nameLength` bytes. The last occurrence gets the value, or `text` is appended. With
    /// `unlessEqualIgnoringCase`, a value in effect that differs only in ASCII case is left (SameSite).
    package mutating func set(
        _ kind: CookieAttributeKind, text: Text, nameLength: Int, unlessEqualIgnoringCase: Bool,
        in cookie: SetCookieView
    ) {
        let value = Text(start: text.start + 3 + Int32(nameLength), end: text.end)
        let name = Text(start: text.start, end: text.start + 2 + Int32(nameLength))
        if !inPlace {
            if plan(kind, value: value, name: name, unlessEqualIgnoringCase: unlessEqualIgnoringCase, cookie, texts) {
                return
            }
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
        _ kind: CookieAttributeKind, value: Text, name: Text, unlessEqualIgnoringCase: Bool, _ cookie: SetCookieView,
        _ t: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        if unlessEqualIgnoringCase, let w = last(kind, written: true, cookie, t) {
            let current = self.value(w, cookie, t)
            let new = value.of(t)
            if hasDot(w)
                ? new.first == 0x2E && SetCookie.valuesEqualIgnoringCase(new.dropFirst(), current)
                : SetCookie.valuesEqualIgnoringCase(current, new)
            {
                return true
            }
        }
        guard let i = last(kind, written: false, cookie, t) else {
            append(Appended(kind: kind, removed: false, dot: false, value: value, name: name))
            return true
        }
        if i < received {
            if !cookie.spans[i].hasEquals { return false }
            let bit: UInt64 = 1 << UInt64(i)
            (newValues, dots) = (newValues | bit, dots & ~bit)
            values[i] = value
        } else {
            if appended[i - received].value == nil { return false }
            appended[i - received].value = value
            appended[i - received].dot = false
        }
        return true
    }

    /// ``SetCookie/addLeadingDotToDomain()``.
    package mutating func addLeadingDotToDomain(in cookie: SetCookieView) {
        if !inPlace {
            if planDot(cookie, texts) { return }
            editInPlace(cookie)
        }
        working.addLeadingDotToDomain()
    }

    /// ``addLeadingDotToDomain(in:)`` in the plan; false when the Domain in effect is not the last one written (an
    /// over-long value after it).
    private mutating func planDot(_ cookie: SetCookieView, _ t: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let w = last(.domain, written: true, cookie, t) else { return true }
        let current = value(w, cookie, t)
        if hasDot(w) || current.isEmpty || current[0] == 0x2E { return true }
        guard last(.domain, written: false, cookie, t) == w else { return false }
        if w < received {
            dots |= 1 << UInt64(w)
        } else {
            appended[w - received].dot = true
        }
        return true
    }

    /// Any other edit, made with the in-place edits on the working copy (``SetCookie``'s public API). Returns what
    /// `body` returns.
    package mutating func edit<R, E: Error>(in cookie: SetCookieView, _ body: (inout SetCookie) throws(E) -> R)
        throws(E)
        -> R
    {
        editInPlace(cookie)
        return try body(&working)
    }

    /// Writes the edited line (read it with ``withOutput(_:)``); true when it differs from `cookie`, the received
    /// one.
    package mutating func write(_ cookie: SetCookieView) -> Bool {
        let changed = writeLine(cookie)
        texts = UnsafeBufferPointer(start: nil, count: 0)
        // The working copy's storage would keep the caller's next line from reusing its own.
        if inPlace { working = SetCookie(bytes: []) }
        return changed
    }

    /// Whether the last line written was edited on a working copy (see the type's description) rather than from
    /// the plan.
    package var editedInPlace: Bool { inPlace }

    /// Makes the output `head` followed by `tail` (a line whose edits are known already).
    package mutating func write(_ head: UnsafeBufferPointer<UInt8>, _ tail: UnsafeBufferPointer<UInt8>) {
        output.removeAll()
        output.append(head)
        output.append(tail)
    }

    private mutating func writeLine(_ cookie: SetCookieView) -> Bool {
        output.removeAll()
        if inPlace {
            return working.bytes.withUnsafeBufferPointer {
                output.append($0)
                return !cookie.hasBytes($0)
            }
        }
        let (b, t, spans) = (cookie.bytes, texts, cookie.spans)
        var changed = false
        // The received bytes from `run` on are copied as they are up to the next attribute the plan changes.
        var run = 0
        var edited = removed | dots | newValues
        while edited != 0 {
            let i = edited.trailingZeroBitCount
            edited &= edited &- 1
            let span = spans[i]
            changed = true
            if removed >> UInt64(i) & 1 != 0 {
                // The attribute with its `;`.
                output.append(UnsafeBufferPointer(rebasing: b[run..<Int(span.start) - 1]))
                run = Int(span.end)
                continue
            }
            output.append(UnsafeBufferPointer(rebasing: b[run..<Int(span.valueStart)]))
            if dots >> UInt64(i) & 1 != 0 { output.append(0x2E) }
            if newValues >> UInt64(i) & 1 != 0 {
                output.append(values[i].of(t))
            } else {
                output.append(UnsafeBufferPointer(rebasing: b[Int(span.valueStart)..<Int(span.valueEnd)]))
            }
            run = Int(span.valueEnd)
        }
        output.append(UnsafeBufferPointer(rebasing: b[run...]))
        for k in 0..<appended.count {
            let e = appended[k]
            if e.removed { continue }
            output.append(e.name.of(t))
            if let value = e.value {
                output.append(0x3D)
                if e.dot { output.append(0x2E) }
                output.append(value.of(t))
            }
            changed = true
        }
        // A new value equal to the old one, or a removal undone by an append of the same bytes, is no change.
        return changed && !output.withElements { cookie.hasBytes($0) }
    }
}
