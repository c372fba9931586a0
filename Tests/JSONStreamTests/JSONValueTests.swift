import Foundation
import Testing

@testable import JSONStream

/// The JSON writer of the log and of `parse`/`try --format json`: exact text, and text Foundation's parser reads
/// back to the same values.
@Suite struct JSONValueTests {
    @Test(
        arguments: [
            (JSONValue.null, "null"), (true, "true"), (false, "false"), (0, "0"), (7, "7"), (-42, "-42"),
            (.int(Int64.max), "9223372036854775807"), (.int(Int64.min), "-9223372036854775808"), (.double(1.5), "1.5"),
            (.double(.nan), "null"), ("", "\"\""), ("plain", "\"plain\""), ("a\"b\\c", "\"a\\\"b\\\\c\""),
            ("line\nfeed\rtab\t", "\"line\\nfeed\\rtab\\t\""), ("\u{01}\u{1F}\u{7F}", "\"\\u0001\\u001f\\u007f\""),
            ("café ☕", "\"café ☕\""), (10, "10"), (99, "99"), (100, "100"),
            (.int(1_000_000_000_000_000_000), "1000000000000000000"),
            // Strings are read eight bytes at a time and their last few in a padded word: escapes at a word's last
            // byte, in the tail after clean words, and after bytes of a multi-byte character.
            ("abcdefgh", "\"abcdefgh\""), ("abcdefg\n", "\"abcdefg\\n\""), ("12345678\u{1F}", "\"12345678\\u001f\""),
            ("abcdefghi\"", "\"abcdefghi\\\"\""), ("0123456789abcde\u{7F}", "\"0123456789abcde\\u007f\""),
            ("ééééé\\", "\"ééééé\\\\\""), (.array([]), "[]"), (.array([1, "x", nil]), "[1,\"x\",null]"),
            (.object([]), "{}"), (.object([("b", 1), ("a", .object([("k", "v")]))]), "{\"b\":1,\"a\":{\"k\":\"v\"}}"),
        ] as [(JSONValue, String)])
    func writesCompactRFC8259Text(_ value: JSONValue, _ text: String) {
        #expect(value.serialized == text)
    }

    @Test func aLongRecordOfManyStringsReadsBackThroughFoundation() throws {
        // Longer than the writer's first buffer, with escapes at the edges of runs.
        let pairs = (0..<200).map { i in ("key\(i)", JSONValue.string("\"value \(i)\"\n\\")) }
        let data = Data(JSONValue.object(pairs).serialized.utf8)
        let decoded = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(decoded.count == 200)
        #expect(decoded["key199"] == "\"value 199\"\n\\")
    }
}
