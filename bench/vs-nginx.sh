#!/usr/bin/env bash
# cookie-proxy against nginx doing the same cookie rewriting (proxy_cookie_domain / proxy_cookie_flags, as in
# ../shared/bench), in pairs: each repetition runs nginx and then cookie-proxy seconds apart, and the figures are
# medians of the per-pair ratios. This machine's speed drifts by 2x between phases; a pair sees the same phase.
# Reports req/s, p99 and each proxy's own CPU time per request (user and system, from /proc), by default
# keep-alive at c=16 and c=64 and a new connection per request at c=16, with how far the pairs agree (the
# middle half of the req/s ratios; in how many pairs cookie-proxy was at or ahead of nginx). wrk on CPU 1;
# origin, nginx and cookie-proxy on CPU 0.
# Only 127.0.0.1 is used; everything started is stopped. Usage: bench/vs-nginx.sh [seconds=2] [pairs=9]
# Env: LOADS (default "ka:16 ka:64 new:16"; e.g. "ka:1 new:1" for ../shared/bench/run.sh's c=1 rows) and
# PROXY_ARGS (extra arguments for cookie-proxy, e.g. "--threads 1 --ui off" as run.sh's README line starts it).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-2}; PAIRS=${2:-9}
BIN=.build/release/cookie-proxy
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
command -v wrk >/dev/null && command -v nginx >/dev/null || { echo "needs wrk and nginx (apt-get install -y wrk nginx)" >&2; exit 1; }
T=$(mktemp -d)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  for p in "$T/nginx.pid" "$T/proxy/nginx.pid"; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
. bench/origin.sh
write_origin_conf "$T" "hello world hello world hello world hello world hello world hello world hello world hello\n"
port_free 18180 || exit 1
taskset -c 0 nginx -c "$T/nginx.conf" -p "$T"
mkdir -p "$T/proxy"
write_rewriting_proxy_conf "$T/proxy" 18182 daemon
taskset -c 0 nginx -c "$T/proxy/nginx.conf" -p "$T/proxy"
sleep 0.3
NGINX_WORKER=$(pgrep -P "$(cat "$T/proxy/nginx.pid")" | head -1)
port_free 18190 || exit 1
# shellcheck disable=SC2086  # PROXY_ARGS is a list of words
taskset -c 0 $BIN run --quiet --listen 127.0.0.1:18190 --rules bench/bench.rules --log none ${PROXY_ARGS:-} > /dev/null 2>&1 &
OURS=$!
wait_port 18190
echo 'wrk.path = "http://127.0.0.1:18180/"' > "$T/abs.lua"
# Both proxies get the absolute-form request of a forward proxy (nginx ignores the scheme and host).

run() {  # port pid conns extra-wrk-args... -> "req/s p99ms user_us sys_us"
  local port=$1 pid=$2 c=$3; shift 3
  taskset -c 1 wrk -t1 -c"$c" -d1s -s "$T/abs.lua" "$@" "http://127.0.0.1:$port" > /dev/null
  local before; before=$(awk '{print $14, $15}' /proc/"$pid"/stat)
  local out; out=$(taskset -c 1 wrk -t1 -c"$c" -d"${DUR}s" --latency -s "$T/abs.lua" "$@" "http://127.0.0.1:$port")
  local after; after=$(awk '{print $14, $15}' /proc/"$pid"/stat)
  local n; n=$(echo "$out" | awk '/requests in/ {print $1}')
  local p99; p99=$(echo "$out" | awk '/ 99%/ {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}')
  echo "$before $after" | awk -v n="$n" -v d="$DUR" -v p="$p99" '{printf "%.0f %.3f %.2f %.2f\n", n/d, p, ($3-$1)*10000/n, ($4-$2)*10000/n}'
}

echo "# cookie-proxy vs nginx, same rewriting, ${PAIRS} pairs × ${DUR}s (medians; ratios are medians of per-pair ratios)"
echo
echo "| load | nginx req/s | cookie-proxy req/s | ratio | middle half | nginx p99 ms | cookie-proxy p99 ms | nginx CPU µs/req (user+sys) | cookie-proxy CPU µs/req (user+sys) | CPU ratio | pairs ahead: req/s, p99, CPU |"
echo "|---|---:|---:|---:|---|---:|---:|---|---|---:|---|"
for load in ${LOADS:-ka:16 ka:64 new:16}; do
  IFS=: read -r kind c <<< "$load"
  extra=(); label="keep-alive c=$c"
  if [ "$kind" = new ]; then extra=(-H "Connection: close"); label="new connection c=$c"; fi
  : > "$T/n"; : > "$T/o"
  for _ in $(seq "$PAIRS"); do
    run 18182 "$NGINX_WORKER" "$c" "${extra[@]}" >> "$T/n"
    run 18190 "$OURS" "$c" "${extra[@]}" >> "$T/o"
  done
  col() { awk -v k="$2" '{print $k}' "$1" | median; }
  ratio() { paste "$T/o" "$T/n" | awk -v a="$1" -v b="$2" '{print $a / $b}' | median; }
  cpu_ratio=$(paste "$T/o" "$T/n" | awk '{print ($3 + $4) / ($7 + $8)}' | median)
  # How far the pairs agree: the middle half of the req/s ratios, and in how many pairs cookie-proxy had at least
  # nginx's req/s, at most its p99 and at most its CPU per request (a sign test: near half of them is a tie).
  middle=$(paste "$T/o" "$T/n" | awk '{print $1 / $5}' | sort -n |
    awk '{a[NR]=$1} END {printf "%.3f … %.3f", a[int((NR+3)/4)], a[int((3*NR+3)/4)]}')
  ahead=$(paste "$T/o" "$T/n" | awk '{r += $1 >= $5; p += $2 <= $6; c += $3 + $4 <= $7 + $8}
    END {printf "%d, %d, %d of %d", r, p, c, NR}')
  printf "| %s | %s | %s | %.3f | %s | %s | %s | %s + %s | %s + %s | %.3f | %s |\n" "$label" \
    "$(col "$T/n" 1)" "$(col "$T/o" 1)" "$(ratio 1 5)" "$middle" "$(col "$T/n" 2)" "$(col "$T/o" 2)" \
    "$(col "$T/n" 3)" "$(col "$T/n" 4)" "$(col "$T/o" 3)" "$(col "$T/o" 4)" "$cpu_ratio" "$ahead"
done
