#!/usr/bin/env python3
"""A small load generator for the log tests: THREADS keep-alive connections through the proxy, each sending
REQUESTS requests for http://127.0.0.1:UPSTREAM/cookies/<thread>-<i>, and prints every Set-Cookie line the client
received, one per line. Exits non-zero if any response is not a 200.
Usage: loadgen.py PROXY_PORT UPSTREAM_PORT THREADS REQUESTS"""
import socket, sys, threading

def read_response(sock, buf):
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        rest += sock.recv(65536)
    return lines, rest[length:]

def worker(proxy, upstream, tid, count, out, failures):
    sock = socket.create_connection(("127.0.0.1", proxy))
    buf = b""
    for i in range(count):
        target = "http://127.0.0.1:%d/cookies/%d-%d" % (upstream, tid, i)
        sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (target, upstream)).encode())
        lines, buf = read_response(sock, buf)
        if not lines[0].startswith(b"HTTP/1.1 200"):
            failures.append(lines[0])
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"set-cookie":
                out.append(value.strip().decode("latin-1"))
    sock.close()

def main():
    proxy, upstream, threads, requests = map(int, sys.argv[1:5])
    received, failures = [], []
    workers = [threading.Thread(target=worker, args=(proxy, upstream, t, requests, received, failures))
               for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    sys.stdout.write("\n".join(received) + "\n")
    sys.exit(1 if failures else 0)

if __name__ == "__main__":
    main()
