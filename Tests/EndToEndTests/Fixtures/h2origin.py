#!/usr/bin/env python3
"""An origin that speaks HTTP/2 without TLS (h2c with prior knowledge) and HTTP/1.1, for cookie-proxy's
end-to-end tests: an ASGI app under hypercorn (PyPI). usage: h2origin.py PORT
  /cookies    200 with two Set-Cookie fields and a body naming the protocol the request came in
  /echo       the request body back
  /large=N    N bytes (bytes(range(256)) repeated)
  /peer       after 0.3 s, the port of the connection the request came on (which upstream connection it was)"""
import asyncio, sys

from hypercorn.asyncio import serve
from hypercorn.config import Config


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path = scope["path"]
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = [(b"content-type", b"application/octet-stream")]
    if path.startswith("/cookies"):
        headers += [(b"set-cookie", b"a=1; Path=/"), (b"set-cookie", b"b=2; Max-Age=60")]
        payload = b"protocol " + scope["http_version"].encode()
    elif path.startswith("/echo"):
        payload = body
    elif path.startswith("/peer"):
        await asyncio.sleep(0.3)
        payload = str(scope["client"][1]).encode()
    elif path.startswith("/large="):
        # Streamed in 64 KiB pieces as the connection takes them (not made whole first: 100 of these at once).
        n = int(path.split("=")[1])
        block = bytes(range(256)) * 256
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        sent = 0
        while sent < n:
            part = block[: min(len(block), n - sent)]
            sent += len(part)
            await send({"type": "http.response.body", "body": part, "more_body": sent < n})
        return
    else:
        payload = b"not found"
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


if __name__ == "__main__":
    config = Config()
    config.bind = ["127.0.0.1:" + sys.argv[1]]
    config.accesslog = None
    print("PORT", sys.argv[1], flush=True)
    asyncio.run(serve(app, config))
