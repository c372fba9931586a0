#!/usr/bin/env bash
# Instructions per proxied request (valgrind --tool=callgrind), for rule files of different sizes: exact and
# repeatable on a noisy machine where req/s are not. Each configuration runs twice (N1 and N2 requests through
# `ab -k`, keep-alive); (I(N2) - I(N1)) / (N2 - N1) removes start-up and shut-down. Origin: nginx with 5 Set-Cookie
# headers on 127.0.0.1. Usage: bench/rules-instructions.sh [N1=500] [N2=2500]
# With BASE=path/to/another/cookie-proxy (an earlier build), each row is measured for both binaries in the same
# run, and the table gives both and the change. ONLY=REGEX measures the rows whose name matches (the first row,
# the base of the "vs empty" column, is always measured).
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${1:-500}; N2=${2:-2500}
. bench/origin.sh
callgrind_prepare
if [ -n "${BASE:-}" ]; then cp "$BASE" "$T/base" && strip -g "$T/base" && BASE=$T/base; fi
run() {  # $1 = binary, $2 = requests, $3 = ab's options, rest = proxy args; prints instructions
  local bin=$1 n=$2 ab=$3; shift 3
  callgrind_instructions "$n" "$ab" 18191 TERM $bin run --quiet --threads 1 --listen 127.0.0.1:18191 "$@"
}
echo "# cookie-proxy: instructions per proxied request (callgrind; keep-alive; 5 Set-Cookie per response)"
echo
if [ -n "${BASE:-}" ]; then
  echo "| configuration | base | this build | change |"
  echo "|---|---:|---:|---:|"
else
  echo "| configuration | instructions / request | vs empty rules file |"
  echo "|---|---:|---:|"
fi
declare -A R
# The inspector is on by default: off everywhere but in the +ui configurations (recording, no browser attached).
# The lifecycle is on (the default) wherever the log or the inspector is, and off in the "-lifecycle" rows; ab
# sends no Cookie header (a client that keeps none: its responses wait unparsed) except in the "cookie-client" row,
# where every request carries one (the client is judged on every request and its jar fed every response). The
# "metrics" rows serve /metrics (never scraped during the run): what counting every exchange and line costs, with
# and without the log. The "access-log" rows append a line per request to a file (`--access-log`, combined and
# json). The "defaults" row is `run` as a user starts it, its log in a file: the inspector and the lifecycle on.
for cfg in "empty-file|-k|--rules bench/empty.rules --log none --ui off" \
           "48-nonmatching|-k|--rules bench/bench48-nomatch.rules --log none --ui off" \
           "50-rules|-k|--rules bench/bench50.rules --log none --ui off" \
           "2-rewriting|-k|--rules bench/bench.rules --log none --ui off" \
           "2-rewriting+log|-k|--rules bench/bench.rules --log $T/log.jsonl --ui off" \
           "2-rewriting+log-lifecycle|-k|--rules bench/bench.rules --log $T/log.jsonl --ui off --lifecycle off" \
           "2-rewriting+ui|-k|--rules bench/bench.rules --log none --ui 127.0.0.1:0" \
           "2-rewriting+ui-lifecycle|-k|--rules bench/bench.rules --log none --ui 127.0.0.1:0 --lifecycle off" \
           "2-rewriting+log,cookie-client|-k -C lang=en-US|--rules bench/bench.rules --log $T/log.jsonl --ui off" \
           "2-rewriting+log-lifecycle,cookie-client|-k -C lang=en-US|--rules bench/bench.rules --log $T/log.jsonl --ui off --lifecycle off" \
           "2-rewriting+access-log|-k|--rules bench/bench.rules --log none --ui off --access-log $T/access.log" \
           "2-rewriting+access-log-json|-k|--rules bench/bench.rules --log none --ui off --access-log $T/access.jsonl --access-log-format json" \
           "2-rewriting+defaults|-k|--rules bench/bench.rules --log $T/log.jsonl --ui 127.0.0.1:0" \
           "2-rewriting+metrics|-k|--rules bench/bench.rules --log none --ui off --metrics 127.0.0.1:0" \
           "2-rewriting+log,metrics|-k|--rules bench/bench.rules --log $T/log.jsonl --ui off --metrics 127.0.0.1:0"; do
  name=${cfg%%|*}; rest=${cfg#*|}; ab=${rest%%|*}; args=${rest#*|}
  [ "$name" != empty-file ] && [ -n "${ONLY:-}" ] && ! [[ $name =~ $ONLY ]] && continue
  a=$(run "$BIN" "$N1" "$ab" $args); b=$(run "$BIN" "$N2" "$ab" $args)
  R[$name]=$(( (b - a) / (N2 - N1) ))
  if [ -n "${BASE:-}" ]; then
    a=$(run "$BASE" "$N1" "$ab" $args); b=$(run "$BASE" "$N2" "$ab" $args)
    old=$(( (b - a) / (N2 - N1) ))
    printf "| %s | %d | %d | %+.1f%% |\n" "$name" "$old" "${R[$name]}" "$(echo "(${R[$name]} - $old) * 100 / $old" | bc -l)"
  else
    base=${R[empty-file]}
    printf "| %s | %d | %+.1f%% |\n" "$name" "${R[$name]}" "$(echo "(${R[$name]} - $base) * 100 / $base" | bc -l)"
  fi
done
