#!/usr/bin/env python3
"""WebSocket peers for SlowPeerEndToEndTests.

  wsecho.py server                 a real `websockets` echo server on 127.0.0.1 (frames up to 64 MiB); prints "PORT <n>"
  wsecho.py client PROXY_PORT ORIGIN_PORT forward|reverse SIZE COUNT [PATH]
                                   opens a WebSocket through the proxy (forward: an absolute-form request to
                                   ws://127.0.0.1:ORIGIN_PORT/; reverse: an origin-form one to the proxy, for PATH
                                   when given), sends COUNT
                                   binary frames of SIZE bytes (masked, RFC 6455 §5.3) and reads each echo; prints
                                   "OK <count> <size>" (exit 0) or "FAIL <why>" (exit 1)
"""
import asyncio, base64, hashlib, os, socket, struct, sys

def server():
    import logging
    import websockets

    logging.getLogger("websockets").setLevel(logging.CRITICAL)  # a client's abrupt close is not news here

    async def echo(connection):
        async for message in connection:
            await connection.send(message)

    async def main():
        async with websockets.serve(echo, "127.0.0.1", 0, max_size=64 << 20, compression=None) as s:
            print("PORT", s.sockets[0].getsockname()[1], flush=True)
            await asyncio.Future()

    asyncio.run(main())

def recv_exact(conn, n, buf):
    while len(buf) < n:
        chunk = conn.recv(1 << 20)
        if not chunk:
            raise EOFError(f"connection closed with {len(buf)} of {n} bytes")
        buf += chunk
    return buf[:n], buf[n:]

def client(proxy_port, origin_port, mode, size, count, path="/"):
    conn = socket.create_connection(("127.0.0.1", proxy_port))
    conn.settimeout(60)
    key = base64.b64encode(os.urandom(16)).decode()
    target = f"http://127.0.0.1:{origin_port}/" if mode == "forward" else path
    conn.sendall((f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{origin_port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return f"FAIL no handshake answer: {buf!r}"
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    if not head.startswith(b"HTTP/1.1 101") or accept not in head:
        return f"FAIL handshake: {head!r}"
    for i in range(count):
        payload = os.urandom(size)
        mask = os.urandom(4)
        masked = xor_mask(payload, mask)
        conn.sendall(b"\x82\xff" + struct.pack(">Q", size) + mask + masked)
        while True:
            header, buf = recv_exact(conn, 2, buf)
            length = header[1] & 0x7F
            if length == 126:
                raw, buf = recv_exact(conn, 2, buf)
                length = struct.unpack(">H", raw)[0]
            elif length == 127:
                raw, buf = recv_exact(conn, 8, buf)
                length = struct.unpack(">Q", raw)[0]
            echoed, buf = recv_exact(conn, length, buf)
            if header[0] != 0x89:  # the server's keep-alive ping (answering it is not needed here)
                break
        if header[0] != 0x82 or echoed != payload:
            return f"FAIL frame {i}: opcode {header[0]:#x}, {len(echoed)} bytes, equal {echoed == payload}"
    conn.sendall(b"\x88\x82" + b"\0\0\0\0" + b"\x03\xe8")
    return f"OK {count} {size}"

def xor_mask(payload, mask):
    """RFC 6455 §5.3 masking, fast for large frames (as one big integer XOR)."""
    n = len(payload)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(n, "little")

if __name__ == "__main__":
    if sys.argv[1] == "server":
        server()
    else:
        a = sys.argv[2:]
        try:
            result = client(int(a[0]), int(a[1]), a[2], int(a[3]), int(a[4]), *a[5:6])
        except (OSError, EOFError) as e:
            result = f"FAIL {e}"
        print(result, flush=True)
        sys.exit(0 if result.startswith("OK") else 1)
