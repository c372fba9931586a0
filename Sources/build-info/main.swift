import Foundation

// build-info PACKAGE OUTPUT: writes OUTPUT, a Swift file declaring `cookieProxyCommit`, the commit PACKAGE's
// checkout is at (read from .git itself, without running git: HEAD, the branch it names, or packed-refs), or
// "unknown" when it is not a git checkout (a source archive).
let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: build-info PACKAGE OUTPUT\n".utf8))
    exit(2)
}
let git = arguments[1] + "/.git"

func read(_ path: String) -> String? {
    (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
}

func isCommit(_ s: String) -> Bool { s.count >= 40 && s.allSatisfy { $0.isHexDigit } }

func commit() -> String? {
    guard let head = read(git + "/HEAD") else { return nil }
    guard head.hasPrefix("ref: ") else { return isCommit(head) ? head : nil }
    let ref = String(head.dropFirst(5))
    if let loose = read(git + "/" + ref), isCommit(loose) { return loose }
    for line in (read(git + "/packed-refs") ?? "").split(separator: "\n") {
        let parts = line.split(separator: " ")
        if parts.count == 2, parts[1] == ref, isCommit(String(parts[0])) { return String(parts[0]) }
    }
    return nil
}

let text = """
    // Written by the build (Plugins/BuildInfo): the commit this binary was built from.
    /// The commit this build was made from (40 hex digits), or "unknown" outside a git checkout.
    public let cookieProxyCommit = "\(commit() ?? "unknown")"

    """
// Written only when it changes, so that an unchanged commit rebuilds nothing.
if read(arguments[2]).map({ $0 + "\n" }) != text {
    do {
        try text.write(toFile: arguments[2], atomically: true, encoding: .utf8)
    } catch {
        FileHandle.standardError.write(Data("build-info: cannot write \(arguments[2]): \(error)\n".utf8))
        exit(1)
    }
}
