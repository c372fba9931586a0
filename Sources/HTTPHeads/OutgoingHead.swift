import HTTPGrammar

/// A message head on its way out: every line the proxy does not touch is copied from the received bytes
/// unchanged; removed lines vanish and added or edited lines are written fresh (CRLF, `Name: value`).
public struct OutgoingHead: Sendable {
    public let source: HTTPHead
    /// Where a replacement start line is in ``editedBytes`` (with its CRLF), bounds in one word (lower << 32 | upper):
    /// zero to keep the received one. One word so that the head stays small enough to be passed in registers.
    private var startLineBounds: UInt64 = 0
    private var startLineRange: Range<Int>? {
        startLineBounds == 0 ? nil : Int(startLineBounds >> 32)..<Int(startLineBounds & 0xFFFF_FFFF)
    }
    public private(set) var lines: [Line]
    /// What the proxy writes, whole lines (`Name: value\r\n`, and a new start line) one after another: one buffer
    /// for all of them, so that no line holds a reference of its own and lines written in order go out with one
    /// copy. Nil until a line is written.
    private var storage = EditedStorage()
    private var edited: EditedLines? {
        get { storage.lines }
        _modify { yield &storage.lines }
    }
    /// The written-line buffer, for ``HeadStorage`` to reuse once the head is gone.
    package var writtenStorage: EditedLines? { storage.lines }
    /// The bytes of the written and edited lines (and of a new start line), in the order they were written.
    public var editedBytes: [UInt8] { withEditedBytes { Array($0) } }

    /// A replacement start line (without CRLF), or nil when the received one is kept.
    public var startLine: [UInt8]? {
        guard let r = startLineRange else { return nil }
        return withEditedBytes { Array($0[r.lowerBound..<r.upperBound - 2]) }
    }

    /// A request head's target as its start line will carry it (a route's upstream path, a proxy's absolute form):
    /// the word between the method and the version.
    public var requestTarget: String {
        func target(_ line: UnsafeBufferPointer<UInt8>) -> String {
            guard let first = line.firstIndex(of: 0x20), let last = line.lastIndex(of: 0x20), first < last else {
                return ""
            }
            return String(decoding: UnsafeBufferPointer(rebasing: line[(first + 1)..<last]), as: UTF8.self)
        }
        if let r = startLineRange {
            return withEditedBytes { target(UnsafeBufferPointer(rebasing: $0[r.lowerBound..<(r.upperBound - 2)])) }
        }
        return source.bytes.withUnsafeBufferPointer { target(UnsafeBufferPointer(rebasing: $0[source.startLine])) }
    }

    /// Storage a head is written into, for reuse by a caller that rewrites head after head (``HeadStorage``): a
    /// line list (emptied first) and a buffer for the written lines that no one else holds.
    public struct Storage {
        var lines: [Line]
        var written: EditedLines?
        public init() { (lines, written) = ([], nil) }
        package init(lines: consuming [Line], written: consuming EditedLines?) {
            self.lines = lines
            self.written = written
        }
    }

