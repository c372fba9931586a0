#!/usr/bin/env bash
# Instructions per HTTP/2 request (valgrind --tool=callgrind): h2load speaks h2c with prior knowledge (1 connection,
# 10 streams) to cookie-proxy in reverse mode (bench/bench.rules) in front of the nginx origin of bench/origin.sh,
# N1 and N2 requests; (I(N2) - I(N1)) / (N2 - N1) removes start-up and shut-down. Exact and repeatable where
# req/s are not. With BASE=path/to/another/cookie-proxy (an earlier build) both are measured in the same run.
# Usage: bench/h2-instructions.sh [N1=500] [N2=2500]
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${1:-500}; N2=${2:-2500}
command -v h2load >/dev/null || { echo "needs h2load (apt-get install -y nghttp2-client)" >&2; exit 1; }
. bench/origin.sh
callgrind_prepare
if [ -n "${BASE:-}" ]; then cp "$BASE" "$T/base" && strip -g "$T/base"; fi
measure() {  # binary, requests -> instructions
  local bin=$1 n=$2
  port_free 18191 || exit 1
  valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" "$bin" run --quiet --threads 1 \
    --listen 127.0.0.1:18191 --reverse http://127.0.0.1:18180 --rules bench/bench.rules --log none --ui off \
    > /dev/null 2> "$T/vg.err" &
  local pid=$!
  wait_port 18191 30
  h2load -c 1 -m 10 -n "$n" http://127.0.0.1:18191/ > "$T/h2.out" 2>&1
  grep -q "$n succeeded" "$T/h2.out" || { echo "h2load failed:" >&2; cat "$T/h2.out" >&2; exit 1; }
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  awk '/Collected/ {print $4}' "$T/vg.err" | tr -d ','
}
per_request() { echo $(( ($(measure "$1" "$N2") - $(measure "$1" "$N1")) / (N2 - N1) )); }
echo "# cookie-proxy: instructions per HTTP/2 request (callgrind; h2c, 1 connection × 10 streams; --reverse, bench.rules)"
echo
new=$(per_request "$BIN")
if [ -n "${BASE:-}" ]; then
  base=$(per_request "$T/base")
  echo "| base | this build | change |"
  echo "|---:|---:|---:|"
  awk -v b="$base" -v n="$new" 'BEGIN { printf "| %d | %d | %+.1f%% |\n", b, n, (n - b) * 100 / b }'
else
  echo "| instructions / request |"
  echo "|---:|"
  echo "| $new |"
fi
