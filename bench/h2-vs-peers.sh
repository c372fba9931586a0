#!/usr/bin/env bash
# HTTP/2 clients through cookie-proxy against nginx and mitmproxy doing the same cookie rewriting, as reverse
# proxies in front of the shared HTTP/1.1 origin (bench/origin.sh): h2load (nghttp2-client) speaks h2c with prior
# knowledge to nginx (`listen … http2` with proxy_cookie_domain / proxy_cookie_flags) and cookie-proxy (--reverse
# with bench/bench.rules); mitmproxy (reverse mode, the cookie addon of bench/peers.sh) has no h2c, so h2load
# speaks h2 to it over TLS (ALPN), which costs it the TLS on top: its column is an upper bound of the ratio's
# fairness, not a like-for-like. In rounds: each
# round runs the three seconds apart, and the figures are medians of per-round ratios (this machine's speed drifts
# between phases; a round sees one phase). Reports req/s, p99 (from h2load's per-request log) and each proxy's
# own CPU time per request (user and system, from /proc); c clients with 10 streams each.
# h2load on CPU 1; origin and the proxies on CPU 0, each proxy one thread.
# Only 127.0.0.1 is used; everything started is stopped.
# Usage: bench/h2-vs-peers.sh [seconds=2] [rounds=5]   Env: LOADS (default "1 16 64"), MITM (a mitmdump binary; by
# default bench/peers.sh's venv; "none" leaves mitmproxy out), BIN (the cookie-proxy to measure; an earlier build
# for a before-and-after pair of runs).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-2}; ROUNDS=${2:-5}
BIN=${BIN:-.build/release/cookie-proxy}
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
command -v h2load >/dev/null && command -v nginx >/dev/null || {
  echo "needs h2load and nginx (apt-get install -y nghttp2-client nginx)" >&2; exit 1; }
MITM=${MITM:-${XDG_CACHE_HOME:-$HOME/.cache}/proxy-bench/venv/bin/mitmdump}
[ "$MITM" = none ] || [ -x "$MITM" ] || {
  echo "no mitmdump at $MITM (bench/peers.sh installs it; MITM=none leaves it out)" >&2; exit 1; }
. bench/origin.sh
start_origin 18183 18191 18193
write_rewriting_proxy_conf "$T/proxy" 18183 daemon
# The same nginx, as an h2c reverse proxy (prior knowledge): `http2` on the listener, Host set to the origin's.
sed -i -e 's/listen 127.0.0.1:18183 backlog=4096;/listen 127.0.0.1:18183 http2 backlog=4096; http2_max_concurrent_streams 128;/' \
  -e 's/proxy_set_header Host \$http_host;/proxy_set_header Host 127.0.0.1:18180;/' "$T/proxy/nginx.conf"
taskset -c 0 nginx -c "$T/proxy/nginx.conf" -p "$T/proxy"
taskset -c 0 $BIN run --quiet --listen 127.0.0.1:18191 --reverse http://127.0.0.1:18180 --rules bench/bench.rules \
  --log none --threads 1 --ui off > /dev/null 2>&1 &
OURS=$!
NAMES=("nginx 18183" "cookie-proxy 18191")
if [ "$MITM" != none ]; then
  # The addon of bench/peers.sh (the same rewriting as nginx's), taken from that script.
  awk '/^cat >"\$T\/cookie_rewrite.py" <<.EOF.$/ {on=1; next} on && /^EOF$/ {exit} on' bench/peers.sh \
    > "$T/cookie_rewrite.py"
  taskset -c 0 "$MITM" -q --mode reverse:http://127.0.0.1:18180 --listen-host 127.0.0.1 --listen-port 18193 \
    --set confdir="$T/mitmconf" -s "$T/cookie_rewrite.py" > "$T/mitm.log" 2>&1 &
  MITMPID=$!
  NAMES+=("mitmproxy 18193")
  wait_port 18193 20
fi
sleep 0.3
NGINX_WORKER=$(pgrep -P "$(cat "$T/proxy/nginx.pid")" | head -1)
wait_port 18191

run() {  # port pid conns [scheme] -> "req/s p99ms cpu_us"
  h2_measure "$2" "$3" "${4:-http}://127.0.0.1:$1/"
}

echo "# HTTP/2 (h2c, 10 streams per connection): cookie-proxy vs nginx${MITM:+ and mitmproxy}, same rewriting, ${ROUNDS} rounds × ${DUR}s (medians; ratios are medians of per-round ratios)"
echo
for pair in "${NAMES[@]}"; do
  set -- $pair
  echo "$1:"
  if [ "$1" = mitmproxy ]; then
    curl -sk --http2 -D - -o /dev/null "https://127.0.0.1:$2/"
  else
    curl -s --http2-prior-knowledge -D - -o /dev/null "http://127.0.0.1:$2/"
  fi | grep -i '^set-cookie' | sed 's/^/    /'
done
echo
header="| clients × 10 streams | req/s: nginx · cookie-proxy | ratio vs nginx (middle half) | p99 ms: nginx · cookie-proxy | CPU µs/req: nginx · cookie-proxy | CPU ratio vs nginx |"
[ "$MITM" = none ] || header+=" mitmproxy (h2 over TLS) req/s | ratio vs mitmproxy |"
echo "$header"
echo "$header" | sed 's/[^|]*/---/g; s/^---//; s/---$//'
for c in ${LOADS:-1 16 64}; do
  : > "$T/n"; : > "$T/o"; : > "$T/m"
  for _ in $(seq "$ROUNDS"); do
    run 18183 "$NGINX_WORKER" "$c" >> "$T/n"
    run 18191 "$OURS" "$c" >> "$T/o"
    [ "$MITM" = none ] || run 18193 "$MITMPID" "$c" https >> "$T/m"
  done
  row=$(h2_row "$c" "$T/n" "$T/o")
  [ "$MITM" = none ] || row+=$(printf " %s | %s |" "$(round_col "$T/m" 1)" "$(round_ratio "$T/o" "$T/m")")
  echo "$row"
done
