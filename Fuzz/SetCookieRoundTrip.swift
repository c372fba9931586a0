// libFuzzer target: the Set-Cookie parser. Every input parses, and serialising it gives the input back byte for
// byte (the lossless promise); the user-agent view and the lint run without a crash.
import CookieKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSetCookie(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let cookie = SetCookie(bytes: input)
    precondition(cookie.bytes == input, "the round trip changed the bytes")
    _ = cookie.attributes
    _ = cookie.problem
    return 0
}
