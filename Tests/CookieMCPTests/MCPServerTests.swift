import Foundation
import CookieMCP
import TestSupport
import Testing

/// The MCP server without the executable's loop: JSON-RPC messages in, replies out (the tools that run a subcommand
/// run the built binary; the inspector's tools ask an inspector that is not there).
@Suite struct MCPServerTests {
    static func server() -> MCPServer {
        MCPServer(
            inspector: "http://127.0.0.1:9", configuration: FileManager.default.temporaryDirectory.path + "/cp-mcp",
            executable: BuiltBinary.cookieProxy)
    }

    static func object(_ reply: String?) throws -> [String: Any] {
        let text = try #require(reply)
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// (message, what the reply holds; nil: no reply)
    @Test(
        arguments: [
            (
                #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
                #""protocolVersion":"2025-06-18""#
            ),
            (#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#, #""id":"a","jsonrpc":"2.0","result":{}"#),
            (#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, nil),
            (#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#, #""code":-32601"#),
            ("{not json", #""code":-32700"#),
            (#"{"jsonrpc":"2.0","id":3}"#, #""code":-32600"#),
            (#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#, #""name":"browser_jar""#),
            (
                #"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"recent_exchanges","arguments":{}}}"#,
                #"cannot reach the inspector at http:\/\/127.0.0.1:9"#
            ),
            (
                #"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"parse_set_cookie","arguments":{"values":["a=b; Secure"],"url":"http://x.test/"}}}"#,
                #"secure-from-insecure-origin"#
            ),
        ] as [(String, String?)])
    func eachMessageGetsItsReply(_ message: String, _ holds: String?) throws {
        let reply = Self.server().handle(message)
        guard let holds else {
            #expect(reply == nil)
            return
        }
        #expect(reply?.contains(holds) == true, "\(reply ?? "no reply")")
        #expect(try Self.object(reply)["jsonrpc"] as? String == "2.0")
    }
}
