#!/usr/bin/env python3
"""Resident memory of cookie-proxy holding N idle keep-alive client connections (issue goal: < 50 MiB at 1,000).

Starts an origin (Python's http.server on 127.0.0.1) and the release binary with bench/bench.rules, opens N client
connections that each make one proxied request and then stay open and idle, and prints the proxy's VmRSS before
and after. Only 127.0.0.1 is used; everything started is stopped. Usage: bench/idle-memory.py [N=1000]
"""
import http.server
import os
import resource
import socket
import subprocess
import sys
import threading
import time

from loopback import recv_until, wait_port

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, ".build/release/cookie-proxy")


class Origin(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = b"hello\n"
        self.send_response(200)
        self.send_header("Set-Cookie", "sid=abc; Domain=example.test; Path=/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * N + 256)), hard))
    origin = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    oport = origin.server_address[1]
    proxy = subprocess.Popen(
        [BIN, "run", "--quiet", "--listen", "127.0.0.1:18195", "--rules", os.path.join(ROOT, "bench/bench.rules"),
         "--log", "none", "--max-connections", str(N + 100)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(18195)
        time.sleep(0.2)
        before = rss_kib(proxy.pid)
        clients = []
        request = f"GET http://127.0.0.1:{oport}/ HTTP/1.1\r\nHost: 127.0.0.1:{oport}\r\n\r\n".encode()
        for _ in range(N):
            s = socket.create_connection(("127.0.0.1", 18195))
            s.sendall(request)
            recv_until(s, lambda b: b"hello\n" in b)
            clients.append(s)
        time.sleep(0.5)
        after = rss_kib(proxy.pid)
        print(f"cookie-proxy resident memory: {before / 1024:.1f} MiB at start, "
              f"{after / 1024:.1f} MiB with {N} idle keep-alive clients (each after one proxied request)")
        for s in clients:
            s.close()
    finally:
        proxy.terminate()
        proxy.wait(timeout=15)
        origin.shutdown()


if __name__ == "__main__":
    main()
