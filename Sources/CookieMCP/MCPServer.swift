import BrowserEngines
import BuildVersion
import CookieKit
import Foundation
import HTTPGrammar
import JSONStream
import ProxyApp
import ProxyPlatform

/// `cookie-proxy mcp`'s server: the Model Context Protocol over JSON-RPC 2.0, one message per line. Its tools run
/// the cookie-proxy binary's own subcommands (parse, try, check, audit), so an agent gets exactly what a person at
/// the terminal gets, and read a running proxy's inspector API with the installation's token.
public final class MCPServer {
    /// The protocol revision this server speaks when a client names none.
    public static let protocolVersion = "2025-06-18"
    let inspector: String
    let configuration: String
    /// The cookie-proxy binary whose subcommands the tools run.
    let executable: String

    /// `inspector`: a running proxy's inspector URL; `configuration`: the folder of its token.
    public init(inspector: String, configuration: String, executable: String) {
        (self.inspector, self.configuration, self.executable) = (inspector, configuration, executable)
    }

    /// One incoming message; the reply to send, or nil for a notification.
    public func handle(_ line: String) -> String? {
        guard let message = Self.read(line), case .object = message else {
            return Self.encode([
                "jsonrpc": "2.0", "id": NSNull(), "error": ["code": -32700, "message": "parse error"],
            ])
        }
        // The id is echoed as it came (a number or a string).
        let id: Any? = message["id"].map { value -> Any in
            if let n = value.int { return Int(n) }
            return value.string ?? NSNull()
        }
        guard let method = message["method"]?.string else {
            return id == nil ? nil : Self.error(id, -32600, "invalid request: no method")
        }
        let params = message["params"] ?? .object([])
        // Notifications (no id) get no reply.
        guard let id else { return nil }
        switch method {
        case "initialize":
            let asked = params["protocolVersion"]?.string
            return Self.result(
                id,
                [
                    "protocolVersion": asked ?? Self.protocolVersion,
                    "capabilities": ["tools": ["listChanged": false]],
                    "serverInfo": ["name": "cookie-proxy", "version": cookieProxyBuildVersion],
                    "instructions":
                        "Tools to see what browsers make of Set-Cookie headers, to run them through cookie-proxy rules, and to read a running cookie-proxy's recent exchanges.",
                ])
        case "ping":
            return Self.result(id, [:])
        case "tools/list":
            return Self.result(id, ["tools": MCPTools.definitions])
        case "tools/call":
            guard let name = params["name"]?.string else {
                return Self.error(id, -32602, "tools/call needs a name")
            }
            let arguments = params["arguments"] ?? .object([])
            let (text, failed) = MCPTools.call(name, arguments, server: self)
            return Self.result(id, ["content": [["type": "text", "text": text]], "isError": failed])
        default:
            return Self.error(id, -32601, "method not found: \(method)")
        }
    }

    /// A JSON text read whole (the project's pull reader, ``JSONReader``); nil when it is not one.
    static func read(_ text: String) -> JSONValue? {
        var reader = JSONReader(bytes: Array(text.utf8))
        guard let value = try? reader.readValue(""), (try? reader.finish()) != nil else { return nil }
        return value
    }

    static func result(_ id: Any, _ result: [String: Any]) -> String {
        encode(["jsonrpc": "2.0", "id": id, "result": result])
    }

    static func error(_ id: Any?, _ code: Int, _ message: String) -> String {
        encode(["jsonrpc": "2.0", "id": id ?? NSNull(), "error": ["code": code, "message": message]])
    }

