#!/usr/bin/env python3
"""A small shop for `audit --browser`'s tests: three hosts on one https port (its certificate names them all),
told apart by Host. Prints "PORT <n>" on stdout and runs until killed. Usage: shop_site.py CERT KEY [PAGES=3].

  shop.test  the first party: a consent banner (buttons named "Accept all" and "Reject all"), links to /page/1..PAGES,
             the ad host's iframe; its responses set sid (necessary, HttpOnly) and, before any consent on purpose,
             _fbp (marketing); /page/2 sets lang; / also sends a line browsers refuse (Domain of another site).
             The banner's buttons set the consent cookie by script; accepting loads cdn.test's analytics script.
  cdn.test   /analytics.js: sets _ga on the page's site by document.cookie.
  ads.test   /frame: an iframe setting IDE (SameSite=None; Secure) and a partitioned __Host-ad (CHIPS).
  And for the audit's bad days: shop.test/busy never goes idle (a request every 100 ms), shop.test/hang answers
  after a minute.
"""
import http.server, socketserver, ssl, sys, time

BANNER = """
<div id="cookie-banner" style="position:fixed;bottom:0;left:0;right:0;background:#eee;padding:1em">
  We use cookies. <button id="ok-all">Accept all</button> <button id="no-all">Reject all</button>
</div>
<script>
  function analytics() { const s = document.createElement('script'); s.src = 'https://cdn.test:PORT/analytics.js'; document.head.appendChild(s); }
  function choose(v) {
    document.cookie = 'consent=' + v + '; Path=/; Max-Age=31536000; Secure; SameSite=Lax';
    document.getElementById('cookie-banner').remove();
    if (v === 'accepted') analytics();
  }
  document.getElementById('ok-all').onclick = () => choose('accepted');
  document.getElementById('no-all').onclick = () => choose('rejected');
  if (document.cookie.includes('consent=')) { document.getElementById('cookie-banner').remove(); if (document.cookie.includes('consent=accepted')) analytics(); }
</script>
"""

def page(title, port):
    links = " ".join('<a href="/page/%d">page %d</a>' % (i, i) for i in range(1, PAGES + 1))
    body = ("<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p>"
            '<iframe src="https://ads.test:PORT/frame" width="300" height="100"></iframe>%s</body></html>'
            % (title, title, links, BANNER))
    return body.replace("PORT", str(port)).encode()

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
        port = self.server.server_address[1]
        path = self.path.split("?")[0]
        if host == "shop.test" and (path == "/" or path in PAGE_PATHS):
            cookies = ["sid=s1; Path=/; Secure; HttpOnly; SameSite=Lax",
                       "_fbp=fb.1.1; Path=/; Max-Age=7776000; SameSite=Lax"]
            if path == "/":
                cookies.append("bad=1; Domain=elsewhere.test; Path=/")
            if path == "/page/2":
                cookies.append("lang=en; Path=/; Max-Age=86400")
            self.send(200, "text/html; charset=utf-8", page("shop " + path, port), cookies)
        elif host == "shop.test" and path == "/busy":
            # A page whose network never goes idle: a request every 100 ms.
            self.send(200, "text/html", b"<!doctype html><p>busy</p><script>setInterval(() => fetch('/ping'), 100)</script>",
                      ["busy=1; Path=/"])
        elif host == "shop.test" and path == "/ping":
            self.send(200, "text/plain", b"pong")
        elif host == "shop.test" and path == "/hang":
            time.sleep(60)
            self.send(200, "text/plain", b"late")
        elif host == "cdn.test" and path == "/analytics.js":
            js = b"document.cookie = '_ga=GA1.1.42.1; Path=/; Max-Age=63072000; SameSite=Lax';"
            self.send(200, "application/javascript", js)
        elif host == "ads.test" and path == "/frame":
            self.send(200, "text/html", b"<!doctype html><p>ad</p>",
                      ["IDE=ad1; Path=/; Max-Age=3600; SameSite=None; Secure",
                       "__Host-ad=p1; Path=/; Secure; SameSite=None; Partitioned"])
        else:
            self.send(404, "text/plain", b"not here")

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

PAGES = int(sys.argv[3]) if len(sys.argv) > 3 else 3
PAGE_PATHS = {"/page/%d" % i for i in range(1, PAGES + 1)}

def main():
    server = Server(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("PORT", server.server_address[1], flush=True)
    server.serve_forever()

main()
