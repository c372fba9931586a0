import ArgumentParsing
import CookieKit

extension OptionSpec {
    /// `--psl FILE`, for every command that judges domains (main.swift reads it before the command runs).
    static let psl = OptionSpec(
        names: ["--psl"], value: "file",
        help: "Public Suffix List to use (default: Debian's or Homebrew's, else the copy built in).")
}

extension ParsedArguments {
    /// `text`, given with `key`, as the absolute URL cookies are judged against.
    static func requestURL(_ text: String, key: String, command: String) throws(UsageError) -> RequestURL {
        guard let url = RequestURL(text) else {
            throw UsageError(
                message: "\(key) '\(text)' is not an absolute URL such as https://app.example.com/", command: command)
        }
        return url
    }
}