    package func withEditedBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        guard let edited else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        return edited.withBytes(body)
    }

    /// A line of the head. No case holds a reference: lines are copied, moved and dropped without reference
    /// counting.
    public enum Line: Sendable {
        /// A field of `source`, by index, forwarded byte for byte.
        case original(Int)
        /// A new field line, `name: value\r\n` at `line` in ``editedBytes``, its name's length and classification.
        case written(line: Range<Int>, nameLength: Int, known: KnownField)
        /// A field of `source` with a new value: its name as received, then `: value\r\n`, at `line` in
        /// ``editedBytes``.
        case edited(Int, line: Range<Int>)
    }

    /// The head as received, every line kept; `storage`: a line list and a buffer to write into, so that a caller
    /// rewriting head after head allocates neither (``HeadStorage``).
    public init(_ source: HTTPHead, storage: consuming Storage = Storage()) {
        self.source = source
        // The storage's parts moved out of it (a read of each would be a copy: a reference counted up and down).
        var storage = storage
        var lines: [Line] = []
        swap(&lines, &storage.lines)
        lines.removeAll(keepingCapacity: true)
        // Room for Via, Connection and a few rule additions.
        if lines.capacity < source.fields.count + 4 { lines.reserveCapacity(source.fields.count + 4) }
        for index in source.fields.indices { lines.append(.original(index)) }
        self.lines = lines
        swap(&self.storage.lines, &storage.written)
    }

    /// The bytes of the written line at `line` with a name of `nameLength` bytes: its name, or its value.
    private static func name(_ line: Range<Int>, _ nameLength: Int) -> Range<Int> {
        line.lowerBound..<line.lowerBound + nameLength
    }
    private static func value(_ line: Range<Int>, _ nameLength: Int) -> Range<Int> {
        line.lowerBound + nameLength + 2..<line.upperBound - 2
    }

    @inlinable
    public var count: Int { lines.count }

    /// The field name at `index`, as written.
    public func name(at index: Int) -> String {
        switch lines[index] {
        case .original(let i), .edited(let i, _): return source.name(source.fields[i])
        case .written(let line, let n, _):
            return withEditedBytes { String(decoding: $0[Self.name(line, n)], as: UTF8.self) }
        }
    }

    /// Whether the field at `index` is named `lowercaseName` (ASCII case-insensitive).
    public func name(at index: Int, is lowercaseName: String) -> Bool {
        switch lines[index] {
        case .original(let i), .edited(let i, _): return source.field(source.fields[i], is: lowercaseName)
        case .written(let line, let n, _):
            return withEditedBytes { ByteClass.equalsLowercase($0[Self.name(line, n)], lowercaseName.utf8) }
        }
    }

    /// Whether the field at `index` has a known name (a byte comparison for received fields).
    @inlinable
    public func name(at index: Int, is known: KnownField) -> Bool { self.known(at: index) == known }

    /// The classification of the field at `index` (received lines were classified while parsing).
    @inlinable
    public func known(at index: Int) -> KnownField { Self.known(of: lines[index], in: source) }

    @inlinable
    package static func known(of line: Line, in source: HTTPHead) -> KnownField {
        switch line {
        case .original(let i), .edited(let i, _): return source.fields[i].known
        case .written(_, _, let known): return known
        }
    }

    public func value(at index: Int) -> [UInt8] {
        switch lines[index] {
        case .original(let i): return Array(source.valueBytes(source.fields[i]))
        case .written(let line, let n, _): return withEditedBytes { Array($0[Self.value(line, n)]) }
        case .edited(let i, let line): return withEditedBytes { Array($0[editedValue(i, line)]) }
        }
    }

    /// Where the value of an edited line is in ``editedBytes``: after `Name: `, before CRLF.
    package func editedValue(_ field: Int, _ line: Range<Int>) -> Range<Int> {
        line.lowerBound + source.fields[field].name.count + 2..<line.upperBound - 2
    }

    /// The value without copying when the field is the received one.
    /// The value of line `index` (as ``valueBytes(at:)``), in place for the duration of `body`: no slice, and so no
    /// reference count, per line.
    public func withValueBytes(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        switch lines[index] {
        case .original(let i):
            let range = source.fields[i].value
            source.bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[range])) }
        case .written(let line, let n, _):
            let range = Self.value(line, n)
            withEditedBytes { body(UnsafeBufferPointer(rebasing: $0[range])) }
        case .edited(let i, let line):
            let range = editedValue(i, line)
            withEditedBytes { body(UnsafeBufferPointer(rebasing: $0[range])) }
        }
    }

    public func valueBytes(at index: Int) -> ArraySlice<UInt8> {
        switch lines[index] {
        case .original(let i): return source.valueBytes(source.fields[i])
        case .written(let line, let n, _): return withEditedBytes { Array($0[Self.value(line, n)])[...] }
        case .edited(let i, let line): return withEditedBytes { Array($0[editedValue(i, line)])[...] }
        }
    }

    /// Indices of fields named `lowercaseName`.
    public func indices(of lowercaseName: String) -> [Int] {
        lines.indices.filter { name(at: $0, is: lowercaseName) }
    }

    /// Indices of fields with a known name.
    public func indices(of known: KnownField) -> [Int] {
        lines.indices.filter { name(at: $0, is: known) }
    }

    /// Removes every field with a known name.
    public mutating func removeAll(_ known: KnownField) {
        let source = self.source
        lines.removeAll { Self.known(of: $0, in: source) == known }
    }

    public func contains(_ lowercaseName: String) -> Bool { lines.indices.contains { name(at: $0, is: lowercaseName) } }

    public mutating func remove(at index: Int) { lines.remove(at: index) }

    /// Removes every field named `lowercaseName`.
    public mutating func removeAll(_ lowercaseName: String) {
        let (source, storage) = (self.source, self.storage)
        lines.removeAll { line in
            switch line {
            case .original(let i), .edited(let i, _): return source.field(source.fields[i], is: lowercaseName)
            case .written(let line, let n, _):
                return storage.lines!.withBytes {
                    ByteClass.equalsLowercase($0[Self.name(line, n)], lowercaseName.utf8)
                }
            }
        }
    }

    public mutating func append(name: String, value: [UInt8]) {
        append(name: name, value: value, known: KnownField(name: name))
    }

    /// ``append(name:value:)`` for a name whose classification the caller knows (the proxy's own lines).
    package mutating func append(name: String, value: [UInt8], known: KnownField) {
        value.withUnsafeBufferPointer { append(name: name, value: $0, known: known) }
    }

    /// The line `name: value` at the end, its bytes copied.
    package mutating func append(name: String, value: UnsafeBufferPointer<UInt8>, known: KnownField) {
        var name = name
        name.withUTF8 { name in
            makeRoom(name.count + value.count + 4)
            let line = edited!.appendLine(name: name, value: value)
            lines.append(.written(line: line, nameLength: name.count, known: known))
        }
    }
    public mutating func append(name: String, value: String) { append(name: name, value: Array(value.utf8)) }

    /// Replaces the start line with `line` (without its CRLF), copied.
    public mutating func replaceStartLine(_ line: UnsafeBufferPointer<UInt8>) {
        makeRoom(line.count + 2)
        let range = edited!.appendLine(line)
        startLineBounds = UInt64(range.lowerBound) << 32 | UInt64(range.upperBound)
    }

    /// Room for `length` more bytes in a buffer of the head's own: made at the first line written, copied when a
    /// copy of the head shares it.
    private mutating func makeRoom(_ length: Int) {
        if edited == nil {
            edited = EditedLines.make(capacity: max(512, 2 * length))
        } else if !isKnownUniquelyReferenced(&edited) {
            edited = edited!.copy(capacity: edited!.count + max(512, 2 * length))
        } else if edited!.count + length > edited!.room {
            edited = edited!.copy(capacity: max(2 * edited!.room, edited!.count + length))
        }
    }

    /// Replaces the value at `index`, keeping the field's name as written. The bytes are copied (into
    /// ``editedBytes`` for a received field), so the caller can reuse its buffer.
    public mutating func replaceValue(at index: Int, with value: [UInt8]) {
        value.withUnsafeBufferPointer { replaceValue(at: index, with: $0) }
    }

    /// Replaces the value at `index` with bytes owned by the caller (copied).
    public mutating func replaceValue(at index: Int, with value: UnsafeBufferPointer<UInt8>) {
        switch lines[index] {
        case .original(let i), .edited(let i, _):
            let name = source.fields[i].name
            makeRoom(name.count + value.count + 4)
            let line = source.bytes.withUnsafeBufferPointer { b in
                edited!.appendLine(name: UnsafeBufferPointer(rebasing: b[name]), value: value)
            }
            lines[index] = .edited(i, line: line)
        case .written(let line, let n, let known):
            // The name is in the buffer the new line goes to (which may move): copied out first.
            let name = withEditedBytes { Array($0[Self.name(line, n)]) }
            makeRoom(n + value.count + 4)
            let new = name.withUnsafeBufferPointer { edited!.appendLine(name: $0, value: value) }
            lines[index] = .written(line: new, nameLength: n, known: known)
        }
    }

    /// The head bytes: start line, fields, empty line. Runs of received lines are copied at once.
    public func serialize(into out: inout [UInt8]) {
        let crlf: (UInt8, UInt8) = (0x0D, 0x0A)
        // Room for the whole head at once: appending piece by piece to a new connection's empty buffer grew it
        // several times per head. The bound: every received byte, every edited byte, each written field.
        let bound = out.count + source.bytes.count + (edited?.count ?? 0) + 2
        if bound > out.capacity { out.reserveCapacity(Swift.max(bound, 2 * out.capacity)) }
        // The received and edited bytes are copied from their buffers (an append of an Array's slice went through
        // the generic sequence path and retained the Array), and the lines are read in place by index (a `for` over
        // them copied each line, a call per line to copy and one to destroy it).
        source.bytes.withUnsafeBufferPointer { bytes in
            withEditedBytes { editedBytes in
                if let startLineRange {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: editedBytes[startLineRange]))
                } else {
                    // The received start line with its own line ending.
                    let end = source.fields.first?.line.lowerBound ?? source.startLine.upperBound
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[0..<end]))
                    if source.fields.isEmpty {
                        out.append(crlf.0)
                        out.append(crlf.1)
                    }
                }
                // A run of consecutive received fields is one contiguous range of the source; a run of lines edited
                // in order one range of the edited bytes.
                var run: Range<Int>? = nil
                var editedRun: Range<Int>? = nil
                func flushRuns() {
                    if let current = run { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[current])) }
                    if let current = editedRun {
                        out.append(contentsOf: UnsafeBufferPointer(rebasing: editedBytes[current]))
                    }
                    run = nil
                    editedRun = nil
                }
                for index in lines.indices {
                    switch lines[index] {
                    case .original(let i):
                        let r = source.fields[i].line
                        if let current = run, current.upperBound == r.lowerBound {
                            run = current.lowerBound..<r.upperBound
                        } else {
                            flushRuns()
                            run = r
                        }
                    case .edited(_, let r), .written(let r, _, _):
                        if let current = editedRun, current.upperBound == r.lowerBound {
                            editedRun = current.lowerBound..<r.upperBound
                        } else {
                            flushRuns()
                            editedRun = r
                        }
                    }
                }
                flushRuns()
            }
        }
        out.append(crlf.0)
        out.append(crlf.1)
    }
}

