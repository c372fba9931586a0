#!/usr/bin/env bash
# Instructions per proxied request (valgrind --tool=callgrind), for rule files of different sizes: exact and
# repeatable on a noisy machine where req/s are not. Each configuration runs twice (N1 and N2 requests through
# `ab -k`, keep-alive); (I(N2) - I(N1)) / (N2 - N1) removes start-up and shut-down. Origin: nginx with 5 Set-Cookie
# headers on 127.0.0.1. Usage: bench/rules-instructions.sh [N1=500] [N2=2500]
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${1:-500}; N2=${2:-2500}
. bench/origin.sh
callgrind_prepare
run() {  # $1 = requests, rest = proxy args; prints instructions
  local n=$1; shift
  callgrind_instructions "$n" -k 18191 TERM $BIN run --quiet --threads 1 --listen 127.0.0.1:18191 "$@"
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
