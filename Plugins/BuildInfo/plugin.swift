import Foundation
import PackagePlugin

/// Writes `BuildInfo.swift` (the commit the package was built from) for the target that asks for it, with the
/// `build-info` tool. It runs again when the checkout's HEAD or the branch it names moves (its inputs are those
/// files), so a new commit is a new build's commit without rebuilding anything when nothing moved.
@main struct BuildInfo: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let tool = try context.tool(named: "build-info")
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildInfo.swift")
        let git = context.package.directoryURL.appending(path: ".git")
        let head = git.appending(path: "HEAD")
        var inputs: [URL] = []
        if let text = try? String(contentsOf: head, encoding: .utf8) {
            inputs.append(head)
            let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.hasPrefix("ref: ") {
                let ref = git.appending(path: String(line.dropFirst(5)))
                if FileManager.default.fileExists(atPath: ref.path) { inputs.append(ref) }
            }
            let packed = git.appending(path: "packed-refs")
            if FileManager.default.fileExists(atPath: packed.path) { inputs.append(packed) }
        }
        return [
            .buildCommand(
                displayName: "Writing the build's commit into \(target.name)", executable: tool.url,
                arguments: [context.package.directoryURL.path, output.path], inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}
