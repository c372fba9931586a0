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
run() {  # $1 = requests, $2 = ab's options, rest = proxy args; prints instructions
  local n=$1 ab=$2; shift 2
  callgrind_instructions "$n" "$ab" 18191 TERM $BIN run --quiet --threads 1 --listen 127.0.0.1:18191 "$@"
}
echo "# cookie-proxy: instructions per proxied request (callgrind; keep-alive; 5 Set-Cookie per response)"
echo
echo "| configuration | instructions / request | vs empty rules file |"
echo "|---|---:|---:|"
declare -A R
# The inspector is on by default: off everywhere but in the +ui configurations (recording, no browser attached).
# The lifecycle is on (the default) wherever the log or the inspector is, and off in the "-lifecycle" rows; ab
# sends no Cookie header (a client that keeps none: its responses wait unparsed) except in the "cookie-client" row,
# where every request carries one (the client is judged on every request and its jar fed every response).
for cfg in "empty-file|-k|--rules bench/empty.rules --log none --ui off" \
           "48-nonmatching|-k|--rules bench/bench48-nomatch.rules --log none --ui off" \
           "50-rules|-k|--rules bench/bench50.rules --log none --ui off" \
           "2-rewriting|-k|--rules bench/bench.rules --log none --ui off" \
           "2-rewriting+log|-k|--rules bench/bench.rules --log $T/log.jsonl --ui off" \
           "2-rewriting+log-lifecycle|-k|--rules bench/bench.rules --log $T/log.jsonl --ui off --lifecycle off" \
           "2-rewriting+ui|-k|--rules bench/bench.rules --log none --ui 127.0.0.1:0" \
           "2-rewriting+ui-lifecycle|-k|--rules bench/bench.rules --log none --ui 127.0.0.1:0 --lifecycle off" \
           "2-rewriting+log,cookie-client|-k -C lang=en-US|--rules bench/bench.rules --log $T/log.jsonl --ui off" \
           "2-rewriting+log-lifecycle,cookie-client|-k -C lang=en-US|--rules bench/bench.rules --log $T/log.jsonl --ui off --lifecycle off"; do
  name=${cfg%%|*}; rest=${cfg#*|}; ab=${rest%%|*}; args=${rest#*|}
  a=$(run "$N1" "$ab" $args); b=$(run "$N2" "$ab" $args)
  R[$name]=$(( (b - a) / (N2 - N1) ))
  base=${R[empty-file]}
  printf "| %s | %d | %+.1f%% |\n" "$name" "${R[$name]}" "$(echo "(${R[$name]} - $base) * 100 / $base" | bc -l)"
done
