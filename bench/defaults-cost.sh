#!/usr/bin/env bash
# What recording costs: cookie-proxy as `run` starts it (the inspector and the lifecycle recording every exchange,
# the transformation log in a file) against the same proxy recording nothing (`--log none --ui off --lifecycle off`),
# with the steps between (the inspector and the lifecycle alone; the inspector without the lifecycle, whose share is
# the difference; the access log alone, combined and json), beside
# nginx and HAProxy doing the same rewriting (bench/vs-peers.sh's). In rounds: each round runs every proxy seconds
# apart, and a ratio is the median of the per-round ratios (this machine's speed drifts between phases; a round sees
# one phase), with the middle half of them. Every cookie-proxy is one thread with bench/bench.rules, on CPU 0 with
# the origin; wrk on CPU 1. Only 127.0.0.1 is used; everything started is stopped; the log and access logs are
# emptied and synced before each measurement (a round writes about 100 MB of log). A second table gives each
# configuration's own CPU time per request, user and system.
# Usage: bench/defaults-cost.sh [seconds=2] [rounds=7]. Env: LOADS (default "ka:1 ka:16 ka:64"), BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-2}; ROUNDS=${2:-7}
BIN=${BIN:-.build/release/cookie-proxy}
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
command -v wrk >/dev/null && command -v nginx >/dev/null && command -v haproxy >/dev/null || {
  echo "needs wrk, nginx and haproxy (apt-get install -y wrk nginx haproxy)" >&2; exit 1; }
. bench/origin.sh
start_origin 18182 18184 18190 18191 18192 18193 18194 18195
write_rewriting_proxy_conf "$T/proxy" 18182 daemon
taskset -c 0 nginx -c "$T/proxy/nginx.conf" -p "$T/proxy"
write_haproxy_conf "$T" 18184
taskset -c 0 haproxy -q -f "$T/haproxy.cfg"
write_absolute_form_script
mkdir -p "$T/home"
NAMES=(bare recording defaults access-log access-log-json inspector)
CONFIGS=(
  "--log none --ui off --lifecycle off"
  "--log none --ui 127.0.0.1:0"
  "--log $T/log.jsonl --ui 127.0.0.1:0"
  "--log none --ui off --lifecycle off --access-log $T/access.log"
  "--log none --ui off --lifecycle off --access-log $T/access.jsonl --access-log-format json"
  "--log none --ui 127.0.0.1:0 --lifecycle off"
)
PIDS=()
for k in "${!NAMES[@]}"; do
  # shellcheck disable=SC2086  # a configuration is a list of words
  COOKIE_PROXY_HOME="$T/home" taskset -c 0 "$BIN" run --quiet --threads 1 --listen "127.0.0.1:$((18190 + k))" \
    --rules bench/bench.rules ${CONFIGS[$k]} > /dev/null 2>&1 &
  PIDS+=($!)
done
sleep 0.3
NGINX_WORKER=$(pgrep -P "$(cat "$T/proxy/nginx.pid")" | head -1)
HAPROXY=$(cat "$T/haproxy.pid")
for k in "${!NAMES[@]}"; do wait_port $((18190 + k)); done
wait_port 18184

echo "# What recording costs: cookie-proxy's configurations against its own bare one, beside nginx and HAProxy;"
echo "# ${ROUNDS} rounds × ${DUR}s, req/s medians; ratios are medians of per-round ratios (middle half in brackets)"
echo
echo "| load | req/s: nginx · HAProxy · bare · recording · defaults · access-log · access-log-json · inspector | recording / bare | inspector / bare | defaults / bare | access-log / bare | access-log-json / bare | bare / nginx | defaults / nginx |"
echo "|---|---|---|---|---|---|---|---|---|"
CPU_ROWS=""
for load in ${LOADS:-ka:1 ka:16 ka:64}; do
  IFS=: read -r kind c <<< "$load"
  extra=(); label="keep-alive c=$c"
  if [ "$kind" = new ]; then extra=(-H "Connection: close"); label="new connection c=$c"; fi
  : > "$T/nginx"; : > "$T/haproxy"
  for name in "${NAMES[@]}"; do : > "$T/$name"; done
  for _ in $(seq "$ROUNDS"); do
    wrk_round 18182 "$NGINX_WORKER" "$c" "${extra[@]}" >> "$T/nginx"
    wrk_round 18184 "$HAPROXY" "$c" "${extra[@]}" >> "$T/haproxy"
    for k in "${!NAMES[@]}"; do
      # Emptied and synced first: the last configuration's log (about 100 MB a round) is not written back to disk
      # while this one is measured.
      : > "$T/log.jsonl"; : > "$T/access.log"; : > "$T/access.jsonl"; sync
      wrk_round $((18190 + k)) "${PIDS[$k]}" "$c" "${extra[@]}" >> "$T/${NAMES[$k]}"
    done
  done
  col() { awk '{print $1}' "$T/$1" | median; }
  ratio() {
    paste "$T/$1" "$T/$2" | awk '{print $1 / $5}' | sort -n |
      awk '{a[NR]=$1} END {printf "%.3f (%.3f … %.3f)", a[int((NR+1)/2)], a[int((NR+3)/4)], a[int((3*NR+3)/4)]}'
  }
  printf "| %s | %s · %s · %s · %s · %s · %s · %s · %s | %s | %s | %s | %s | %s | %s | %s |\n" "$label" \
    "$(col nginx)" "$(col haproxy)" "$(col bare)" "$(col recording)" "$(col defaults)" "$(col access-log)" \
    "$(col access-log-json)" "$(col inspector)" "$(ratio recording bare)" "$(ratio inspector bare)" \
    "$(ratio defaults bare)" "$(ratio access-log bare)" \
    "$(ratio access-log-json bare)" "$(ratio bare nginx)" "$(ratio defaults nginx)"
  # Each configuration's own CPU per request (wrk_round's /proc figures): where the difference goes, user or kernel.
  cpu() { echo "$(awk '{print $3}' "$T/$1" | median) + $(awk '{print $4}' "$T/$1" | median)"; }
  CPU_ROWS+="| $label | $(cpu bare) | $(cpu recording) | $(cpu inspector) | $(cpu defaults) | $(cpu access-log) |"
  CPU_ROWS+=" $(cpu access-log-json) |"$'\n'
done
echo
echo "cookie-proxy's own CPU per request, user + system µs (medians of the rounds; the origin and the kernel's work"
echo "for the client are not in it):"
echo
echo "| load | bare | recording | inspector | defaults | access-log | access-log-json |"
echo "|---|---|---|---|---|---|---|"
printf "%s" "$CPU_ROWS"
