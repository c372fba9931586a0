#!/usr/bin/env bash
# Instructions per proxied request (valgrind --tool=callgrind), for rule files of different sizes: exact and
# repeatable on a noisy machine where req/s are not. Each configuration runs twice (N1 and N2 requests through
# `ab -k`, keep-alive); (I(N2) - I(N1)) / (N2 - N1) removes start-up and shut-down. Origin: nginx with 5 Set-Cookie
# headers on 127.0.0.1. Usage: bench/rules-instructions.sh [N1=500] [N2=2500]
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${1:-500}; N2=${2:-2500}
BIN=${BIN:-.build/release/cookie-proxy}
command -v valgrind >/dev/null && command -v ab >/dev/null && command -v nginx >/dev/null || {
  echo "needs valgrind, ab (apache2-utils) and nginx" >&2; exit 1; }
T=$(mktemp -d)
trap '[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null; rm -rf "$T"' EXIT
# Counting instructions needs no debug information, and valgrind 3.19's reader gives up on what Swift 6.3 writes
# for this binary ("possibly corrupted debuginfo"): a copy without it is measured.
cp "$BIN" "$T/cookie-proxy" && strip -g "$T/cookie-proxy" && BIN=$T/cookie-proxy
. bench/origin.sh
write_origin_conf "$T" "hello world\n"
port_free 18180 || exit 1
nginx -c "$T/nginx.conf" -p "$T"
run() {  # $1 = requests, rest = proxy args; prints instructions
  local n=$1; shift
  port_free 18191 || exit 1
  valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" $BIN run --quiet --threads 1 --listen 127.0.0.1:18191 "$@" \
    > /dev/null 2> "$T/vg.err" &
  local pid=$!
  wait_port 18191 20
  ab -q -k -n "$n" -c 4 -X 127.0.0.1:18191 http://127.0.0.1:18180/ > "$T/ab.out" 2>&1
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  grep -q "Failed requests:        0" "$T/ab.out" || { echo "ab reported failures" >&2; cat "$T/ab.out" >&2; }
  awk '/Collected/ {print $4}' "$T/vg.err" | tr -d ','
}
echo "# cookie-proxy: instructions per proxied request (callgrind; keep-alive; 5 Set-Cookie per response)"
echo
echo "| configuration | instructions / request | vs empty rules file |"
echo "|---|---:|---:|"
declare -A R
# The inspector is on by default: off everywhere but in the +ui configuration (recording, no browser attached).
for cfg in "empty-file:--rules bench/empty.rules --log none --ui off" \
           "48-nonmatching:--rules bench/bench48-nomatch.rules --log none --ui off" \
           "50-rules:--rules bench/bench50.rules --log none --ui off" "2-rewriting:--rules bench/bench.rules --log none --ui off" \
           "2-rewriting+log:--rules bench/bench.rules --log $T/log.jsonl --ui off" \
           "2-rewriting+ui:--rules bench/bench.rules --log none --ui 127.0.0.1:0"; do
  name=${cfg%%:*}; args=${cfg#*:}
  a=$(run "$N1" $args); b=$(run "$N2" $args)
  R[$name]=$(( (b - a) / (N2 - N1) ))
  base=${R[empty-file]}
  printf "| %s | %d | %+.1f%% |\n" "$name" "${R[$name]}" "$(echo "(${R[$name]} - $base) * 100 / $base" | bc -l)"
done
