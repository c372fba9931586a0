import Testing

@testable import CookieKit

/// The rewrite (the rule engine's one way of editing a line) against the in-place edits it stands for, made one
/// after another from the received line: the same bytes, whether it planned the edits or made them in place.
@Suite struct SetCookieRewriteTests {
    enum Op: CustomStringConvertible {
        case flagOn(CookieAttributeKind)
        case remove(CookieAttributeKind)
        case set(CookieAttributeKind, String, unlessEqualIgnoringCase: Bool)
        case addDot
        /// What the engine makes through ``SetCookieRewrite/edit(_:)``: the public edits on the working copy.
        case rename(String)
        case value(String)

        var description: String {
            switch self {
            case .flagOn(let k): "flagOn(\(k))"
            case .remove(let k): "remove(\(k))"
            case .set(let k, let v, let u): "set(\(k), \(v)\(u ? ", unlessEqualIgnoringCase" : ""))"
            case .addDot: "addDot"
            case .rename(let n): "rename(\(n))"
            case .value(let v): "value(\(v))"
            }
        }
    }

    /// The edits in place, as the engine makes them.
    static func inPlace(_ line: [UInt8], _ ops: [Op]) throws -> [UInt8] {
        var cookie = SetCookie(bytes: line)
        for op in ops {
            switch op {
            case .flagOn(let kind): cookie.setFlag(kind, true)
            case .remove(let kind): cookie.remove(kind)
            case .set(let kind, let value, let unlessEqual):
                if unlessEqual,
                    let current = cookie.lastWrittenValue(of: kind),
                    current.elementsEqual(value.utf8, by: { ($0 | 0x20) == ($1 | 0x20) })
                {
                    continue
                }
                try cookie.set(kind, to: value)
            case .addDot: cookie.addLeadingDotToDomain()
            case .rename(let name): try cookie.rename(to: name)
            case .value(let value): try cookie.setValue(value)
            }
        }
        return cookie.bytes
    }

    /// The rewrite, as the engine drives it: the texts compiled into one array first, then the edits by range.
    /// `changed` is what it reports.
    static func rewritten(_ line: [UInt8], _ ops: [Op]) throws -> (bytes: [UInt8], changed: Bool) {
        var texts: [UInt8] = []
        var ranges: [SetCookieRewrite.Text] = []
        func text(_ s: String) -> SetCookieRewrite.Text {
            let start = Int32(texts.count)
            texts += s.utf8
            return SetCookieRewrite.Text(start: start, end: Int32(texts.count))
        }
        for op in ops {
            switch op {
            case .flagOn(let kind): ranges.append(text("; \(kind.canonicalName)"))
            case .set(let kind, let value, _): ranges.append(text("; \(kind.canonicalName)=\(value)"))
            default: ranges.append(SetCookieRewrite.Text(start: 0, end: 0))
            }
        }
        func edit(_ cookie: SetCookieView, _ texts: UnsafeBufferPointer<UInt8>) throws -> ([UInt8], Bool) {
            var rewrite = SetCookieRewrite()
            rewrite.begin(cookie, texts: texts)
            for (op, range) in zip(ops, ranges) {
                switch op {
                case .flagOn(let kind): rewrite.flagOn(kind, text: range)
                case .remove(let kind): rewrite.remove(kind)
                case .set(let kind, _, let unlessEqual):
                    rewrite.set(
                        kind, text: range, nameLength: kind.canonicalName.utf8.count,
                        unlessEqualIgnoringCase: unlessEqual,
                        in: cookie)
                case .addDot: rewrite.addLeadingDotToDomain(in: cookie)
                case .rename(let name): try rewrite.edit(in: cookie) { try $0.rename(to: name) }
                case .value(let value): try rewrite.edit(in: cookie) { try $0.setValue(value) }
                }
            }
            let changed = rewrite.write(cookie)
            return (rewrite.withOutput { Array($0) }, changed)
        }
        // The texts stay valid from begin to write, as the engine keeps its program alive; the line is parsed where
        // it lies, as the proxy does (SetCookieParser).
        var parser = SetCookieParser()
        return try texts.withUnsafeBufferPointer { texts in
            try line.withUnsafeBufferPointer { try edit(parser.parse($0), texts) }
        }
    }

    static let cases: [(String, [Op], String)] = [
        (
            "sid=abc; Domain=example.test; Path=/; HttpOnly",
            [.set(.domain, ".example.test", unlessEqualIgnoringCase: false), .flagOn(.secure), .flagOn(.httpOnly)],
            "sid=abc; Domain=.example.test; Path=/; HttpOnly; Secure"
        ),
        (
            "track=xyz; Path=/; Domain=Example.Test; SameSite=None; Secure",
            [.set(.sameSite, "Lax", unlessEqualIgnoringCase: true), .addDot],
            "track=xyz; Path=/; Domain=.Example.Test; SameSite=Lax; Secure"
        ),
        ("a=b; SameSite=lax", [.set(.sameSite, "Lax", unlessEqualIgnoringCase: true)], "a=b; SameSite=lax"),
        ("a=b ;secure; Secure ;Path=/x", [.remove(.secure)], "a=b ;Path=/x"),
        ("a=b", [.flagOn(.secure), .remove(.secure), .flagOn(.httpOnly)], "a=b; HttpOnly"),
        ("a=b;  Domain = x.test ", [.addDot, .addDot], "a=b;  Domain = .x.test "),
        (
            "a=b; Domain=x.test", [.addDot, .set(.domain, "y.test", unlessEqualIgnoringCase: false)],
            "a=b; Domain=y.test"
        ),
        // The plan's masks hold 64 attributes: the 64th (bit 63) edited, removed and kept.
        (
            "a=b" + String(repeating: "; x", count: 62) + "; Domain=x.test",
            [.addDot, .flagOn(.secure), .remove(.path)],
            "a=b" + String(repeating: "; x", count: 62) + "; Domain=.x.test; Secure"
        ),
        (
            "a=b" + String(repeating: "; x", count: 63) + "; Path=/",
            [.remove(.path), .set(.sameSite, "Lax", unlessEqualIgnoringCase: true)],
            "a=b" + String(repeating: "; x", count: 63) + "; SameSite=Lax"
        ),
    ]

