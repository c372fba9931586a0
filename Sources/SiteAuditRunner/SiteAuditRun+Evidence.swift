import BrowserEngines
import BuildVersion
import CookieInspector
import CookieRules
import CookieKit
import ExchangeFacts
import Foundation
import JSONStream
import Locking
import ProxyApp
import ProxyPlatform
import ProxyTLS
import SiteAudit
import Terminal

/// What `--out` gets: each report's files and a manifest of every file's SHA-256.
extension SiteAuditRun {
    /// The evidence in `folder` (the screenshots are already there): `report.json`, `report.txt`, `report.html`,
    /// and `manifest.json`, the SHA-256 of every other file in the folder.
    public static func writeEvidence(_ scan: SiteScan, to folder: String) throws(Failure) {
        do {
            try write(
                [("report.json", scan.json.serialized), ("report.txt", scan.text.text), ("report.html", scan.html)],
                in: folder, recursive: false)
        } catch {
            throw Failure(description: "cannot write the evidence in \(folder): \(error.localizedDescription)")
        }
    }

    /// `files` (name and text) written in `folder`, then its `manifest.json` (``writeManifest(_:recursive:)``).
    static func write(_ files: [(name: String, text: String)], in folder: String, recursive: Bool) throws {
        for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: "\(folder)/\(name)")) }
        try writeManifest(folder, recursive: recursive)
    }

    /// `--browser all --out DIR`: beside each engine's folder, the side by side as `report.json` (every engine's
    /// report and the comparison, as `--format json` prints it), `report.txt` and `report.html`, and a
    /// `manifest.json` over every file of the folder, the engines' folders' included (their paths relative to it).
    static func writeComparison(_ outcome: Outcome, start: String, to folder: String) throws(Failure) {
        let html = EngineComparison(outcome.scans).html(start: start, engines: outcome.scans.map(\.engine))
        do {
            try write(
                [
                    ("report.json", outcome.report(format: "json")), ("report.txt", outcome.report(format: "text")),
                    ("report.html", html),
                ], in: folder, recursive: true)
        } catch {
            throw Failure(description: "cannot write the side by side in \(folder): \(error.localizedDescription)")
        }
    }

    /// `manifest.json` in `folder`: the SHA-256 and size of every other file in it (and, `recursive`, in its
    /// folders, by relative path), in name order.
    static func writeManifest(_ folder: String, recursive: Bool) throws {
        var names: [String] = []
        if recursive {
            let walker = FileManager.default.enumerator(atPath: folder)
            while let name = walker?.nextObject() as? String {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: "\(folder)/\(name)", isDirectory: &isDirectory),
                    !isDirectory.boolValue, name != "manifest.json"
                {
                    names.append(name)
                }
            }
        } else {
            names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0 != "manifest.json" }
        }
        var files: [(String, JSONValue)] = []
        for name in names.sorted() {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(name)")))
            files.append(
                (
                    name,
                    .object([
                        ("sha256", .string(String(decoding: LogKey.hex(sha256(bytes)), as: UTF8.self))),
                        ("bytes", .int(Int64(bytes.count))),
                    ])
                ))
        }
        let manifest = JSONValue.object([("files", .object(files))])
        try Data(manifest.serialized.utf8).write(to: URL(fileURLWithPath: "\(folder)/manifest.json"))
    }
}

/// `body(0)` … `body(n - 1)` at once, each on a thread of its own (`body(0)` on this one); returns when every one
/// has.
func together(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
    guard n > 0 else { return }
    let done = DispatchSemaphore(value: 0)
    for i in 1..<n {
        Thread {
            body(i)
            done.signal()
        }.start()
    }
    body(0)
    for _ in 1..<n { done.wait() }
}
