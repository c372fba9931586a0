// libFuzzer target: `audit --har`'s reader and analysis. Any input is read without a crash (an error names a path);
// a document the reader takes whole is read again from its own serialisation to the same tree (JSONValue's writer
// and the reader agree); and a HAR is audited with the lifecycle's jar without a crash, every request judged
// cookie by cookie, no verdict without a name.
import CookieKit
import CookieLifecycle
import JSONStream

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHARAudit(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var reader = JSONReader(bytes: input)
    if let tree = try? reader.readValue(""), (try? reader.finish()) != nil {
        var out: [UInt8] = []
        tree.write(to: &out)
        var again = JSONReader(bytes: out)
        let second = try! again.readValue("")
        precondition(second == tree, "the reader read its own writing differently")
    }
    var har = JSONReader(bytes: input)
    _ = try? HARAudit(suffixes: PublicSuffixList(text: "com\nco.uk\n*.test\n")).run(&har) { entry in
        for v in entry.verdicts {
            precondition(v.kind == .sentAsExpected || v.reason != nil, "a verdict without a reason")
        }
    }
    return 0
}
