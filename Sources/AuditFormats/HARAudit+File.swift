import CookieLifecycle
import CookieRules
import Foundation
import JSONStream

extension HARAudit {
    /// Why a HAR file could not be audited: it could not be opened or read (the errno's text), or it is not a HAR
    /// (the JSON path and byte offset).
    public struct FileError: Error, CustomStringConvertible {
        public var description: String
    }

    /// ``run(_:report:)`` over the file at `path` (`-`: standard input), read a block at a time (never whole).
    public func run(file path: String, report: (EntryReport) -> Void) throws(FileError) -> Summary {
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { if fd != 0 { close(fd) } }
        var readError: Int32 = 0
        var reader = JSONReader { buffer in
            while true {
                let n = read(fd, buffer.baseAddress, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n < 0 { readError = errno }
                return max(0, n)
            }
        }
        do {
            return try run(&reader, report: report)
        } catch {
            if readError != 0 {
                throw FileError(description: "reading \(path): \(String(cString: strerror(readError)))")
            }
            throw FileError(description: "\(path): \(error.description)")
        }
    }

    /// `audit --har --rules`: each Set-Cookie line through the rules as a dry run, with its request's URL, method,
    /// status and site context.
    public static func dryRun(_ engine: RuleEngine) -> Transform {
        { line, request, status in
            let context = MessageContext(
                scheme: request.url.scheme, host: request.url.host,
                port: request.url.port ?? (request.url.isSecure ? 443 : 80), path: request.url.path,
                method: request.method, status: status, site: request.site.kind)
            let outcome = engine.apply(to: [line], context: context, now: request.time / 1000)[0]
            return (outcome.result, outcome.rules)
        }
    }
}
