#!/usr/bin/env python3
"""A recording upstream for the framing tests: every byte each connection sends is appended to DIR/conn-N.bin.
It reads requests leniently (a bare LF ends a line, a chunk size is its leading hex digits), as a server that
uses the latitude of RFC 9112 would, and answers each with a response chosen by the path:
  /resp/cl-te      Content-Length and Transfer-Encoding: chunked together
  /resp/bare-cr    a bare CR inside a field value
  /resp/bare-lf    a head with bare LF line ends
  /resp/101        101 Switching Protocols to a request that asked for no upgrade
  /cookies/N       200 with three Set-Cookie lines whose values carry N (the log tests match records by them)
  anything else    200, Content-Length: 2, "ok"
Listens on 127.0.0.1 (port 0 = any free port), prints "PORT <n>", runs until killed.
Usage: recorder.py PORT DIR"""
import itertools, os, socket, sys, threading

RESPONSES = {
    b"/resp/cl-te": b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    b"/resp/bare-cr": b"HTTP/1.1 200 OK\r\nX-A: 1\rContent-Length: 0\r\nContent-Length: 2\r\n\r\nok",
    b"/resp/bare-lf": b"HTTP/1.1 200 OK\nSet-Cookie: a=b; Path=/\nContent-Length: 2\n\nok",
    b"/resp/101": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
}
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
counter = itertools.count(1)

class Conn:
    def __init__(self, sock, path):
        self.sock, self.buf, self.log = sock, b"", open(path, "ab", buffering=0)

    def more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError
        self.log.write(chunk)
        self.buf += chunk

    def line(self):
        while b"\n" not in self.buf:
            self.more()
        line, self.buf = self.buf.split(b"\n", 1)
        return line[:-1] if line.endswith(b"\r") else line

    def take(self, n):
        while len(self.buf) < n:
            self.more()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

def serve(sock, path):
    c = Conn(sock, path)
    try:
        while True:
            start = c.line()
            if not start:
                continue
            fields = []
            while True:
                l = c.line()
                if not l:
                    break
                name, _, value = l.partition(b":")
                fields.append((name.strip().lower(), value.strip()))
            te = [v for n, v in fields if n == b"transfer-encoding"]
            cl = [v for n, v in fields if n == b"content-length"]
            if te and te[-1].lower().endswith(b"chunked"):
                while True:
                    digits = b""
                    for ch in c.line():
                        if chr(ch) in "0123456789abcdefABCDEF":
                            digits += bytes([ch])
                        else:
                            break
                    size = int(digits or b"0", 16)
                    if size == 0:
                        while c.line():
                            pass
                        break
                    c.take(size)
                    c.line()
            elif cl:
                c.take(int(cl[0] or b"0"))
            parts = start.split(b" ")
            target = parts[1] if len(parts) > 1 else b""
            if target.startswith(b"/cookies/"):
                n = target[len(b"/cookies/"):]
                body = (b"Set-Cookie: sid=s" + n + b"; Path=/; HttpOnly\r\n"
                        b"Set-Cookie: pref=p" + n + b"; Max-Age=3600\r\n"
                        b"Set-Cookie: track=t" + n + b"; Domain=127.0.0.1\r\n")
                sock.sendall(b"HTTP/1.1 200 OK\r\n" + body + b"Content-Length: 2\r\n\r\nok")
                continue
            sock.sendall(RESPONSES.get(target, OK))
    except (EOFError, OSError, ValueError):
        pass
    finally:
        sock.close()

def main():
    directory = sys.argv[2]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(sys.argv[1])))
    listener.listen(256)
    print("PORT %d" % listener.getsockname()[1], flush=True)
    while True:
        sock, _ = listener.accept()
        path = os.path.join(directory, "conn-%d.bin" % next(counter))
        threading.Thread(target=serve, args=(sock, path), daemon=True).start()

if __name__ == "__main__":
    main()
