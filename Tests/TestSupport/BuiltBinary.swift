import Foundation

/// Where the tests that run real processes find the repository and the built `cookie-proxy` (shared by the
/// end-to-end and CLI test targets).
public enum BuiltBinary {
    /// The repository root (this file is Tests/TestSupport/BuiltBinary.swift).
    public static let repositoryRoot: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The built executable: the test bundle lives in the build folder next to the executables.
    public static let cookieProxy: String = {
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        while dir.path != "/" {
            let candidate = dir.appendingPathComponent("cookie-proxy").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return repositoryRoot + "/.build/debug/cookie-proxy"
    }()
}
