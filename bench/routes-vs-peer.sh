#!/usr/bin/env bash
# The local-development shape (docs/local-development.md) against a peer doing the same, nginx or Caddy (the two
# issue #43 names): an https listener (h2 by ALPN) in front of two routes, `/` and `/api/` (the prefix replaced by
# `/`), both to the shared HTTP/1.1 origin of bench/origin.sh (5 Set-Cookie per response), with the same cookie
# rewriting (bench/bench.rules for cookie-proxy; proxy_cookie_domain / proxy_cookie_flags for nginx; header_down
# replacements for Caddy), X-Forwarded-* and Host set to the upstream's by all. The peer gets a leaf of a
# throwaway CA made here; cookie-proxy mints its own from a CA in a temporary home. h2load alternates the two
# routes' URLs, c connections × 10 streams, over TLS. In rounds: each round runs both a second apart; figures are
# medians, ratios medians of per-round ratios. Reports req/s, p99 (h2load's per-request log) and each proxy's own
# CPU time per request (user + system, /proc). h2load on CPU 1; origin and proxies on CPU 0, each proxy one thread
# (nginx one worker; Caddy GOMAXPROCS=1). Only 127.0.0.1 is used; everything started is stopped.
# Usage: [PEER=nginx|caddy] bench/routes-vs-peer.sh [seconds=2] [rounds=5]   Env: LOADS (default "1 16 64")
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-2}; ROUNDS=${2:-5}; PEER=${PEER:-nginx}
case "$PEER" in nginx|caddy) ;; *) echo "PEER must be nginx or caddy" >&2; exit 1 ;; esac
BIN=.build/release/cookie-proxy
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
command -v h2load >/dev/null && command -v nginx >/dev/null && command -v openssl >/dev/null || {
  echo "needs h2load, nginx and openssl (apt-get install -y nghttp2-client nginx openssl)" >&2; exit 1; }
[ "$PEER" = nginx ] || command -v caddy >/dev/null || { echo "needs caddy (apt-get install -y caddy)" >&2; exit 1; }
. bench/origin.sh
start_origin 18184 18194
# nginx's certificate: a leaf for 127.0.0.1 from a CA of its own (the same ECDSA P-256 keys cookie-proxy mints).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
  -keyout "$T/ca.key" -out "$T/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 -keyout "$T/leaf.key" \
  -out "$T/leaf.csr" 2>/dev/null
printf "subjectAltName=IP:127.0.0.1\n" > "$T/ext"
openssl x509 -req -in "$T/leaf.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 -extfile "$T/ext" \
  -out "$T/leaf.pem" 2>/dev/null
