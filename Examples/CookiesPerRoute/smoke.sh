#!/usr/bin/env bash
# Builds this example (a package of its own that embeds the proxy through cookie-proxy's `CookieProxy` product, no
# @testable import) and runs it once against a real upstream: an origin that sets two cookies per response, two
# requests through the example's route with curl, and the example's count for that route, which must be 4.
set -euo pipefail
cd "$(dirname "$0")"
build_log=$(mktemp)
swift build 2>&1 | tee "$build_log" | tail -1
if grep -q "warning:" "$build_log"; then grep "warning:" "$build_log" >&2; exit 1; fi
rm -f "$build_log"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
origin_port=$(free_port)
proxy_port=$(free_port)
home=$(mktemp -d)
python3 - "$origin_port" <<'PY' &
import http.server, sys
class Origin(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Set-Cookie", "session=1; Path=/; HttpOnly")
        self.send_header("Set-Cookie", "theme=dark; Path=/")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Origin).serve_forever()
PY
origin=$!
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$origin_port/" && break; sleep 0.1; done
out=$(mktemp)
COOKIE_PROXY_HOME=$home .build/debug/CookiesPerRoute --listen "127.0.0.1:$proxy_port" --seconds 6 \
  --route "/app/=http://127.0.0.1:$origin_port/" > "$out" &
example=$!
trap 'kill $origin $example 2>/dev/null || true; rm -rf "$home" "$out"' EXIT
for _ in $(seq 1 50); do grep -q "listening on" "$out" && break; sleep 0.1; done
for _ in 1 2; do
  status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$proxy_port/app/page")
  [ "$status" = 200 ] || { echo "example: a request through its route got $status" >&2; exit 1; }
done
wait $example
cat "$out"
awk -F'\t' '$2 == 4 { found = 1 } END { exit found ? 0 : 1 }' "$out" || {
  echo "example: expected 4 Set-Cookie lines on the route" >&2; exit 1; }
echo "example CookiesPerRoute: built outside the package and counted 4 lines on its route"