    @Test(arguments: cases)
    func writesWhatTheInPlaceEditsWrite(_ line: String, _ ops: [Op], _ expected: String) throws {
        let rewritten = try Self.rewritten(Array(line.utf8), ops)
        #expect(String(decoding: rewritten.bytes, as: UTF8.self) == expected)
        #expect(try Self.inPlace(Array(line.utf8), ops) == rewritten.bytes)
        #expect(rewritten.changed == (expected != line))
    }

    /// What the plan does not model is made in place on the rewrite's own copy, after the edits planned so far.
    @Test(arguments: [
        ("a=b;", [Op.flagOn(.secure)], "a=b; Secure"),  // an empty cookie-av an append reuses
        ("a=b; ; Path=/", [.flagOn(.secure), .remove(.path)], "a=b; ; Secure"),
        ("a\u{1}=b", [.flagOn(.secure)], "a\u{1}=b; Secure"),  // a problem: the in-place edits reparse
        (
            "a=b; Domain", [.flagOn(.httpOnly), .set(.domain, "x.test", unlessEqualIgnoringCase: false)],
            "a=b; Domain=x.test; HttpOnly"
        ),
        (
            "a=b; Domain=x.test; Secure", [.remove(.secure), .rename("c"), .addDot, .value("d")],
            "c=d; Domain=.x.test"
        ),
        ("nameless", [.flagOn(.secure), .rename("n")], "n=nameless; Secure"),
        // More attributes than the plan's masks hold (64).
        (
            "a=b" + String(repeating: "; x", count: 64) + "; Domain=x.test; Secure",
            [.addDot, .remove(.secure), .flagOn(.httpOnly)],
            "a=b" + String(repeating: "; x", count: 64) + "; Domain=.x.test; HttpOnly"
        ),
    ])
    func whatThePlanDoesNotModelIsMadeInPlace(_ line: String, _ ops: [Op], _ expected: String) throws {
        let rewritten = try Self.rewritten(Array(line.utf8), ops)
        #expect(String(decoding: rewritten.bytes, as: UTF8.self) == expected)
        #expect(try Self.inPlace(Array(line.utf8), ops) == rewritten.bytes)
        #expect(rewritten.changed)
    }

    /// Every corpus header under random chains of edits, the planned ones and the in-place ones mixed: the same
    /// bytes as the in-place edits, every time.
    @Test func agreesWithTheInPlaceEditsOverTheCorpora() throws {
        var lines: [[UInt8]] = []
        for file in ["http-state.json", "wpt.json"] {
            lines += try ConformanceSuiteHeaders.load("\(ConformanceTests.folder)/\(file)")
        }
        #expect(lines.count > 500)
        let kinds: [CookieAttributeKind] = [.domain, .path, .sameSite, .maxAge]
        let flags: [CookieAttributeKind] = [.secure, .httpOnly, .partitioned]
        let values = ["x.example", ".x.example", "/", "Lax", "lax", "None", "1", "a b"]
        var generator = SplitMix64(seed: 2026)
        var chains = 0
        var inPlaceToo = 0
        for line in lines {
            for _ in 0..<8 {
                var ops: [Op] = []
                for _ in 0..<(1 + Int(generator.next() % 6)) {
                    let kind = kinds[Int(generator.next() % UInt64(kinds.count))]
                    let flag = flags[Int(generator.next() % UInt64(flags.count))]
                    let value = values[Int(generator.next() % UInt64(values.count))]
                    switch generator.next() % 12 {
                    case 0..<3: ops.append(.flagOn(flag))
                    case 3: ops.append(.remove(generator.next() % 2 == 0 ? flag : kind))
                    case 4..<8: ops.append(.set(kind, value, unlessEqualIgnoringCase: generator.next() % 2 == 0))
                    case 8, 9: ops.append(.addDot)
                    case 10: ops.append(.rename(generator.next() % 2 == 0 ? "renamed" : "__Host-x"))
                    default: ops.append(.value(generator.next() % 2 == 0 ? "v" : "\"q q\""))
                    }
                }
                chains += 1
                if ops.contains(where: {
                    if case .rename = $0 { true } else if case .value = $0 { true } else { false }
                }) {
                    inPlaceToo += 1
                }
                let expected = try Self.inPlace(line, ops)
                let rewritten = try Self.rewritten(line, ops)
                #expect(
                    rewritten.bytes == expected,
                    "\(String(decoding: line, as: UTF8.self)) \(ops): \(String(decoding: rewritten.bytes, as: UTF8.self))"
                )
                #expect(rewritten.changed == (expected != line))
            }
        }
        // Both ways are exercised: chains the plan writes alone, and chains that go on in place.
        #expect(inPlaceToo > chains / 10 && inPlaceToo < chains)
    }
}
