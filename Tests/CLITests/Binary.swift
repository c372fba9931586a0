import Foundation
import TestSupport

/// Runs the built `cookie-proxy` executable as a real process.
enum Binary {
    static let path = BuiltBinary.cookieProxy
    static let repositoryRoot = BuiltBinary.repositoryRoot

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String], stdin: String? = nil) throws -> Result {
        let r = try TestSupport.run(path, arguments, stdin: stdin.map { Data($0.utf8) })
        return Result(status: r.status, stdout: r.text, stderr: r.stderr)
    }
}
