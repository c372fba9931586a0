import Foundation
import Testing

@testable import ProxyApp

/// The installation's secrets next to the CA: the inspector token is text a shell can use, and one written by an
/// earlier version (16 raw bytes) is still read as the same token.
@Suite struct LogKeyTests {
    static func folder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cp-key-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.path
    }

    @Test func aNewInspectorTokenIsWrittenAsHexTextAndReadBackTheSame() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let token = try LogKey.inspectorToken(directory: dir)
        #expect(token.wholeMatch(of: /[0-9a-f]{32}/) != nil, "\(token)")
        #expect(try String(contentsOfFile: dir + "/inspector-token", encoding: .utf8) == token + "\n")
        #expect(try LogKey.inspectorToken(directory: dir) == token)
        let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/inspector-token")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test(arguments: [
        ([UInt8](0..<16), "000102030405060708090a0b0c0d0e0f"),
        (Array("00112233445566778899AABBCCDDEEFF\n".utf8), "00112233445566778899aabbccddeeff"),
    ])
    func aTokenFileIsReadAsRawBytesOrAsHexText(_ contents: [UInt8], _ token: String) throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(contents).write(to: URL(fileURLWithPath: dir + "/inspector-token"))
        #expect(try LogKey.inspectorToken(directory: dir) == token)
    }

    @Test func theLogKeyStaysSixteenRawBytes() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = try LogKey.load(directory: dir)
        #expect(key.count == 16)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/log-key")) == Data(key))
    }
}
