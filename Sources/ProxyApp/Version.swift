/// The release of cookie-proxy: what `--version`, the inspector's API and the MCP server's `serverInfo` say.
public let cookieProxyVersion = "0.7"
