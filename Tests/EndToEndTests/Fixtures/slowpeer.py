#!/usr/bin/env python3
"""Slow and misbehaving peers for cookie-proxy's flow-control and deadline tests (SlowPeerEndToEndTests).

  slowpeer.py upstream [CERT KEY]   an upstream on 127.0.0.1 (https with CERT and KEY); prints "PORT <n>", then one
                                    "END <path> <how> <bytes>" line per request body it stopped reading (how: complete,
                                    fin, reset), and runs until killed. Paths:
      /slow-read        reads the request body 64 KiB every 10 ms, answers "<bytes> <sha256>"
      /random-read?seed=S&size=N
                        reads the request body in random sizes with random pauses, then answers N pseudo-random
                        bytes (seed S) in random sizes with random pauses; the body's "<bytes> <sha256>" in X-Got
      /stall-body       Content-Length: 1000, ten bytes, then nothing until the client goes
      /big?size=N       N bytes of body at once, Content-Length framing
      /chunked-deflate  Transfer-Encoding: chunked, deflate, then bytes until it closes the connection
      /record           reads a Content-Length body and says how the request ended (END line)
  slowpeer.py client PROXY_PORT URL SEED SIZE RESPONSE_SIZE [connect|reverse]
                                    sends a POST of SIZE pseudo-random bytes (chunked when SEED is odd) in random
                                    sizes with random pauses, then reads the response the same way; prints
                                    "OK <status> <response bytes> <sha256> <X-Got>" (exit 0) or "FAIL <why>" (exit 1)
"""
import hashlib, os, random, socket, ssl, sys, threading, time

from upstream import read_head  # the test upstream's head reader (this folder)

def pseudo_random(seed, size):
    """`size` bytes that depend on `seed` (fast: a repeated random block, rotated per seed)."""
    rng = random.Random(seed)
    block = rng.randbytes(65521)
    out = bytearray()
    offset = seed % len(block)
    while len(out) < size:
        out += block[offset:]
        offset = 0
    return bytes(out[:size])

def header(head, name):
    for line in head.split(b"\r\n")[1:]:
        n, _, v = line.partition(b":")
        if n.strip().lower() == name:
            return v.strip()
    return None

class BodyReader:
    """Reads a request body (Content-Length or chunked) from a socket with a chosen read size and pause."""
    def __init__(self, conn, head, buf):
        self.conn, self.buf = conn, buf
        te = header(head, b"transfer-encoding")
        self.chunked = te is not None and te.lower() == b"chunked"
        self.remaining = int(header(head, b"content-length") or 0)
        self.digest, self.count = hashlib.sha256(), 0
        self.ended = "complete"

    def fill(self, size):
        try:
            chunk = self.conn.recv(size)
        except ConnectionResetError:
            self.ended = "reset"
            return False
        if not chunk:
            self.ended = "fin"
            return False
        self.buf += chunk
        return True

    def take(self, data):
        self.digest.update(data)
        self.count += len(data)

    def read_all(self, sizes, pause):
        """True when the whole body arrived; `sizes()` gives each read's size, `pause()` the sleep after it."""
        if not self.chunked:
            while True:
                take = min(self.remaining, len(self.buf))
                self.take(self.buf[:take])
                self.buf = self.buf[take:]
                self.remaining -= take
                if self.remaining == 0:
                    return True
                time.sleep(pause())
                if not self.fill(min(sizes(), self.remaining)):
                    return False
        while True:
            while b"\r\n" not in self.buf:
                time.sleep(pause())
                if not self.fill(sizes()):
                    return False
            line, self.buf = self.buf.split(b"\r\n", 1)
            n = int(line.split(b";")[0], 16)
            while len(self.buf) < n + 2:
                time.sleep(pause())
                if not self.fill(sizes()):
                    return False
            self.take(self.buf[:n])
            self.buf = self.buf[n + 2:]
            if n == 0:
                return True

def read_request_body(conn, head, buf, name, sizes, pause):
    """Reads the request body, then prints the END line; the reader, or None when the body did not end."""
    body = BodyReader(conn, head, buf)
    ok = body.read_all(sizes, pause)
    print("END", name, body.ended, body.count, flush=True)
    return body if ok else None

def query(path):
    out = {}
    if "?" in path:
        for part in path.split("?", 1)[1].split("&"):
            k, _, v = part.partition("=")
            out[k] = v
    return out

def respond(conn, status, body, extra=b""):
    conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n" + extra
                 + b"\r\n" + body)

