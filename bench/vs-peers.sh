#!/usr/bin/env bash
# cookie-proxy against nginx and HAProxy doing the same cookie rewriting (nginx: proxy_cookie_domain /
# proxy_cookie_flags, as in bench/peers.sh; HAProxy: http-response replace-header Set-Cookie), in rounds: each
# round runs nginx, HAProxy and cookie-proxy seconds apart, and the figures are medians of the per-round ratios.
# This machine's speed drifts by 2x between phases; a round sees the same phase. Reports req/s, p99 and each
# proxy's own CPU time per request (user and system, from /proc), by default keep-alive at c=1, 16 and 64 and a
# new connection per request at c=1 and 16, with how far the rounds agree (the middle half of the req/s ratios; in
# how many rounds cookie-proxy was at or ahead of both). The Set-Cookie lines each proxy gives are printed first.
# wrk on CPU 1; origin and the proxies on CPU 0, each proxy one thread.
# Only 127.0.0.1 is used; everything started is stopped. Usage: bench/vs-peers.sh [seconds=2] [rounds=9]
# Env: LOADS (default "ka:1 ka:16 ka:64 new:1 new:16") and PROXY_ARGS (extra arguments for cookie-proxy; by
# default "--threads 1 --ui off", one loop like the peers' one thread and worker).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-2}; ROUNDS=${2:-9}
BIN=.build/release/cookie-proxy
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
command -v wrk >/dev/null && command -v nginx >/dev/null && command -v haproxy >/dev/null || {
  echo "needs wrk, nginx and haproxy (apt-get install -y wrk nginx haproxy)" >&2; exit 1; }
. bench/origin.sh
start_origin 18182 18184 18190
write_rewriting_proxy_conf "$T/proxy" 18182 daemon
taskset -c 0 nginx -c "$T/proxy/nginx.conf" -p "$T/proxy"
write_haproxy_conf "$T" 18184
taskset -c 0 haproxy -q -f "$T/haproxy.cfg"
sleep 0.3
NGINX_WORKER=$(pgrep -P "$(cat "$T/proxy/nginx.pid")" | head -1)
HAPROXY=$(cat "$T/haproxy.pid")
# shellcheck disable=SC2086  # PROXY_ARGS is a list of words
taskset -c 0 $BIN run --quiet --listen 127.0.0.1:18190 --rules bench/bench.rules --log none \
  ${PROXY_ARGS:---threads 1 --ui off} > /dev/null 2>&1 &
OURS=$!
wait_port 18184
wait_port 18190
write_absolute_form_script

echo "# cookie-proxy vs nginx and HAProxy, same rewriting, ${ROUNDS} rounds × ${DUR}s (medians; ratios are medians of per-round ratios)"
echo
for pair in "nginx 18182" "HAProxy 18184" "cookie-proxy 18190"; do
  set -- $pair
  echo "$1:"
  curl -s -D - -o /dev/null -x "127.0.0.1:$2" http://127.0.0.1:18180/ | grep -i '^set-cookie' | sed 's/^/    /'
done
echo
echo "| load | req/s: nginx · HAProxy · cookie-proxy | ratio vs nginx (middle half) | ratio vs HAProxy (middle half) | p99 ms: nginx · HAProxy · cookie-proxy | CPU µs/req: nginx · HAProxy · cookie-proxy | CPU ratio vs nginx · HAProxy | rounds at or ahead of both: req/s, p99, CPU |"
echo "|---|---|---|---|---|---|---|---|"
for load in ${LOADS:-ka:1 ka:16 ka:64 new:1 new:16}; do
  IFS=: read -r kind c <<< "$load"
  extra=(); label="keep-alive c=$c"
  if [ "$kind" = new ]; then extra=(-H "Connection: close"); label="new connection c=$c"; fi
  : > "$T/n"; : > "$T/h"; : > "$T/o"
  for _ in $(seq "$ROUNDS"); do
    wrk_round 18182 "$NGINX_WORKER" "$c" "${extra[@]}" >> "$T/n"
    wrk_round 18184 "$HAPROXY" "$c" "${extra[@]}" >> "$T/h"
    wrk_round 18190 "$OURS" "$c" "${extra[@]}" >> "$T/o"
  done
  col() { awk -v k="$2" '{print $k}' "$1" | median; }
  cpu() { awk '{printf "%.1f\n", $3 + $4}' "$1" | median; }
  # ratio PEER: the median of cookie-proxy's req/s over PEER's, and the middle half of those ratios.
  ratio() {
    paste "$T/o" "$1" | awk '{print $1 / $5}' | sort -n |
      awk '{a[NR]=$1} END {printf "%.3f (%.3f … %.3f)", a[int((NR+1)/2)], a[int((NR+3)/4)], a[int((3*NR+3)/4)]}'
  }
  cpu_ratio() { paste "$T/o" "$1" | awk '{print ($3 + $4) / ($7 + $8)}' | median; }
  ahead=$(paste "$T/o" "$T/n" "$T/h" | awk '{r += $1 >= $5 && $1 >= $9; p += $2 <= $6 && $2 <= $10;
    c += $3 + $4 <= $7 + $8 && $3 + $4 <= $11 + $12} END {printf "%d, %d, %d of %d", r, p, c, NR}')
  printf "| %s | %s · %s · %s | %s | %s | %s · %s · %s | %s · %s · %s | %.3f · %.3f | %s |\n" "$label" \
    "$(col "$T/n" 1)" "$(col "$T/h" 1)" "$(col "$T/o" 1)" "$(ratio "$T/n")" "$(ratio "$T/h")" \
    "$(col "$T/n" 2)" "$(col "$T/h" 2)" "$(col "$T/o" 2)" "$(cpu "$T/n")" "$(cpu "$T/h")" "$(cpu "$T/o")" \
    "$(cpu_ratio "$T/n")" "$(cpu_ratio "$T/h")" "$ahead"
done
