/// The release of cookie-proxy (semantic versioning, https://semver.org): what `--version`, the banner, every
/// report's tool field, the inspector's API, the MCP server's `serverInfo` and `cookie_proxy_build_info` say.
public let cookieProxyVersion = "0.8.0"

/// The release with the commit as semantic versioning's build metadata (`0.8.0+1a2b3c4d5e6f`): the tool version
/// every report, HAR file and API answer names, so that reports of two builds can be told apart.
public let cookieProxyBuildVersion: String = {
    cookieProxyCommit == "unknown" ? cookieProxyVersion : "\(cookieProxyVersion)+\(cookieProxyCommit.prefix(12))"
}()

/// The release and the commit it was built from (``cookieProxyCommit``, written by the build), as `--version` and
/// the banner print it: `0.8.0 (commit 1a2b3c4d5e6f)`.
public let cookieProxyBuild: String = {
    cookieProxyCommit == "unknown"
        ? "\(cookieProxyVersion) (commit unknown)" : "\(cookieProxyVersion) (commit \(cookieProxyCommit.prefix(12)))"
}()
