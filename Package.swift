// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "cookie-proxy",
    products: [
        .library(name: "CookieKit", targets: ["CookieKit"]),
        .executable(name: "cookie-proxy", targets: ["cookie-proxy"]),
        .executable(name: "cookie-bench", targets: ["cookie-bench"]),
    ],
    dependencies: [],
    targets: [
        // Pure: Set-Cookie model, parse, serialise, dates, domain/path match, PSL, jar, lint.
        .target(name: "CookieKit"),
        // The bridge to Foundation's HTTPCookie (FoundationNetworking on Linux).
        .target(name: "CookieFoundation", dependencies: ["CookieKit"]),
        // Runs the scenario corpora of shared/conformance against the jar (tests and `cookie-proxy conformance`).
        .target(name: "CookieConformance", dependencies: ["CookieKit"]),
        .executableTarget(name: "cookie-proxy", dependencies: ["CookieKit", "CookieFoundation", "CookieConformance"]),
        // Counts allocations in the benchmark only (interposes malloc in that executable).
        .target(name: "CBenchSupport"),
        .executableTarget(name: "cookie-bench", dependencies: ["CookieKit", "CookieFoundation", "CBenchSupport"]),
        .testTarget(name: "CookieKitTests", dependencies: ["CookieKit", "CookieFoundation", "CookieConformance"]),
        .testTarget(name: "CLITests", dependencies: ["cookie-proxy"], exclude: ["golden"]),
    ]
)