if [ "$PEER" = nginx ]; then
cat > "$T/proxy/nginx.conf" <<NGINX
worker_processes 1; daemon on; pid $T/proxy/nginx.pid; error_log $T/proxy/err;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 10000000; keepalive_timeout 120s;
  client_body_temp_path $T/proxy/b; proxy_temp_path $T/proxy/p; fastcgi_temp_path $T/proxy/f;
  uwsgi_temp_path $T/proxy/u; scgi_temp_path $T/proxy/s;
  upstream origin { server 127.0.0.1:18180; keepalive 128; keepalive_requests 10000000; }
  server { listen 127.0.0.1:18184 ssl http2 backlog=4096; http2_max_concurrent_streams 128;
    ssl_certificate $T/leaf.pem; ssl_certificate_key $T/leaf.key; ssl_protocols TLSv1.3;
    proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host 127.0.0.1:18180;
    proxy_set_header X-Forwarded-For \$remote_addr; proxy_set_header X-Forwarded-Proto https;
    proxy_set_header X-Forwarded-Host \$http_host;
    proxy_cookie_domain ~^example\.test\$ .example.test; proxy_cookie_flags ~ secure httponly samesite=lax;
    location / { proxy_pass http://origin; }
    location /api/ { proxy_pass http://origin/; } } }
NGINX
  taskset -c 0 nginx -c "$T/proxy/nginx.conf" -p "$T/proxy"
else
  # Caddy: the same routes (handle_path strips /api), Host the upstream's, X-Forwarded-* (Caddy's default), and the
  # same cookie rewriting as replacements on each Set-Cookie value: Domain=example.test dotted, the three flags
  # taken out and appended once (Secure; HttpOnly; SameSite=Lax, as proxy_cookie_flags and bench.rules give).
  sed "s|__T__|$T|g" > "$T/proxy/Caddyfile" <<'CADDY'
{
  admin off
  auto_https off
}
(upstream) {
  header_up Host {upstream_hostport}
  header_down Set-Cookie "(?i)(;\s*Domain=)example\.test(\s*;|\s*$)" "${1}.example.test${2}"
  header_down Set-Cookie "(?i);\s*(Secure|HttpOnly|SameSite=[^;]*)\s*(;|$)" "${2}"
  header_down Set-Cookie "(?i);\s*(Secure|HttpOnly|SameSite=[^;]*)\s*(;|$)" "${2}"
  header_down Set-Cookie "(?i);\s*(Secure|HttpOnly|SameSite=[^;]*)\s*(;|$)" "${2}"
  header_down Set-Cookie "$" "; Secure; HttpOnly; SameSite=Lax"
  transport http {
    keepalive 120s
    keepalive_idle_conns 128
    keepalive_idle_conns_per_host 128
  }
}
https://127.0.0.1:18184 {
  tls __T__/leaf.pem __T__/leaf.key {
    protocols tls1.3
  }
  handle_path /api/* {
    reverse_proxy 127.0.0.1:18180 {
      import upstream
    }
  }
  handle {
    reverse_proxy 127.0.0.1:18180 {
      import upstream
    }
  }
}
CADDY
  GOMAXPROCS=1 XDG_DATA_HOME="$T/proxy" XDG_CONFIG_HOME="$T/proxy" taskset -c 0 \
    caddy run --adapter caddyfile --config "$T/proxy/Caddyfile" > "$T/proxy/caddy.log" 2>&1 &
  CADDY_PID=$!
fi
COOKIE_PROXY_HOME="$T/home" taskset -c 0 $BIN run --quiet --listen https://127.0.0.1:18194 \
  --route /=http://127.0.0.1:18180 --route /api/=http://127.0.0.1:18180/ --rules bench/bench.rules \
  --log none --threads 1 --ui off > /dev/null 2>&1 &
OURS=$!
sleep 0.3
if [ "$PEER" = nginx ]; then PEER_PID=$(pgrep -P "$(cat "$T/proxy/nginx.pid")" | head -1); else PEER_PID=$CADDY_PID; fi
wait_port 18194
wait_port 18184 || { cat "$T/proxy/caddy.log" >&2; exit 1; }

run() {  # port pid conns -> "req/s p99ms cpu_us": both routes' URLs in turn, h2 by ALPN required
  H2_MUST_SPEAK=h2 h2_measure "$2" "$3" "https://127.0.0.1:$1/" "https://127.0.0.1:$1/api/"
}

echo "# An https listener with two routes: cookie-proxy vs $PEER, same rewriting, h2 over TLS, ${ROUNDS} rounds × ${DUR}s (medians; ratios are medians of per-round ratios)"
echo
for name_port in "$PEER 18184" "cookie-proxy 18194"; do
  set -- $name_port
  echo "$1 (/api/):"
  curl -sk --http2 -D - -o /dev/null "https://127.0.0.1:$2/api/" | grep -i '^set-cookie' | sed 's/^/    /'
done
echo
header="| clients × 10 streams | req/s: $PEER · cookie-proxy | ratio vs $PEER (middle half) | p99 ms: $PEER · cookie-proxy | CPU µs/req: $PEER · cookie-proxy | CPU ratio vs $PEER |"
echo "$header"
echo "$header" | sed 's/[^|]*/---/g; s/^---//; s/---$//'
for c in ${LOADS:-1 16 64}; do
  : > "$T/n"; : > "$T/o"
  for _ in $(seq "$ROUNDS"); do
    run 18184 "$PEER_PID" "$c" >> "$T/n"
    run 18194 "$OURS" "$c" >> "$T/o"
  done
  h2_row "$c" "$T/n" "$T/o"
  echo
done
