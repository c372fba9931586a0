/// Where something is in a rules file (1-based line and column).
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    public var description: String { "\(file):\(line):\(column)" }
}

/// An invalid rules file: `file:line:column: message`, the offending line and a caret under the column.
public struct RulesError: Error, Sendable, CustomStringConvertible {
    public var location: SourceLocation
    public var message: String
    /// The text of the offending line.
    public var sourceLine: String

    public var description: String {
        let caretColumn = max(1, location.column)
        let prefix = sourceLine.prefix(caretColumn - 1).map { $0 == "\t" ? "\t" : " " }.joined()
        return "\(location): error: \(message)\n    \(sourceLine)\n    \(prefix)^"
    }
}