    static func encode(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// GET on the inspector's API with the installation's token: the body, or why not.
    func inspectorGet(_ path: String) -> (body: String, failed: Bool) {
        guard let hex = try? LogKey.inspectorToken(directory: configuration) else {
            return ("cannot read or make the inspector token in \(configuration)", true)
        }
        guard let url = URL(string: inspector + path), let host = url.host, let port = url.port else {
            return ("--inspector '\(inspector)' must be http://HOST:PORT", true)
        }
        let numeric = host == "localhost" ? "127.0.0.1" : host
        let hostField = HostPort.format(host, port)
        let target = url.query.map { url.path + "?" + $0 } ?? url.path
        let request =
            "GET \(target.isEmpty ? "/" : target) HTTP/1.1\r\nHost: \(hostField)\r\nAuthorization: Bearer \(hex)\r\nConnection: close\r\n\r\n"
        switch LoopbackClient.exchange(host: numeric, port: port, request: Array(request.utf8)) {
        case .failure(let reason):
            return (
                "cannot reach the inspector at \(inspector): \(reason) (is cookie-proxy run going? --inspector URL)",
                true
            )
        case .success(let answer):
            return (String(decoding: answer.body, as: UTF8.self), answer.status != 200)
        }
    }
}

enum MCPTools {
    static var definitions: [[String: Any]] {
        [
            tool(
                "parse_set_cookie",
                "Parse Set-Cookie values and say what a browser makes of them when received from a URL: the cookie it would store (or why it would reject it) and lint findings. Same as 'cookie-proxy parse'.",
                [
                    "values": ["type": "array", "items": ["type": "string"], "description": "Set-Cookie values"],
                    "url": [
                        "type": "string",
                        "description": "The URL the response came from (default https://localhost/)",
                    ],
                ],
                required: ["values"]),
            tool(
                "try_rules",
                "Run Set-Cookie values through a cookie-proxy rules file offline: before, after, the rules that matched and what browsers make of the result. Same as 'cookie-proxy try'.",
                [
                    "rules": ["type": "string", "description": "A rules file or folder"],
                    "url": ["type": "string", "description": "The request URL the cookies come from"],
                    "values": ["type": "array", "items": ["type": "string"]],
                    "status": ["type": "integer"], "method": ["type": "string"],
                ],
                required: ["rules", "url", "values"]),
            tool(
                "check_rules",
                "Validate a rules file and say in plain words what each rule does (errors as file:line:column).",
                ["rules": ["type": "string", "description": "A rules file or folder"]], required: ["rules"]),
            tool(
                "audit_url",
                "Fetch a URL, follow its redirects as a browser would, and check every cookie it sets. Same as 'cookie-proxy audit --format json'.",
                ["url": ["type": "string"], "rules": ["type": "string"], "insecure": ["type": "boolean"]],
                required: ["url"]),
            tool(
                "recent_exchanges",
                "The exchanges with cookies a running cookie-proxy saw most recently (its inspector): URL, status, cookies set and sent, rules that fired, findings.",
                [
                    "limit": ["type": "integer", "description": "How many, newest last (default 20)"],
                    "host": ["type": "string", "description": "Only this host (substring)"],
                    "cookie": ["type": "string", "description": "Only exchanges with this cookie name"],
                ],
                required: []),
            tool(
                "exchange_detail",
                "One exchange in detail: each Set-Cookie as received and as forwarded, the changes, the rule that made each (file:line), findings.",
                ["seq": ["type": "integer", "description": "The 'seq' of a row from recent_exchanges"]],
                required: ["seq"]),
            tool(
                "browser_jar",
                "The cookie jar a browser would hold after the traffic the proxy saw from a client, and the Cookie header it would send to a URL.",
                [
                    "url": ["type": "string"],
                    "client": ["type": "string", "description": "Client address (default: the last seen)"],
                ],
                required: []),
        ]
    }

    static func tool(_ name: String, _ description: String, _ properties: [String: Any], required: [String])
        -> [String: Any]
    {
        [
            "name": name, "description": description,
            "inputSchema": ["type": "object", "properties": properties, "required": required],
        ]
    }

    static func call(_ name: String, _ a: JSONValue, server: MCPServer) -> (String, Bool) {
        func strings(_ key: String) -> [String] {
            a[key]?.array?.compactMap(\.string) ?? a[key]?.string.map { [$0] } ?? []
        }
        switch name {
        case "parse_set_cookie":
            let values = strings("values")
            guard !values.isEmpty else { return ("give at least one value in 'values'", true) }
            var args = ["parse", "--format", "json"]
            if let url = a["url"]?.string { args += ["--url", url] }
            return own(server.executable, args + ["--"] + values)
        case "try_rules":
            guard let rules = a["rules"]?.string, let url = a["url"]?.string else {
                return ("'rules' and 'url' are required", true)
            }
            var args = ["try", "--rules", rules, "--url", url, "--format", "json"]
            if let status = a["status"]?.int { args += ["--status", String(status)] }
            if let method = a["method"]?.string { args += ["--method", method] }
            return own(server.executable, args + ["--"] + strings("values"))
        case "check_rules":
            guard let rules = a["rules"]?.string else { return ("'rules' is required", true) }
            return own(server.executable, ["check", rules])
        case "audit_url":
            guard let url = a["url"]?.string else { return ("'url' is required", true) }
            var args = ["audit", "--format", "json"]
            if let rules = a["rules"]?.string { args += ["--rules", rules] }
            if a["insecure"] == .bool(true) { args.append("--insecure") }
            return own(server.executable, args + [url])
        case "recent_exchanges":
            let (body, failed) = server.inspectorGet("/api/exchanges")
            guard !failed, let rows = MCPServer.read(body)?.array else { return (body, true) }
            let host = a["host"]?.string
            let cookie = a["cookie"]?.string
            let limit = a["limit"]?.int.map { Int($0) } ?? 20
            let kept = rows.filter { row in
                (host.map { (row["host"]?.string ?? "").contains($0) } ?? true)
                    && (cookie.map { c in
                        ((row["setCookies"]?.array ?? []) + (row["sentCookies"]?.array ?? [])).contains(.string(c))
                    } ?? true)
            }.suffix(max(0, limit))
            return (JSONValue.array(Array(kept)).serialized, false)
        case "exchange_detail":
            guard let seq = a["seq"]?.int else { return ("'seq' is required", true) }
            return server.inspectorGet("/api/exchanges/\(seq)")
        case "browser_jar":
            var query: [String] = []
            if let client = a["client"]?.string { query.append("client=" + escape(client)) }
            if let url = a["url"]?.string { query.append("url=" + escape(url)) }
            return server.inspectorGet("/api/jar" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
        default:
            return ("no tool named '\(name)'", true)
        }
    }

    static func escape(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s
    }

    /// Runs this binary with `args`: what it printed, and whether it failed (exit status 2 or more; `audit` and
    /// `check` use 1 for "found problems", which is an answer, not a failure).
    static func own(_ executable: String, _ args: [String]) -> (String, Bool) {
        do {
            let result = try ChildProcess.run(executable, args)
            return (result.output, result.status >= 2)
        } catch {
            return ("\(error)", true)
        }
    }
}
