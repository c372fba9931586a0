#!/usr/bin/env python3
"""A test upstream for cookie-proxy's end-to-end tests: answers with exact bytes, per path.
Listens on 127.0.0.1 or $UPSTREAM_BIND (port 0 = any free port), prints "PORT <n>" on stdout, runs until killed."""
import socket, sys, threading, time, hashlib

ODD_COOKIES = (
    b"Set-Cookie: a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Path=/\r\n"
    b"Set-Cookie: a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Path=/\r\n"
    b"Set-Cookie: q=\"quoted, value\"; Domain=example.test;  Weird=attr ;HttpOnly\r\n"
    b"Set-Cookie: u=caf\xc3\xa9\xff; Max-Age=60; x-unknown\r\n"
    b"set-cookie: lower=case;path=/p;;\r\n"
    b"SET-COOKIE:nospace=1\r\n"
    b"X-Other:   spaced   \r\n"
)

def read_head(conn, buf):
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest

def content_length(head):
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0

import os
# UPSTREAM_BIND: the address to listen on (127.0.0.1); UPSTREAM_LOG=1: print "REQ <method> <target>" per request
# head, and "DONE <method> <target>" once its body is read whole.
BIND = os.environ.get("UPSTREAM_BIND", "127.0.0.1")
LOG_REQUESTS = os.environ.get("UPSTREAM_LOG") == "1"

