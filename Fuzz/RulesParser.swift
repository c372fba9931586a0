// libFuzzer target: the rules parser. Any text is a rule list or a RulesError with a position, never a crash.
import CookieRules

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRulesParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        let rules = try RulesParser.parse(text, file: "fuzz.rules")
        _ = RuleSet(rules: rules, files: ["fuzz.rules"])
    } catch {
        precondition(!error.description.isEmpty)
    }
    return 0
}
