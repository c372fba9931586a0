#!/usr/bin/env bash
# The cost of rules and of the log on proxy throughput, in one run, interleaved, medians side by side:
# cookie-proxy with no rules file, an empty rules file, 48 rules that do not match the traffic, those 48 plus
# the two rules that rewrite every cookie (bench50.rules), the two alone (bench.rules), and bench.rules with
# the transformation log on; ONLY can add the inspector's configurations (2-rewriting+ui, audit+ui: the
# inspector recording, no browser attached; 2-rewriting+ui+watching: a client on its live event stream). Origin: nginx answering with 5 Set-Cookie headers (as bench/peers.sh).
# wrk on CPU 1; origin and proxy share CPU 0. Only 127.0.0.1 is used; everything started is stopped.
# Besides req/s it reports the proxy process's CPU time per request, steadier on this noisy machine. Each figure
# against the empty file is the median, over repetitions, of the ratio within one repetition.
# Usage: bench/rules-cost.sh [seconds-per-run=3] [repetitions=5] [connections=16]
#   ONLY="empty-file 50-rules" limits the configurations (empty-file, the reference, must be among them).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-3}; REPS=${2:-5}; CONNS=${3:-16}
BIN=.build/release/cookie-proxy
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
command -v wrk >/dev/null && command -v nginx >/dev/null || { echo "needs wrk and nginx (apt-get install -y wrk nginx)" >&2; exit 1; }
. bench/origin.sh
start_origin
echo 'wrk.path = "http://127.0.0.1:18180/"' > "$T/abs.lua"
# The inspector is on by default; every configuration but the +ui ones turns it off, so that each measures one thing.
declare -A ARGS=(
  [no-rules]="--log none --ui off"
  [empty-file]="--rules bench/empty.rules --log none --ui off"
  [48-nonmatching]="--rules bench/bench48-nomatch.rules --log none --ui off"
  [50-rules]="--rules bench/bench50.rules --log none --ui off"
  [2-rewriting]="--rules bench/bench.rules --log none --ui off"
  [2-rewriting+log]="--rules bench/bench.rules --log $T/log.jsonl --ui off"
  [2-rewriting+ui]="--rules bench/bench.rules --log none --ui 127.0.0.1:0"
  [2-rewriting+ui+watching]="--rules bench/bench.rules --log none --ui 127.0.0.1:18199"
  [audit]="--rules rules/audit.rules --log none --ui off"
  [audit+log]="--rules rules/audit.rules --log $T/audit.jsonl --ui off"
  [audit+ui]="--rules rules/audit.rules --log none --ui 127.0.0.1:0"
)
ORDER=(${ONLY:-no-rules empty-file 48-nonmatching 50-rules 2-rewriting 2-rewriting+log})
declare -A RESULTS CPU RECORDS
for rep in $(seq "$REPS"); do
  for name in "${ORDER[@]}"; do
    rm -f "$T/log.jsonl" "$T/audit.jsonl"  # a log file per run: the disk holds what one run writes
    port_free 18190 || exit 1
    taskset -c 0 $BIN run --quiet --threads 1 --listen 127.0.0.1:18190 ${ARGS[$name]} > /dev/null 2>&1 &
    pid=$!
    wait_port 18190
    watcher=""
    if [[ $name == *+watching ]]; then
      # A browser's live list, played by curl on the event stream (the token from the configuration folder).
      wait_port 18199
      token=$(od -An -tx1 -N16 "${COOKIE_PROXY_HOME:-${XDG_CONFIG_HOME:-$HOME/.config}/cookie-proxy}/inspector-token" | tr -d ' \n')
      taskset -c 1 curl -sN -H "Authorization: Bearer $token" http://127.0.0.1:18199/api/events > /dev/null &
      watcher=$!
    fi
    taskset -c 1 wrk -t1 -c"$CONNS" -d1s -s "$T/abs.lua" http://127.0.0.1:18190 > /dev/null  # warm-up
    logfile=""
    [[ $name == *+log ]] && { logfile=$T/log.jsonl; [[ $name == audit* ]] && logfile=$T/audit.jsonl; }
    lines0=0; [ -n "$logfile" ] && lines0=$(cat "$logfile" 2>/dev/null | wc -l)
    before=$(awk '{print $14 + $15}' /proc/$pid/stat)
    out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${DUR}s" -s "$T/abs.lua" http://127.0.0.1:18190)
    after=$(awk '{print $14 + $15}' /proc/$pid/stat)
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    n=$(echo "$out" | awk '/requests in/ {print $1}')
    # The proxy's own CPU time (user + system, clock ticks of 10 ms) per request, in µs.
    cpu=$(echo "($after - $before) * 10000 / $n" | bc -l)
    [ -n "$watcher" ] && { kill "$watcher"; wait "$watcher" 2>/dev/null || true; }
    kill "$pid"; wait "$pid" 2>/dev/null || true
    RESULTS[$name]="${RESULTS[$name]:-} $rps"
    CPU[$name]="${CPU[$name]:-} $cpu"
    # Records per request in the measured run (the file's lines once the proxy has written them all at exit).
    [ -n "$logfile" ] && RECORDS[$name]="${RECORDS[$name]:-} $(echo "($(wc -l < "$logfile") - $lines0) / $n" | bc -l)"
    printf "rep %s %s %s req/s %.1f us/req\n" "$rep" "$name" "$rps" "$cpu" >&2
  done
