#!/usr/bin/env python3
"""A client that keeps sending after the proxy refused its request (cookie-proxy's lingering close).
usage: linger_client.py PORT HEAD: sends HEAD (\\r\\n escapes allowed), reads the answer to the end of the stream,
then sends 3 × 64 KiB 0.1 s apart; prints the answer's first line, then "sent" or "send error: …"."""
import socket, sys, time

sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
sock.settimeout(10)
sock.sendall(sys.argv[2].encode("latin-1").decode("unicode_escape").encode("latin-1"))
answer = b""
while chunk := sock.recv(65536):
    answer += chunk
print(answer.split(b"\r\n")[0].decode("latin-1"))
try:
    for _ in range(3):
        sock.sendall(b"x" * 65536)
        time.sleep(0.1)
    print("sent")
except OSError as error:
    print("send error:", error)
