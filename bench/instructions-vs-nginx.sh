#!/usr/bin/env bash
# User-space instructions per proxied request (valgrind --tool=callgrind) of cookie-proxy with bench/bench.rules
# and of nginx doing the same rewriting (proxy_cookie_domain / proxy_cookie_flags, as in bench/peers.sh and
# bench/vs-nginx.sh), keep-alive and with a new connection per request: (I(N2) - I(N1)) / (N2 - N1) of two runs
# of ab, so start-up and shut-down cancel. nginx runs as one process (master_process off) so that callgrind sees
# its worker. Origin: nginx with 5 Set-Cookie headers on 127.0.0.1:18180. Usage: bench/instructions-vs-nginx.sh
# [N1=500] [N2=2500]
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${1:-500}; N2=${2:-2500}
. bench/origin.sh
callgrind_prepare
mkdir -p "$T/proxy"
write_rewriting_proxy_conf "$T/proxy" 18192 single
echo "# instructions per proxied request, cookie-proxy (bench.rules) and nginx (the same rewriting); callgrind"
echo
echo "| load | nginx | cookie-proxy | ratio |"
echo "|---|---:|---:|---:|"
ours=($BIN run --quiet --threads 1 --listen 127.0.0.1:18191 --rules bench/bench.rules --log none --ui off)
theirs=(nginx -c "$T/proxy/nginx.conf" -p "$T/proxy")
for load in "keep-alive:-k" "new connection per request:"; do
  label=${load%%:*}; k=${load#*:}
  # nginx stops gracefully on SIGQUIT, cookie-proxy on SIGTERM.
  n1=$(callgrind_instructions "$N1" "$k" 18192 QUIT "${theirs[@]}")
  n2=$(callgrind_instructions "$N2" "$k" 18192 QUIT "${theirs[@]}")
  o1=$(callgrind_instructions "$N1" "$k" 18191 TERM "${ours[@]}")
  o2=$(callgrind_instructions "$N2" "$k" 18191 TERM "${ours[@]}")
  n=$(( (n2 - n1) / (N2 - N1) )); o=$(( (o2 - o1) / (N2 - N1) ))
  printf "| %s | %d | %d | %.3f |\n" "$label" "$n" "$o" "$(echo "$o / $n" | bc -l)"
done
