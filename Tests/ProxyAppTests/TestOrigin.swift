import Foundation
import TestSupport
import Testing

/// The end-to-end tests' upstream (Fixtures/upstream.py) for a proxy started as a library: a real origin on a free
/// loopback port, answering by path.
struct TestOrigin {
    let process: Subprocess
    let port: Int
    /// The python3 the tests run (the fixtures' interpreter, and a raw client).
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first {
        FileManager.default.fileExists(atPath: $0)
    }!

    init() throws {
        process = try Subprocess(
            Self.python, ["-u", BuiltBinary.repositoryRoot + "/Tests/EndToEndTests/Fixtures/upstream.py", "0"],
            stdin: .open)
        port = try #require(Int(try process.waitForLine(startingWith: "PORT ").dropFirst(5)))
    }

    func stop() { process.terminate() }
}

/// A fresh folder for a test's home (the CA, the log's key, the logs), removed by `defer { remove(home) }`.
func temporaryHome(_ prefix: String) throws -> String {
    let home = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    return home
}
