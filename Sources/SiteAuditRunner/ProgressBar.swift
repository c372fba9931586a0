import Foundation
import Locking
import Terminal

/// `audit --browser`'s progress on stderr: a line per page, or on a terminal one line redrawn in place with a bar.
public final class ProgressBar: Sendable {
    private let terminal: Bool
    private let drawn = Locked(false)

    public init(terminal: Bool) { self.terminal = terminal }

    public func show(_ step: SiteAuditRun.Progress, engine: String?) {
        let who = engine.map { "\($0) " } ?? ""
        guard terminal, step.message == nil else {
            finish()
            Console.err("\(who)\(step.line)")
            return
        }
        let width = 20
        let done = step.pages > 0 ? min(width, step.page * width / step.pages) : 0
        let bar = String(repeating: "#", count: done) + String(repeating: "-", count: width - done)
        let tag = "\(step.pass.isEmpty ? "" : step.pass + "-")\(step.state.rawValue)"
        let text = "\(who)[\(tag)] [\(bar)] \(step.page)/\(step.pages) \(step.url)"
        // Carriage return and erase-line: the line is redrawn, not added to.
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + TerminalText.escape(String(text.prefix(160)))).utf8))
        drawn.withLock { $0 = true }
    }

    /// Ends the redrawn line, if one was drawn.
    public func finish() {
        if drawn.withLock({
            let was = $0; $0 = false; return was
        }) {
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }
}