def handle(conn):
    buf = b""
    try:
        while True:
            head, buf = read_head(conn, buf)
            if head is None:
                return
            line = head.split(b"\r\n")[0].decode("latin-1")
            method, path, _ = line.split(" ", 2)
            # An upstream mounted under /v1/ (a route's path): its paths answer as at the root.
            if path.startswith("/v1/"):
                path = path[3:]
            if LOG_REQUESTS:
                print("REQ", method, path, flush=True)
            n = content_length(head)
            expect = b"100-continue" in head.lower()
            if expect:
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            if b"transfer-encoding: chunked" in head.lower():
                body = b""
                while True:
                    while b"\r\n" not in buf:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        buf += chunk
                    line, buf = buf.split(b"\r\n", 1)
                    size = int(line.split(b";")[0], 16)
                    while len(buf) < size + 2:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        buf += chunk
                    if size == 0:
                        # no trailers in these tests: the final CRLF follows
                        buf = buf[2:]
                        break
                    body += buf[:size]
                    buf = buf[size + 2:]
            else:
                while len(buf) < n:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                body, buf = buf[:n], buf[n:]
            if LOG_REQUESTS:
                print("DONE", method, path, flush=True)
            if path.startswith("/cookies"):
                payload = b"cookies\n"
                conn.sendall(b"HTTP/1.1 200 OK\r\n" + ODD_COOKIES + b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
            elif path.startswith("/echo"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Method: %s\r\n\r\n" % (len(body), method.encode()) + body)
            elif path.startswith("/chunked"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\nSet-Cookie: c=1\r\n\r\n"
                             b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Checksum: abc\r\n\r\n")
            elif path.startswith("/large"):
                size = int(path.split("=")[1])
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n\r\n" % size)
                block = bytes(range(256)) * 256  # 64 KiB
                sent = 0
                while sent < size:
                    part = block[: min(len(block), size - sent)]
                    conn.sendall(part)
                    sent += len(part)
            elif path.startswith("/slow"):
                time.sleep(float(path.split("=")[1]))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow")
            elif path.startswith("/truncated"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
                conn.close()
                return
            elif path.startswith("/until-close"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until close")
                conn.close()
                return
            elif path.startswith("/ws"):
                conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
                while True:
                    data = buf or conn.recv(65536)
                    buf = b""
                    if not data:
                        return
                    conn.sendall(b"echo:" + data)
            elif path.startswith("/setcookie"):
                # /setcookie?c=<urlencoded Set-Cookie>&c=...&location=<url>
                from urllib.parse import urlparse, parse_qs
                q = parse_qs(urlparse(path).query)
                lines = b"".join(b"Set-Cookie: " + v.encode("latin-1") + b"\r\n" for v in q.get("c", []))
                if "location" in q:
                    conn.sendall(b"HTTP/1.1 302 Found\r\n" + lines + b"Location: " + q["location"][0].encode() + b"\r\nContent-Length: 0\r\n\r\n")
                else:
                    payload = b"<html><body>set</body></html>"
                    conn.sendall(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
            elif path.startswith("/hostile"):
                # What a hostile site puts in its cookies and its Location: terminal controls (ESC sequences that
                # clear the screen and set the window title, BEL, BS), C1 as a raw byte and in UTF-8, a bidi
                # override. /hostile-redirect answers 302 with such a Location.
                lines = (b"Set-Cookie: ev\x1b[2J\x1b[Hil=1; Path=/\r\n"
                         b"Set-Cookie: t\x1b]0;owned\x07=2; Path=/\r\n"
                         b"Set-Cookie: c1\x9b2J=3; Path=/\r\n"
                         b"Set-Cookie: u\xc2\x9b2J\xc2\x85=4; Domain=\x1b[8m.example; Path=/\r\n"
                         b"Set-Cookie: bidi\xe2\x80\xaegpj=5; Path=/\x08\x08\x7f\r\n")
                if path.startswith("/hostile-redirect"):
                    conn.sendall(b"HTTP/1.1 302 Found\r\n" + lines + b"Location: /x\x1b[2J\x1b]0;owned\x07\r\nContent-Length: 0\r\n\r\n")
                else:
                    payload = b"<html><body>hostile</body></html>"
                    conn.sendall(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
            elif path.startswith("/frame"):
                # /frame?src=<url>: a page that embeds <url> in an iframe (a cross-site frame when it is another site).
                from urllib.parse import urlparse, parse_qs
                import html
                src = parse_qs(urlparse(path).query)["src"][0]
                payload = ('<html><body><iframe id=f src="%s"></iframe></body></html>' % html.escape(src)).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nCache-Control: no-store\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
            elif path.startswith("/form"):
                # /form?action=<url>: a page whose form POSTs itself to <url> at once (a cross-site top-level POST
                # when <url> is another site).
                from urllib.parse import urlparse, parse_qs
                import html
                action = parse_qs(urlparse(path).query)["action"][0]
                payload = ('<html><body><form id=f method=post action="%s"><input name=x value=1></form>'
                           '<script>document.getElementById("f").submit()</script></body></html>' % html.escape(action)).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nCache-Control: no-store\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
            elif path.startswith("/read"):
                cookie = b""
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"cookie":
                        cookie = value.strip()
                payload = b"<html><body><pre id=cookies>COOKIE[" + cookie + b"]</pre></body></html>"
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nCache-Control: no-store\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
            elif path.startswith("/conn"):
                # The proxy's end of this connection (its port), so tests can tell upstream connections apart;
                # /conn-close then closes it, as a server whose keep-alive timeout ran out.
                payload = b"%d" % conn.getpeername()[1]
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
                if path.startswith("/conn-close"):
                    conn.close()
                    return
            elif path.startswith("/head"):
                # The request head as this origin received it (what crossed the proxy).
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(head) + head)
            elif path.startswith("/path"):
                payload = ("%s %s" % (method, path)).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
            else:
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass

def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((BIND, int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    s.listen(128)
    tls = None
    if len(sys.argv) > 3:  # upstream.py PORT CERT KEY: serve https
        import ssl
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[2], sys.argv[3])
    print("PORT", s.getsockname()[1], flush=True)
    while True:
        c, _ = s.accept()
        if tls:
            try:
                c = tls.wrap_socket(c, server_side=True)
            except (OSError, ValueError):
                c.close()
                continue
        threading.Thread(target=handle, args=(c,), daemon=True).start()

if __name__ == "__main__":
    main()
