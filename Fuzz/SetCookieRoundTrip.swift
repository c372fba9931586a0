// libFuzzer target: the Set-Cookie parser. Every input parses, and serialising it gives the input back byte for
// byte (the lossless promise); the user-agent view and the lint run without a crash. The proxy's path, the line
// parsed where it lies (SetCookieParser) and rewritten by the plan (SetCookieRewrite), writes what the public
// in-place edits write from the same bytes.
import CookieKit

let lintURLs = ["https://app.example.com/a/b", "http://127.0.0.1/", "http://[::1]/x"].map { RequestURL($0)! }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSetCookie(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let cookie = SetCookie(bytes: input)
    precondition(cookie.bytes == input, "the round trip changed the bytes")
    _ = cookie.attributes
    _ = cookie.problem
    // The lint (the engines' findings among it) and the engines' verdicts read from it, from a name, an IPv4 and an
    // IPv6 host.
    for url in lintURLs {
        let findings = CookieLint.findings(for: cookie, from: url, now: 1_700_000_000)
        _ = EngineVerdict.summary(findings)
    }

    // What bench.rules does to every cookie, both ways.
    var edited = cookie
    edited.addLeadingDotToDomain()
    edited.setFlag(.secure, true)
    edited.remove(.path)
    let lax = Array("Lax".utf8)
    if let current = edited.lastWrittenValue(of: .sameSite), SetCookie.valuesEqualIgnoringCase(current, lax) {
    } else {
        try! edited.set(.sameSite, to: "Lax")
    }
    let texts = Array("; Secure; SameSite=Lax".utf8)
    var parser = SetCookieParser()
    var rewrite = SetCookieRewrite()
    let (bytes, changed) = texts.withUnsafeBufferPointer { t in
        input.withUnsafeBufferPointer { line -> ([UInt8], Bool) in
            let view = parser.parse(line)
            precondition(view.problem == cookie.problem, "the two parses disagree on the problem")
            rewrite.begin(view, texts: t)
            rewrite.addLeadingDotToDomain(in: view)
            rewrite.flagOn(.secure, text: SetCookieRewrite.Text(start: 0, end: 8))
            rewrite.remove(.path)
            rewrite.set(
                .sameSite, text: SetCookieRewrite.Text(start: 8, end: 22), nameLength: 8,
                unlessEqualIgnoringCase: true, in: view)
            let changed = rewrite.write(view)
            return (rewrite.withOutput { Array($0) }, changed)
        }
    }
    precondition(bytes == edited.bytes, "the rewrite and the in-place edits disagree")
    precondition(changed == (edited.bytes != input), "the rewrite misreports a change")
    return 0
}
