// libFuzzer target: the rules' shape cache. Each line of the input (split at LF) goes through the proxy's path
// (RuleEngine.apply(_:line:…shapes:), twice: the outcome worked out and kept, then taken from the cache) and through
// the full path (parse, match, rewrite); every outcome — rules matched, dropped, logged, rewritten, the bytes — is
// the same. The cache lives across inputs, so entries are replaced and their slots reused as the fuzzer goes.
import CookieKit
import CookieRules

private let engines: [RuleEngine] = [
    """
    rule "dot" {
        cookie-domain example.test *.example.com
        domain add-dot
        cookie-path /
    }
    rule "flags" {
        secure
        httponly off
        samesite lax
    }
    """,
    """
    rule "none" {
        not cookie-domain *
        drop
    }
    rule "log" {
        log
        stop
    }
    rule "never" {
        partitioned
    }
    """,
    """
    rule "removals" {
        cookie-domain *.example.com
        domain remove
        cookie-path remove
        max-age remove
        samesite remove
    }
    rule "flag" {
        secure off
    }
    """,
].map { RuleEngine(RuleSet(rules: try! RulesParser.parse($0 + "\n", file: "fuzz"), files: [])) }

private let context = MessageContext(
    scheme: "https", host: "www.example.com", port: 443, path: "/", method: "GET", status: 200)
nonisolated(unsafe) private var shapes = CookieShapeCache()
nonisolated(unsafe) private var parser = SetCookieParser()
nonisolated(unsafe) private var rewrite = SetCookieRewrite()
nonisolated(unsafe) private var fullParser = SetCookieParser()
nonisolated(unsafe) private var fullRewrite = SetCookieRewrite()

private struct Outcome: Equatable {
    var matched: UInt64
    var dropped: Bool
    var logged: Bool
    var bytes: [UInt8]?
}

private func outcome(_ edit: RuleEngine.Edit, _ rewrite: inout SetCookieRewrite) -> Outcome {
    Outcome(
        matched: edit.matchedRulesLow, dropped: edit.dropped, logged: edit.logRequested,
        bytes: edit.rewritten ? rewrite.withOutput { Array($0) } : nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzShapeCache(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    for (n, engine) in engines.enumerated() {
        let plan = engine.cookiePlan(context)
        for line in input.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let bytes = Array(line)
            bytes.withUnsafeBufferPointer { b in
                let expected = outcome(
                    engine.apply(plan, to: fullParser.parse(b), now: 0, rewrite: &fullRewrite), &fullRewrite)
                for pass in 0..<2 {
                    let got = outcome(
                        engine.apply(plan, line: b, now: 0, parser: &parser, rewrite: &rewrite, shapes: &shapes),
                        &rewrite)
                    precondition(got == expected, "engine \(n), pass \(pass): the cache and the full path disagree")
                }
            }
        }
    }
    return 0
}