done
# The middle half of the values (first and third quartile, nearest rank): how far the pairs agree.
quartiles() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {q1=int((NR+3)/4); q3=int((3*NR+3)/4); printf "%+.1f%% … %+.1f%%", (a[q1]-1)*100, (a[q3]-1)*100}'; }
# Per repetition, each configuration against the empty file measured in the same repetition (seconds apart):
# this machine's speed drifts by 2x between phases, which a ratio of two medians taken minutes apart absorbs
# badly and a median of paired ratios does not.
ratios() {  # $1 = name, $2 = array name (RESULTS or CPU): the per-repetition ratios to empty-file
  local -n arr=$2
  paste <(echo ${arr[$1]} | tr ' ' '\n') <(echo ${arr[empty-file]} | tr ' ' '\n') | awk '{printf "%f\n", $1 / $2}'
}
echo "# cookie-proxy: the cost of rules and of the log (keep-alive, c=$CONNS, ${REPS}×${DUR}s interleaved, median req/s)"
echo
echo "Proxy CPU = the proxy process's user + system time per request (the origin's is not in it)."
echo
echo "| configuration | req/s (median) | all runs | vs empty: median of paired ratios | middle half | proxy CPU µs/req (median) | vs empty: median of paired ratios | middle half |"
echo "|---|---:|---|---:|---|---:|---:|---|"
for name in "${ORDER[@]}"; do
  m=$(echo ${RESULTS[$name]} | median)
  c=$(echo ${CPU[$name]} | median)
  rr=$(ratios "$name" RESULTS | median)
  cr=$(ratios "$name" CPU | median)
  printf "| %s | %.0f | %s | %+.1f%% | %s | %.1f | %+.1f%% | %s |\n" "$name" "$m" "$(echo ${RESULTS[$name]} | tr ' ' ',')" \
    "$(echo "($rr - 1) * 100" | bc -l)" "$(ratios "$name" RESULTS | quartiles)" "$c" "$(echo "($cr - 1) * 100" | bc -l)" \
    "$(ratios "$name" CPU | quartiles)"
done

# The log's own cost: each configuration with the log against the same rules without it, paired per repetition.
paired() {  # $1 = with log, $2 = without, $3 = RESULTS or CPU
  local -a a b; eval "a=(\${$3[$1]})"; eval "b=(\${$3[$2]})"
  for i in "${!a[@]}"; do echo "${a[$i]} / ${b[$i]}" | bc -l; done
}
header=0
for name in "${ORDER[@]}"; do
  base=${name%+log}
  [ "$base" != "$name" ] && [ -n "${RESULTS[$base]:-}" ] || continue
  if [ $header = 0 ]; then
    echo; echo "| with the log | req/s vs the same rules without it (median of paired ratios) | middle half | proxy CPU per request, difference of medians | records per request | proxy CPU per record (median of paired differences) | middle half |"
    echo "|---|---:|---|---:|---:|---:|---|"; header=1
  fi
  r=$(paired "$name" "$base" RESULTS | median)
  d=$(echo "$(echo ${CPU[$name]} | median) - $(echo ${CPU[$base]} | median)" | bc -l)
  # Per repetition: (CPU with the log − CPU without, both per request) / records per request of the log run.
  per=$(paste <(echo ${CPU[$name]} | tr ' ' '\n') <(echo ${CPU[$base]} | tr ' ' '\n') <(echo ${RECORDS[$name]} | tr ' ' '\n') |
    awk '$3 > 0 {printf "%f\n", ($1 - $2) / $3}')
  printf "| %s | %.3f× | %s | +%.1f µs | %.2f | %.2f µs | %s |\n" "$name" "$r" "$(paired "$name" "$base" RESULTS | quartiles)" "$d" \
    "$(echo ${RECORDS[$name]} | median)" "$(echo "$per" | median)" \
    "$(echo "$per" | sort -n | awk '{a[NR]=$1} END {q1=int((NR+3)/4); q3=int((3*NR+3)/4); printf "%.2f … %.2f µs", a[q1], a[q3]}')"
done
