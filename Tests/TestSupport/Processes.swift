import Foundation
import Synchronization

/// Text appended from several threads (process output read on handler threads).
public final class LockedText: Sendable {
    private let text = Mutex<String>("")
    public init() {}
    public func append(_ s: String) { text.withLock { $0 += s } }
    public var value: String { text.withLock { $0 } }
}

public struct CommandResult {
    public var status: Int32
    public var stdout: Data
    public var stderr: String
    public var text: String { String(decoding: stdout, as: UTF8.self) }
    public init(status: Int32, stdout: Data, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Runs a command to completion. Standard error is read on its own thread while standard output is read here,
/// so a process that fills one pipe while the other is being read cannot stall.
public func run(_ executable: String, _ arguments: [String], stdin: Data? = nil) throws -> CommandResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    let input = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = input
    try p.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try? input.fileHandleForWriting.close()
    let errText = LockedText()
    let errThread = Thread {
        errText.append(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }
    errThread.start()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    while !errThread.isFinished { usleep(1000) }
    return CommandResult(status: p.terminationStatus, stdout: o, stderr: errText.value)
}
