#!/usr/bin/env bash
# User-space instructions per proxied request (valgrind --tool=callgrind) of cookie-proxy with bench/bench.rules
# and of nginx doing the same rewriting (proxy_cookie_domain / proxy_cookie_flags, as in ../shared/bench and
# bench/vs-nginx.sh), keep-alive and with a new connection per request: (I(N2) - I(N1)) / (N2 - N1) of two runs
# of ab, so start-up and shut-down cancel. nginx runs as one process (master_process off) so that callgrind sees
# its worker. Origin: nginx with 5 Set-Cookie headers on 127.0.0.1:18180. Usage: bench/instructions-vs-nginx.sh
# [N1=500] [N2=2500]
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${1:-500}; N2=${2:-2500}
BIN=${BIN:-.build/release/cookie-proxy}
command -v valgrind >/dev/null && command -v ab >/dev/null && command -v nginx >/dev/null || {
  echo "needs valgrind, ab (apache2-utils) and nginx" >&2; exit 1; }
T=$(mktemp -d)
trap '[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null; rm -rf "$T"' EXIT
# As in rules-instructions.sh: valgrind reads a copy without debug information.
cp "$BIN" "$T/cookie-proxy" && strip -g "$T/cookie-proxy" && BIN=$T/cookie-proxy
. bench/origin.sh
write_origin_conf "$T" "hello world\n"
port_free 18180 || exit 1
nginx -c "$T/nginx.conf" -p "$T"
mkdir -p "$T/proxy"
write_rewriting_proxy_conf "$T/proxy" 18192 single
run() {  # $1 = requests, $2 = -k or "", $3 = port, $4 = the signal that stops it, rest = the command
  local n=$1 k=$2 port=$3 stop=$4; shift 4
  port_free "$port" || exit 1
  valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" "$@" > /dev/null 2> "$T/vg.err" &
  local pid=$!
  wait_port "$port" 20
  # shellcheck disable=SC2086  # $k is one option or none
  ab -q $k -n "$n" -c 4 -X "127.0.0.1:$port" http://127.0.0.1:18180/ > "$T/ab.out" 2>&1
  kill -"$stop" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  grep -q "Failed requests:        0" "$T/ab.out" || { echo "ab reported failures" >&2; cat "$T/ab.out" >&2; }
  awk '/Collected/ {print $4}' "$T/vg.err" | tr -d ','
}
echo "# instructions per proxied request, cookie-proxy (bench.rules) and nginx (the same rewriting); callgrind"
echo
echo "| load | nginx | cookie-proxy | ratio |"
echo "|---|---:|---:|---:|"
ours=($BIN run --quiet --threads 1 --listen 127.0.0.1:18191 --rules bench/bench.rules --log none --ui off)
theirs=(nginx -c "$T/proxy/nginx.conf" -p "$T/proxy")
for load in "keep-alive:-k" "new connection per request:"; do
  label=${load%%:*}; k=${load#*:}
  # nginx stops gracefully on SIGQUIT, cookie-proxy on SIGTERM.
  n1=$(run "$N1" "$k" 18192 QUIT "${theirs[@]}"); n2=$(run "$N2" "$k" 18192 QUIT "${theirs[@]}")
  o1=$(run "$N1" "$k" 18191 TERM "${ours[@]}"); o2=$(run "$N2" "$k" 18191 TERM "${ours[@]}")
  n=$(( (n2 - n1) / (N2 - N1) )); o=$(( (o2 - o1) / (N2 - N1) ))
  printf "| %s | %d | %d | %.3f |\n" "$label" "$n" "$o" "$(echo "$o / $n" | bc -l)"
done
