import Foundation
import TestSupport
import Testing

/// The shim's macOS branches cannot be built here (no macOS SDK); they are at least compiled as C with the macOS
/// branch selected and kqueue's declarations as its manual gives them (darwin-headers/sys/event.h), so a change that
/// breaks them is noticed on Linux.
@Suite struct PortabilityTests {
    static let clang = ["/opt/swift/usr/bin/clang", "/usr/bin/clang"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    @Test(.enabled(if: clang != nil, "clang (it comes with the Swift toolchain)"), arguments: ["linux", "macos"])
    func theShimCompilesWithoutWarningsForEachPlatformBranch(_ platform: String) throws {
        let root = Binary.repositoryRoot
        let shims = root + "/Sources/CProxyShims"
        let files = try FileManager.default.contentsOfDirectory(atPath: shims).filter { $0.hasSuffix(".c") }.sorted()
        #expect(files.contains("poller.c"))
        // POSIX_SPAWN_CLOEXEC_DEFAULT is Apple's; glibc's spawn.h, used here in its place, lacks it.
        let darwin = [
            "-U__linux__", "-D__APPLE__", "-DPOSIX_SPAWN_CLOEXEC_DEFAULT=0x4000",
            "-I\(root)/Tests/CLITests/darwin-headers",
        ]
        let result = try run(
            Self.clang!,
            ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I\(shims)/include"] + (platform == "macos" ? darwin : [])
                + files.map { "\(shims)/\($0)" })
        #expect(result.status == 0, "\(result.stderr)")
    }
}