/// A head's ``EditedLines``: sendable as the head is, since only a head that holds the only reference writes to it.
package struct EditedStorage: @unchecked Sendable {
    package var lines: EditedLines?
}

/// The bytes of a head's edited lines, in one allocation (header and bytes): appended to in place, where an append
/// to an Array goes through the generic sequence machinery at several times the cost of copying a line. Written
/// only while its head holds the only reference (``OutgoingHead`` copies it first otherwise).
package final class EditedLines: ManagedBuffer<EditedLines.Header, UInt8> {
    package struct Header {
        var count: Int
        var capacity: Int
    }

    package static func make(capacity: Int) -> EditedLines {
        let made = EditedLines.create(minimumCapacity: capacity) { _ in Header(count: 0, capacity: capacity) }
        return unsafeDowncast(made, to: EditedLines.self)
    }

    package var count: Int { header.count }
    package var room: Int { header.capacity }

    /// A copy with room for `capacity` bytes.
    package func copy(capacity: Int) -> EditedLines {
        let copy = EditedLines.make(capacity: max(capacity, count))
        withUnsafeMutablePointerToElements { from in
            copy.withUnsafeMutablePointerToElements { $0.initialize(from: from, count: count) }
        }
        copy.header.count = count
        return copy
    }

    package func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        withUnsafeMutablePointerToElements { body(UnsafeBufferPointer(start: $0, count: header.count)) }
    }

    /// Appends `line\r\n` (the room for it is there); returns where it is.
    package func appendLine(_ line: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        let start = header.count
        withUnsafeMutablePointerToElements { elements in
            let p = elements + start
            if let l = line.baseAddress { p.initialize(from: l, count: line.count) }
            (p + line.count).initialize(to: 0x0D)
            (p + line.count + 1).initialize(to: 0x0A)
            header.count = start + line.count + 2
        }
        return start..<header.count
    }

    /// Empties the buffer for reuse by its only holder.
    package func removeAll() { header.count = 0 }

    /// Appends `name: value\r\n` (the room for it is there); returns where the line is.
    package func appendLine(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        let start = header.count
        withUnsafeMutablePointerToElements { elements in
            let p = elements + start
            if let n = name.baseAddress { p.initialize(from: n, count: name.count) }
            var at = name.count
            (p + at).initialize(to: 0x3A)
            (p + at + 1).initialize(to: 0x20)
            at += 2
            if let v = value.baseAddress { (p + at).initialize(from: v, count: value.count) }
            at += value.count
            (p + at).initialize(to: 0x0D)
            (p + at + 1).initialize(to: 0x0A)
            header.count = start + at + 2
        }
        return start..<header.count
    }
}
