#!/usr/bin/env python3
"""The official MCP Python SDK as the client of `cookie-proxy mcp`: lists the tools and calls each one. Prints one
JSON object: the tool names, and per call whether it failed and its text.
Usage: mcp_client.py BINARY INSPECTOR_URL HOME RULES UPSTREAM_PORT"""
import asyncio, json, os, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

binary, inspector, home, rules, port = sys.argv[1:6]

async def main():
    params = StdioServerParameters(
        command=binary, args=["mcp", "--inspector", inspector], env={**os.environ, "COOKIE_PROXY_HOME": home})
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            out["server"] = getattr(info, "server_info", None).name if hasattr(info, "server_info") else info.serverInfo.name
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            calls = {
                "parse_set_cookie": {"values": ["sid=1; SameSite=None"], "url": "https://app.test/"},
                "try_rules": {"rules": rules, "url": "http://login.site.test/", "values": ["sid=1; Path=/"]},
                "check_rules": {"rules": rules},
                "audit_url": {"url": f"http://127.0.0.1:{port}/setcookie?c=a%3D1%3B%20SameSite%3DNone"},
                "recent_exchanges": {"limit": 5, "host": "login"},
                "exchange_detail": {"seq": 1},
                "browser_jar": {"url": f"http://app.site.test:{port}/"},
            }
            out["calls"] = {}
            for name, arguments in calls.items():
                if name == "browser_jar":
                    # The client as the exchanges name it (on loopback: the address and curl's product).
                    rows = json.loads(out["calls"]["recent_exchanges"]["text"])
                    rows = rows if isinstance(rows, list) else rows.get("exchanges", [])
                    arguments["client"] = rows[0]["client"]
                result = await session.call_tool(name, arguments)
                out["calls"][name] = {"isError": getattr(result, "is_error", getattr(result, "isError", None)), "text": "".join(c.text for c in result.content)}
    print(json.dumps(out))

asyncio.run(main())
