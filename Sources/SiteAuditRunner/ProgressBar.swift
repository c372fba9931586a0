import Foundation
import Locking
import Terminal

/// `audit --browser`'s progress on stderr: a line per page, or on a terminal one line redrawn in place with a bar.
public final class ProgressBar: Sendable {
    private let terminal: Bool
    private let drawn = Locked(false)
    /// A fleet's status (`site 2/20 · 37 pages, 41.2/min · 1 failing`), drawn before the page's on a terminal.
    private let fleetLine = Locked<String?>(nil)

    public init(terminal: Bool) { self.terminal = terminal }

    /// `who`: what the line is of when several run at once (an engine's name, a fleet's site), else nil.
    public func show(_ step: SiteAuditRun.Progress, who: String?) {
        let who = who.map { "\($0) " } ?? ""
        guard terminal, step.message == nil else {
            finish()
            Console.err("\(who)\(step.line)")
            return
        }
        let width = 20
        let done = step.pages > 0 ? min(width, step.page * width / step.pages) : 0
        let bar = String(repeating: "#", count: done) + String(repeating: "-", count: width - done)
        let tag = "\(step.pass.isEmpty ? "" : step.pass + "-")\(step.state.rawValue)"
        let fleet = fleetLine.withLock { $0 }.map { "\($0) | " } ?? ""
        let text = "\(fleet)\(who)[\(tag)] [\(bar)] \(step.page)/\(step.pages) \(step.url)"
        // Carriage return and erase-line: the line is redrawn, not added to.
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + TerminalText.escape(String(text.prefix(200)))).utf8))
        drawn.withLock { $0 = true }
    }

    /// The fleet's status to draw before each page's (nil: none).
    public func fleet(_ line: String?) { fleetLine.withLock { $0 = line } }

    /// A line of its own (a site begun or done), below the redrawn one.
    public func say(_ line: String) {
        finish()
        Console.err(TerminalText(escaping: line))
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
