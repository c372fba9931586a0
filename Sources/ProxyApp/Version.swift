/// The release of cookie-proxy: what `--version`, the inspector's API and the MCP server's `serverInfo` say.
package let cookieProxyVersion = "0.7"
