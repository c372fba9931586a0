import CookieKit
import Testing

@Suite struct HTTPTokenTests {
    /// RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
    /// / DIGIT / ALPHA. Checked for every byte value against the grammar written out.
    @Test func tokenCharactersAreExactlyTheRFCSet() {
        let grammar = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPToken.isTokenChar(byte) == grammar.contains(byte), "byte 0x\(String(byte, radix: 16))")
        }
    }
}
