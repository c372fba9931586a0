// swift-tools-version:6.0
import Foundation
import PackageDescription

// A program outside cookie-proxy's package that embeds the proxy through its library product, `CookieProxy`, and
// adds an observer of its own. The package is the repository two folders up; SwiftPM names a local package by its
// folder, so the name is read from the path rather than written here (a clone may be in any folder).
let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
    .standardizedFileURL
let identity = repository.lastPathComponent.lowercased()

let package = Package(
    name: "CookiesPerRoute",
    // Synchronization's Mutex (the observer's total, shared by every event loop) needs macOS 15.
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: repository.path)],
    targets: [
        .executableTarget(
            name: "CookiesPerRoute", dependencies: [.product(name: "CookieProxy", package: identity)])
    ]
)
