// swift-tools-version:6.0
import PackageDescription

// The proxy's per-request modules (not the library products) drop the run-time exclusivity checks in release
// builds: the compile-time checks stay, and debug builds (the tests) keep the run-time ones. Measured: about 50
// swift_beginAccess calls per proxied request, ~4 k instructions (docs/architecture.md, "Performance").
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "cookie-proxy",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "CookieKit", targets: ["CookieKit"]),
        // The proxy to embed: ProxyApp.start, its Configuration (with observers) and the observer protocols
        // (ExchangeObserver, LoopObserver); Examples/CookiesPerRoute uses it from a package of its own.
        .library(name: "CookieProxy", targets: ["ProxyApp"]),
        .executable(name: "cookie-proxy", targets: ["cookie-proxy"]),
        .executable(name: "cookie-bench", targets: ["cookie-bench"]),
    ],
    dependencies: [],
    targets: [
        // Pure: the byte grammar of HTTP shared by the codec and the TLS layer (tchar, hex, host names, IP literals).
        .target(name: "HTTPGrammar"),
        // Pure: text for a person's terminal (every value escaped: a peer's bytes are shown, never obeyed) and the
        // one writer of standard output and error.
        .target(name: "Terminal", dependencies: []),
        // Pure: the facts of one exchange (ExchangeContext: who asked what of whom, which route, which protocols),
        // which the machine makes and every reader above it shares.
        .target(name: "ExchangeFacts"),
        // Pure: Set-Cookie model, parse, serialise, dates, domain/path match, PSL, jar, lint.
        .target(name: "CookieKit", dependencies: ["HTTPGrammar", "ExchangeFacts", "JSONStream", "Terminal"]),
        // The bridge to Foundation's HTTPCookie (FoundationNetworking on Linux).
        .target(name: "CookieFoundation", dependencies: ["CookieKit"]),
        // Pure: the rules language → validated rule set → two-phase application → list of changes.
        .target(
            name: "CookieRules",
            dependencies: ["ExchangeFacts", "CookieKit", "HTTPGrammar", "JSONStream", "ArgumentParsing", "Terminal"]),
        // libcurl through a system-library target; typed, non-variadic shims in its shim.h.
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        // Pure: JSON both ways: a pull reader over blocks of bytes (a HAR of any size read in bounded memory), the
        // ordered JSONValue and the writer every JSON output uses (over ByteWriter, the growable byte buffer).
        .target(name: "JSONStream"),
        // `cookie-proxy audit`: fetch, follow redirects, carry cookies in our jar, lint every Set-Cookie.
        .target(name: "CookieAudit", dependencies: ["CookieKit", "CookieRules", "CCurl"]),
        // Pure: each client's cookies across requests (the jar replayed from what the client was sent, its Cookie
        // headers judged against it, a timeline per cookie) and the site context of a request.
        .target(
            name: "CookieLifecycle", dependencies: ["ExchangeFacts", "CookieKit", "HTTPGrammar", "JSONStream"],
            swiftSettings: hotPath
        ),
        // Pure: what a run or an audit found (cookie-line findings, lifecycle verdicts), as CI reads it: JUnit XML and
        // SARIF 2.1.0.
        .target(name: "CookieReports", dependencies: ["CookieKit", "CookieLifecycle", "JSONStream"]),
        // Pure: a browser audit of a whole site (`audit URL --browser`): the pages a seed picks, the consent
        // platforms' buttons, the Open Cookie Database, and the report built from what the browser and the proxy saw.
        .target(
            name: "SiteAudit", dependencies: ["CookieKit", "CookieReports", "JSONStream", "Terminal"],
            exclude: ["OpenCookieDatabase-LICENSE.txt"]
        ),
        // Runs the scenario corpora of conformance/ against the jar (tests and `cookie-proxy conformance`).
        .target(name: "CookieConformance", dependencies: ["CookieKit", "Terminal"]),
        // Sans-I/O HTTP/1.1 codec and the per-connection proxy state machine.
        // An HTTP message's head as both codecs see it: as received (HTTPHead, read by the strict HTTP/1.1 head
        // parser), as sent (OutgoingHead: untouched lines byte for byte), its known fields, trailers (FieldSection),
        // authorities and origins. Imported by the codecs, the shell, and what reads heads (the inspector, the
        // browsers' loopback clients) without the machine.
        .target(name: "HTTPHeads", dependencies: ["HTTPGrammar"], swiftSettings: hotPath),
        .target(
            name: "ProxyCore", dependencies: ["ExchangeFacts", "HTTPGrammar", "HTTPHeads"], swiftSettings: hotPath),
        // libnghttp2 through a system-library target (HPACK, frames, flow control, RFC 9113's request checks).
        .systemLibrary(
            name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"]), .brew(["nghttp2"])]),
        // HTTP/2 with clients, without I/O: an nghttp2 server session whose streams are HTTP/1.1 exchanges for the
        // connection machine.
        .target(
            name: "ProxyHTTP2", dependencies: ["HTTPHeads", "CNGHTTP2", "ProxyCore", "HTTPGrammar"],
            swiftSettings: hotPath),
        // The only C of the proxy shell: the poller (epoll, kqueue, poll), sockets, getaddrinfo, posix_spawn,
        // signals. Only ProxyServer imports it (its Platform folder holds what the commands use: spawning, the
        // loopback client, descriptors).
        .target(name: "CProxyShims"),
        // C11 atomics behind prefixed shims, for Locking only.
        .target(name: "CAtomics"),
        // A lock and an atomic counter over POSIX and C11 (Synchronization's need macOS 15).
        .target(name: "Locking", dependencies: ["CAtomics"]),
        // OpenSSL 3 through a system-library target; macros as COpenSSL_ inline functions in its shim.h.
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        // Swift owners of OpenSSL objects; the local CA and leaf minting; TLS engines over memory BIOs.
        .target(name: "ProxyTLS", dependencies: ["COpenSSL", "HTTPGrammar", "Locking"]),
        // The system calls behind the C shims (sockets, blocking descriptors, child processes, signals), for the
        // I/O shell and for the commands that run browsers.
        .target(name: "ProxyPlatform", dependencies: ["CProxyShims"], swiftSettings: hotPath),
        // The I/O shell: event loops, sockets, upstream pool, resolver, timers, TLS interception plumbing.
        .target(
            name: "ProxyServer",
            dependencies: [
                "HTTPHeads",
                "ExchangeFacts", "HTTPGrammar", "ProxyCore", "ProxyHTTP2", "CProxyShims", "ProxyPlatform", "ProxyTLS",
                "Locking",
            ],
            swiftSettings: hotPath),
        // Pure: what the inspector holds and shows (exchanges, the jar a browser would build, HAR, its web page); it
        // records on the proxy's path.
        .target(
            name: "CookieInspector",
            dependencies: [
                "HTTPHeads",
                "ExchangeFacts", "CookieKit", "CookieRules", "CookieLifecycle", "Locking", "HTTPGrammar",
                "JSONStream",
            ],
            swiftSettings: hotPath),
        // The application on the proxy's hooks: the cookie stage (rules on every Set-Cookie), the log (writer, record
        // format, reopen), the inspector's service, the rules files. The executable is its command line.
        .target(
            name: "ProxyApp",
            dependencies: [
                "HTTPHeads",
                "ExchangeFacts", "CookieKit", "CookieRules", "CookieInspector", "CookieLifecycle", "CookieReports",
                "ProxyCore", "ProxyServer", "ProxyPlatform", "ProxyTLS", "Locking", "HTTPGrammar", "JSONStream",
                "Terminal", "BuildVersion", "LogWriter",
            ], swiftSettings: hotPath),
        // A log file's writer (the transformation log's and the access log's): each loop's records handed over in
        // one copy to a thread that only writes, bounded (backpressure or counted drops), reopened on SIGUSR1, a
        // failed write cut back to whole records and said when it starts and ends.
        .target(name: "LogWriter", dependencies: ["JSONStream", "Locking", "Terminal"], swiftSettings: hotPath),
        // The release and the commit a build is made from (`--version`, every report's tool field, the build-info
        // metric); the plugin writes the commit.
        .target(name: "BuildVersion", plugins: ["BuildInfo"]),
        // Installs and removes the local CA in the system's and the browsers' trust stores (`cookie-proxy ca`).
        .target(name: "TrustStores", dependencies: ["ProxyPlatform", "ProxyTLS", "Terminal"]),
        // `cookie-proxy mcp`: the Model Context Protocol server over stdio (parse, lint and audit as tools).
        .target(
            name: "CookieMCP",
            dependencies: [
                "BrowserEngines", "BuildVersion", "CookieKit", "HTTPGrammar", "JSONStream", "ProxyApp", "ProxyPlatform",
            ]),
        // `cookie-proxy audit`'s outputs (text, JSON, JUnit, SARIF) and a HAR file audited a block at a time.
        .target(
            name: "AuditFormats",
            dependencies: [
                "BuildVersion", "CookieAudit", "CookieInspector", "CookieKit", "CookieLifecycle", "CookieReports",
                "CookieRules", "JSONStream", "Terminal",
            ]),
        // `cookie-proxy run` in a terminal's foreground: the banner, the live status line, and the wait on signals
        // (SIGHUP reloads, SIGUSR1 reopens the logs and writes the reports, SIGINT/SIGTERM drain and stop).
        .target(
            name: "ProxyConsole",
            dependencies: [
                "BuildVersion", "CookieKit", "HTTPGrammar", "ProxyCore", "ProxyServer", "CookieReports",
                "ProxyPlatform", "Terminal", "ProxyApp", "ArgumentParsing", "CookieRules", "TrustStores", "LogWriter",
            ]),
        // `audit URL --browser`: the proxy started in-process with an observer recording every line, a browser
        // driven through it in each consent state, the report built; and its progress on a terminal.
        .target(
            name: "SiteAuditRunner",
            dependencies: [
                "CookieKit", "ExchangeFacts", "Locking", "ProxyApp", "SiteAudit", "Terminal", "BrowserEngines",
                "BuildVersion", "CookieInspector", "CookieReports", "CookieRules", "JSONStream", "ProxyTLS",
                "ProxyPlatform",
            ]),
        // Writes the commit a build is made from into BuildVersion.
        .executableTarget(name: "build-info"),
        .plugin(name: "BuildInfo", capability: .buildTool(), dependencies: ["build-info"]),
        // One driver per browser behind one protocol — Chromium (DevTools pipe), Firefox (WebDriver BiDi), WebKitGTK
        // (classic WebDriver) — for `parse --browser` (a line served by a local server) and `audit --browser`.
        .target(
            name: "BrowserEngines",
            dependencies: [
                "HTTPHeads",
                "CookieKit", "HTTPGrammar", "ProxyPlatform", "ProxyTLS", "Locking", "SiteAudit",
                "JSONStream", "Terminal",
            ]),
        // The command line's small parser in swift-argument-parser's shape (options declared once: parsing, `--help`,
        // usage errors), and the shells' completions and the manual page made from the same declarations.
        .target(name: "ArgumentParsing"),
        .executableTarget(
            name: "cookie-proxy",
            dependencies: [
                "ArgumentParsing", "JSONStream", "BrowserEngines", "CookieKit", "CookieConformance", "CookieRules",
                "CookieAudit", "CookieInspector", "ProxyApp", "CookieLifecycle", "CookieReports", "SiteAudit",
                "Terminal", "BuildVersion", "SiteAuditRunner", "AuditFormats", "TrustStores", "CookieMCP",
                "ProxyConsole",
            ], swiftSettings: hotPath),
        // Counts allocations in the benchmark only (interposes malloc in that executable).
        .target(name: "CBenchSupport"),
        .executableTarget(name: "cookie-bench", dependencies: ["CookieKit", "CookieFoundation", "CBenchSupport"]),
        // Shared by the test targets that run the built binary (where it and the repository are).
        .target(name: "TestSupport", dependencies: ["CProxyShims", "CookieConformance"], path: "Tests/TestSupport"),
        .testTarget(name: "CookieKitTests", dependencies: ["CookieKit", "CookieFoundation", "CookieConformance"]),
        .testTarget(name: "CookieLifecycleTests", dependencies: ["CookieLifecycle", "CookieKit", "JSONStream"]),
        .testTarget(name: "CookieReportsTests", dependencies: ["CookieReports", "CookieLifecycle", "CookieKit"]),
        .testTarget(name: "ProxyCoreTests", dependencies: ["HTTPHeads", "ExchangeFacts", "ProxyCore", "HTTPGrammar"]),
        .testTarget(
            name: "ProxyServerTests",
            dependencies: ["HTTPHeads", "ProxyServer", "ProxyPlatform", "ProxyCore", "Locking", "HTTPGrammar"]),
        .testTarget(name: "HTTPGrammarTests", dependencies: ["HTTPGrammar"]),
        .testTarget(name: "TerminalTests", dependencies: ["Terminal"]),
        .testTarget(name: "AuditFormatsTests", dependencies: ["CookieLifecycle", "JSONStream", "AuditFormats"]),
        .testTarget(name: "TrustStoresTests", dependencies: ["TrustStores"]),
        // Each browser's driver replayed from transcripts of the real browser (no browser runs).
        .testTarget(
            name: "BrowserEnginesTests", dependencies: ["BrowserEngines", "CookieKit", "SiteAudit"],
            exclude: ["Transcripts"]),
        .testTarget(name: "SiteAuditRunnerTests", dependencies: ["ExchangeFacts", "SiteAudit", "SiteAuditRunner"]),
        .testTarget(name: "CookieMCPTests", dependencies: ["CookieMCP", "TestSupport"]),
        .testTarget(name: "JSONStreamTests", dependencies: ["JSONStream"]),
        .testTarget(name: "SiteAuditTests", dependencies: ["SiteAudit", "CookieKit", "JSONStream"]),
        .testTarget(name: "ArgumentParsingTests", dependencies: ["ArgumentParsing"]),
        .testTarget(name: "ProxyTLSTests", dependencies: ["ProxyTLS"]),
        .testTarget(name: "ProxyHTTP2Tests", dependencies: ["HTTPHeads", "ProxyHTTP2", "CNGHTTP2", "ProxyCore"]),
        .testTarget(
            name: "CookieInspectorTests",
            dependencies: [
                "HTTPHeads", "ExchangeFacts", "CookieInspector", "CookieKit", "CookieRules", "ProxyCore", "HTTPGrammar",
            ]),
        .testTarget(
            name: "CookieRulesTests",
            dependencies: [
                "ExchangeFacts", "CookieRules", "CookieKit", "CookieConformance", "HTTPGrammar", "TestSupport",
            ]),
        .testTarget(
            name: "ProxyAppTests",
            dependencies: [
                "HTTPHeads",
                "ExchangeFacts", "ProxyApp", "CookieRules", "ProxyCore", "CookieInspector", "CookieLifecycle",
                "HTTPGrammar", "CookieKit", "JSONStream", "TestSupport", "Locking", "LogWriter",
            ], exclude: ["golden"]),
        // End-to-end: the built binary between real clients and a real upstream (started by the tests).
        .testTarget(
            name: "EndToEndTests", dependencies: ["cookie-proxy", "TestSupport", "Locking"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "CLITests", dependencies: ["cookie-proxy", "TestSupport"], exclude: ["golden", "darwin-headers"]),
    ]
)
