#!/usr/bin/env python3
"""A fleet of five small sites for `audit --browser --urls`'s tests: alpha.test … epsilon.test on one https port
(the certificate names them all; told apart by Host), each with a start page linking /p/1 and /p/2. Served in the
version written in VERSION_FILE (1 or 2, read on every request, so a test switches versions without a new port).
Prints "PORT <n>" on stdout and runs until killed. Usage: fleet_sites.py CERT KEY VERSION_FILE [SITES=5]: more
than five adds site6.test … siteN.test, each like epsilon (bench/audit-fleet.sh).

Every site's start page sets sid (HttpOnly, Secure, SameSite=Lax). Besides:
  alpha    a script sets _ga (analytics, before any consent: the site fails the default --fail-on); version 2
           also sets promo on / (new)
  beta     / sets _fbp (marketing, before any consent: the site fails the default --fail-on)
  gamma    /p/1 sets lang for a day; version 2 for a year with SameSite=Strict (changed: lifetime, sameSite)
  delta    / sets tmp (a session cookie); version 2 does not (gone)
  epsilon  nothing else
And for --sitemap (pages no link leads to): gamma's robots.txt names a sitemap index (/maps/index.xml) whose one
sitemap (/maps/pages.xml) lists /p/1 and /secret, which sets secret; epsilon has no robots.txt and a /sitemap.xml
listing /p/2 and /hidden, which sets hidden.
"""
import http.server, socketserver, ssl, sys

SITES = ["alpha", "beta", "gamma", "delta", "epsilon"]
SITES += ["site%d" % i for i in range(6, int(sys.argv[4]) + 1 if len(sys.argv) > 4 else 6)]

def version():
    try:
        return int(open(sys.argv[3]).read().strip() or "1")
    except (OSError, ValueError):
        return 1

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, ctype, body, cookies=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for c in cookies:
            self.send_header("Set-Cookie", c)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0]
        name = host[:-5] if host.endswith(".test") else ""
        path = self.path.split("?")[0]
        origin = "https://%s:%d" % (host, self.server.server_address[1])
        xml = '<?xml version="1.0" encoding="UTF-8"?>\n<%s xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</%s>'
        if name == "gamma" and path == "/robots.txt":
            self.send(200, "text/plain", ("User-agent: *\nAllow: /\n\nSitemap: %s/maps/index.xml\n" % origin).encode())
            return
        if name == "gamma" and path == "/maps/index.xml":
            body = xml % ("sitemapindex", "<sitemap><loc>%s/maps/pages.xml</loc></sitemap>" % origin, "sitemapindex")
            self.send(200, "application/xml", body.encode())
            return
        if (name, path) in (("gamma", "/maps/pages.xml"), ("epsilon", "/sitemap.xml")):
            pages = ["/p/1", "/secret"] if name == "gamma" else ["/p/2", "/hidden"]
            body = xml % ("urlset", "".join("<url><loc>%s%s</loc></url>" % (origin, p) for p in pages), "urlset")
            self.send(200, "application/xml", body.encode())
            return
        if (name, path) in (("gamma", "/secret"), ("epsilon", "/hidden")):
            self.send(200, "text/html", b"<!doctype html><p>not linked</p>", ["%s=1; Path=/" % path[1:]])
            return
        if name not in SITES or path not in ("/", "/p/1", "/p/2"):
            self.send(404, "text/plain", b"not here")
            return
        v = version()
        cookies = []
        script = ""
        if path == "/":
            cookies.append("sid=s-%s; Path=/; Secure; HttpOnly; SameSite=Lax" % name)
        if name == "alpha":
            script = "<script>document.cookie = '_ga=GA1.1.7.1; Path=/; Max-Age=63072000; SameSite=Lax';</script>"
            if v == 2 and path == "/":
                cookies.append("promo=spring; Path=/; Max-Age=3600; Secure")
        if name == "beta" and path == "/":
            cookies.append("_fbp=fb.1.1; Path=/; Max-Age=7776000; SameSite=Lax")
        if name == "gamma" and path == "/p/1":
            cookies.append("lang=en; Path=/; Max-Age=86400" if v == 1
                           else "lang=en; Path=/; Max-Age=31536000; SameSite=Strict")
        if name == "delta" and path == "/" and v == 1:
            cookies.append("tmp=1; Path=/")
        body = ("<!doctype html><html><head><title>%s %s</title></head><body><h1>%s</h1>"
                '<a href="/p/1">one</a> <a href="/p/2">two</a>%s</body></html>' % (name, path, name, script))
        self.send(200, "text/html; charset=utf-8", body.encode(), cookies)

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

def main():
    server = Server(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("PORT", server.server_address[1], flush=True)
    server.serve_forever()

main()
