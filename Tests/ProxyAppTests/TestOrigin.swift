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

/// The status a GET of `path` through the proxy's listener on `port` got (`extra`: more curl options).
func curlStatus(port: Int, _ path: String, _ extra: [String] = []) throws -> String {
    let result = try run(
        "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}"] + extra + ["http://127.0.0.1:\(port)\(path)"],
        timeout: 20)
    return String(decoding: result.stdout, as: UTF8.self)
}

/// The status the listener on `port` answers a request head with a line that is not a field (`bad line`).
func malformedRequestStatus(port: Int) throws -> String {
    let raw = try run(
        TestOrigin.python,
        [
            "-c",
            "import socket; s=socket.create_connection(('127.0.0.1',\(port))); s.sendall(b'GET / HTTP/1.1\\r\\nHost: a\\r\\nbad line\\r\\n\\r\\n'); print(s.recv(100).split(b' ')[1].decode())",
        ], timeout: 20)
    return String(decoding: raw.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