def handle(conn):
    buf = b""
    try:
        while True:
            head, buf = read_head(conn, buf)
            if head is None:
                return
            method, path, _ = head.split(b"\r\n")[0].decode("latin-1").split(" ", 2)
            name = path.split("?")[0]
            q = query(path)
            if name == "/slow-read":
                body = read_request_body(conn, head, buf, name, lambda: 65536, lambda: 0.01)
                if body is None:
                    return
                buf = body.buf
                respond(conn, b"200 OK", f"{body.count} {body.digest.hexdigest()}".encode())
            elif name == "/random-read":
                rng = random.Random(int(q["seed"]))
                body = read_request_body(conn, head, buf, name, lambda: rng.choice([1, 7, 512, 4096, 65536, 1 << 20]),
                                         lambda: rng.choice([0, 0, 0, 0.001, 0.02]))
                if body is None:
                    return
                buf = body.buf
                size = int(q["size"])
                data = pseudo_random(int(q["seed"]) + 1, size)
                got = f"{body.count} {body.digest.hexdigest()}".encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(size).encode() + b"\r\nX-Got: " + got
                             + b"\r\n\r\n")
                sent = 0
                while sent < size:
                    n = rng.choice([1, 100, 8192, 65536, 1 << 20])
                    conn.sendall(data[sent:sent + n])
                    sent += n
                    time.sleep(rng.choice([0, 0, 0, 0.001, 0.02]))
            elif name == "/stall-body":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")
                while conn.recv(65536):
                    pass
                return
            elif name == "/big":
                size = int(q["size"])
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(size).encode() + b"\r\n\r\n")
                conn.sendall(b"x" * size)
            elif name == "/chunked-deflate":
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, deflate\r\n\r\n"
                             + b"not-really-deflate-" * 100 + b"end")
                conn.shutdown(socket.SHUT_WR)
                while conn.recv(65536):
                    pass
                return
            elif name == "/record":
                body = read_request_body(conn, head, buf, name, lambda: 65536, lambda: 0)
                if body is None:
                    return
                buf = body.buf
                respond(conn, b"200 OK", f"{body.count}".encode())
            else:
                respond(conn, b"404 Not Found", b"no such path")
    except (ConnectionResetError, BrokenPipeError):
        return
    finally:
        conn.close()

def upstream(args):
    context = None
    if len(args) == 2:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args[0], args[1])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    print("PORT", s.getsockname()[1], flush=True)
    while True:
        conn, _ = s.accept()
        if context is not None:
            try:
                conn = context.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                conn.close()
                continue
        threading.Thread(target=handle, args=(conn,), daemon=True).start()

def client(args):
    proxy_port, url, seed, size, response_size = int(args[0]), args[1], int(args[2]), int(args[3]), int(args[4])
    mode = args[5] if len(args) > 5 else "forward"
    rng = random.Random(seed * 7919)
    sizes = lambda: rng.choice([1, 13, 1000, 16384, 65536, 1 << 20])
    pause = lambda: rng.choice([0, 0, 0, 0.001, 0.02])
    conn = socket.create_connection(("127.0.0.1", proxy_port))
    conn.settimeout(60)
    scheme, rest = url.split("://", 1)
    authority, _, path = rest.partition("/")
    path = "/" + path
    target = url
    if mode == "connect":
        conn.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        head, _ = read_head(conn, b"")
        if head is None or not head.startswith(b"HTTP/1.1 200"):
            print("FAIL CONNECT answered", head, flush=True)
            return 1
        context = ssl.create_default_context(cafile=os.environ["CLIENT_CA"])
        conn = context.wrap_socket(conn, server_hostname=authority.split(":")[0])
        target = path
    elif mode == "reverse":
        target = path
    chunked = seed % 2 == 1
    data = pseudo_random(seed, size)
    framing = b"Transfer-Encoding: chunked\r\n" if chunked else b"Content-Length: " + str(size).encode() + b"\r\n"
    conn.sendall(f"POST {target} HTTP/1.1\r\nHost: {authority}\r\n".encode() + framing + b"\r\n")
    # The whole body, then the response (the upstream reads all of it before it answers): one thread, as an SSL
    # socket must not be read and written from two at once.
    sent = 0
    while sent < size:
        n = sizes()
        piece = data[sent:sent + n]
        conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        sent += n
        time.sleep(pause())
    if chunked:
        conn.sendall(b"0\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            print("FAIL no response head; got", buf[:200], flush=True)
            return 1
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    length = int(header(head, b"content-length") or -1)
    digest, count = hashlib.sha256(), len(buf)
    digest.update(buf)
    while count < length:
        time.sleep(pause())
        chunk = conn.recv(min(sizes(), length - count))
        if not chunk:
            break
        digest.update(chunk)
        count += len(chunk)
    status = head.split(b" ")[1].decode()
    got = (header(head, b"x-got") or b"-").decode()
    print("OK", status, count, digest.hexdigest(), got, flush=True)
    return 0

if __name__ == "__main__":
    if sys.argv[1] == "upstream":
        upstream(sys.argv[2:])
    elif sys.argv[1] == "digest":
        data = pseudo_random(int(sys.argv[2]), int(sys.argv[3]))
        print(len(data), hashlib.sha256(data).hexdigest())
    else:
        sys.exit(client(sys.argv[2:]))
