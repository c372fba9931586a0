# Sourced by the bench scripts: the origin they share, nginx answering every request with the 5 Set-Cookie
# headers of bench/peers.sh (so figures compare with that harness), on 127.0.0.1:18180; and their helpers.

# wait_port PORT [SECONDS=5]: returns once something accepts connections on 127.0.0.1:PORT; fails after SECONDS.
wait_port() {
  local tries=$(( ${2:-5} * 20 ))
  for _ in $(seq "$tries"); do (echo > /dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}

# start_origin PORT...: a temporary directory $T for the run (at exit: everything started in the background stopped,
# the nginx and HAProxy instances whose pid files lie in $T or $T/proxy too, and $T removed), the shared origin
# (write_origin_conf, the benchmarks' body) started in it on CPU 0; fails when 18180 or one of the PORTs is taken.
start_origin() {
  T=$(mktemp -d)
  mkdir -p "$T/proxy"
  trap 'kill $(jobs -p) 2>/dev/null || true
    for p in "$T/nginx.pid" "$T/proxy/nginx.pid" "$T/haproxy.pid"; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
    rm -rf "$T"' EXIT
  write_origin_conf "$T" "hello world hello world hello world hello world hello world hello world hello world hello\n"
  for port in 18180 "$@"; do port_free "$port" || exit 1; done
  taskset -c 0 nginx -c "$T/nginx.conf" -p "$T"
}

# port_free PORT: fails (with a message) when something already accepts connections on 127.0.0.1:PORT: a process
# left from an earlier run would otherwise be measured in place of the one about to start there.
port_free() {
  if (echo > /dev/tcp/127.0.0.1/"$1") 2>/dev/null; then
    echo "127.0.0.1:$1 is already in use (a process left from an earlier run?); stop it first" >&2
    return 1
  fi
}

# median: the middle value of the numbers on standard input (separated by spaces or lines).
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# write_origin_conf DIR BODY: writes DIR/nginx.conf (pid in DIR/nginx.pid, errors in DIR/err).
write_origin_conf() {
  local dir=$1 body=$2
  cat > "$dir/nginx.conf" <<NGINX
worker_processes 1; daemon on; pid $dir/nginx.pid; error_log $dir/err;
events { worker_connections 4096; }
http { access_log off;
  server { listen 127.0.0.1:18180; keepalive_requests 1000000;
    location / {
      add_header Set-Cookie "sid=abc123; Domain=example.test; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly";
      add_header Set-Cookie "pref=dark; Domain=example.test; Path=/app; Max-Age=3600";
      add_header Set-Cookie "track=xyz; Expires=Thu, 01 Jan 2037 00:00:00 GMT; Path=/; Domain=Example.Test; SameSite=None; Secure";
      add_header Set-Cookie "lang=en-US; Path=/";
      add_header Set-Cookie "csrf=tok%3D%3D; Domain=sub.example.test; Path=/; Secure; SameSite=Strict";
      return 200 "$body";
    } } }
NGINX
}

# write_rewriting_proxy_conf DIR PORT PROCESS: DIR/nginx.conf for nginx as the forward proxy of bench/peers.sh in
# front of the origin, with its cookie rewriting (proxy_cookie_domain / proxy_cookie_flags: what bench/bench.rules
# does), listening on 127.0.0.1:PORT. PROCESS: "daemon" (a master and one worker, in the background) or "single"
# (one process in the foreground, for callgrind).
write_rewriting_proxy_conf() {
  local dir=$1 port=$2 process=$3 mode="daemon on;"
  [ "$process" = single ] && mode="daemon off; master_process off;"
  cat > "$dir/nginx.conf" <<NGINX
worker_processes 1; $mode pid $dir/nginx.pid; error_log $dir/err;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 10000000; keepalive_timeout 120s;
  client_body_temp_path $dir/b; proxy_temp_path $dir/p; fastcgi_temp_path $dir/f;
  uwsgi_temp_path $dir/u; scgi_temp_path $dir/s;
  upstream origin { server 127.0.0.1:18180; keepalive 128; keepalive_requests 10000000; }
  server { listen 127.0.0.1:$port backlog=4096;
    location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host \$http_host;
      proxy_cookie_domain ~^example\.test\$ .example.test; proxy_cookie_flags ~ secure httponly samesite=lax; } } }
NGINX
}

# write_haproxy_conf DIR PORT: DIR/haproxy.cfg for HAProxy as the same forward proxy in front of the origin, one
# thread, with the same rewriting through `http-response replace-header Set-Cookie` (Domain=example.test in any
# case → .example.test; Secure, HttpOnly and SameSite=Lax on every cookie: the ones it has are taken out and the
# three appended, so the attributes come out in another order than nginx's and cookie-proxy's, meaning the same).
write_haproxy_conf() {
  local dir=$1 port=$2
  cat > "$dir/haproxy.cfg" <<HAPROXY
global
  nbthread 1
  maxconn 9000
  pidfile $dir/haproxy.pid
  daemon
defaults
  mode http
  timeout connect 5s
  timeout client 120s
  timeout server 120s
  timeout http-keep-alive 120s
  option http-keep-alive
  http-reuse always
frontend fe
  bind 127.0.0.1:$port
  default_backend origin
backend origin
  server origin 127.0.0.1:18180
  http-response replace-header Set-Cookie (?i)^(.*;\s*Domain=)example\.test(\s*(;.*)?)\$ \1.example.test\2
  http-response replace-header Set-Cookie (?i)^(.*?)\s*;\s*SameSite=[^;]*(.*)\$ \1\2
  http-response replace-header Set-Cookie (?i)^(.*?)\s*;\s*Secure\s*(;.*)?\$ \1\2
  http-response replace-header Set-Cookie (?i)^(.*?)\s*;\s*HttpOnly\s*(;.*)?\$ \1\2
  http-response replace-header Set-Cookie ^(.*)\$ "\1; Secure; HttpOnly; SameSite=Lax"
HAPROXY
}

# For the callgrind scripts (rules-instructions.sh, instructions-vs-nginx.sh). callgrind_prepare: makes their
# temporary directory T (removed, and the origin stopped, at exit), checks for the tools, points BIN (by default
# the release build) at a copy without debug information (counting instructions needs none, and valgrind 3.19's
# reader gives up on what Swift 6.3 writes for this binary: "possibly corrupted debuginfo"), and starts the origin.
callgrind_prepare() {
  BIN=${BIN:-.build/release/cookie-proxy}
  T=$(mktemp -d)
  trap '[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null; rm -rf "$T"' EXIT
  command -v valgrind >/dev/null && command -v ab >/dev/null && command -v nginx >/dev/null || {
    echo "needs valgrind, ab (apache2-utils) and nginx" >&2; exit 1; }
  cp "$BIN" "$T/cookie-proxy" && strip -g "$T/cookie-proxy" && BIN=$T/cookie-proxy
  write_origin_conf "$T" "hello world\n"
  port_free 18180 || exit 1
  nginx -c "$T/nginx.conf" -p "$T"
}

# callgrind_instructions REQUESTS KEEPALIVE PORT SIGNAL COMMAND...: runs COMMAND (a proxy listening on
# 127.0.0.1:PORT) under callgrind, sends it REQUESTS through ab (KEEPALIVE: -k, or "" for a new connection per
# request), stops it with SIGNAL and prints the instructions it executed.
callgrind_instructions() {
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

# h2_measure PID CONNS URL...: h2load (on CPU 1, c CONNS × 10 streams, the URLs in turn) for DUR seconds after a
# second of warm-up; prints "req/s p99ms cpu_us" (p99 from h2load's per-request log, CPU the process PID's own user
# + system time per request, from /proc). Every answer must be a 2xx: a proxy that refused the requests would look
# fast. H2_MUST_SPEAK=h2 also requires h2 by ALPN. Needs T and DUR.
h2_measure() {
  local pid=$1 c=$2; shift 2
  taskset -c 1 h2load -c "$c" -m 10 -D 1 "$@" > /dev/null 2>&1
  local before; before=$(awk '{print $14 + $15}' /proc/"$pid"/stat)
  local out; out=$(taskset -c 1 h2load -c "$c" -m 10 -D "$DUR" --log-file="$T/times" "$@" 2>&1)
  local after; after=$(awk '{print $14 + $15}' /proc/"$pid"/stat)
  if [ -n "${H2_MUST_SPEAK:-}" ] && ! echo "$out" | grep -q "Application protocol: $H2_MUST_SPEAK"; then
    echo "$1 did not speak $H2_MUST_SPEAK: $out" >&2; exit 1
  fi
  local bad; bad=$(echo "$out" | awk '/^status codes:/ {print $5 + $7 + $9} /^requests:/ {print $10 + $12}' | paste -sd+ | bc)
  local n; n=$(echo "$out" | awk '/^requests:/ {print $8}')
  if [ "${bad:-1}" -ne 0 ] || [ "${n:-0}" -eq 0 ]; then echo "$1: $out" >&2; exit 1; fi
  local p99; p99=$(awk '{print $3}' "$T/times" | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int(NR*0.99)]/1000}')
  echo "$n $p99 $before $after" | awk -v d="$DUR" '{printf "%.0f %s %.2f\n", $1/d, $2, ($4-$3)*10000/$1}'
}

# Over h2_measure's lines, one per round ("req/s p99ms cpu_us"): round_col FILE K, the median of column K;
# round_ratio OURS OTHER, cookie-proxy's req/s over the other's, the median of the per-round ratios with the middle
# half in brackets; round_cpu_ratio OURS OTHER, the same for CPU per request (the median); h2_row C OTHER OURS, a
# table row of them for C connections (req/s, ratio, p99, CPU, CPU ratio), ending in "|" so columns can follow.
round_col() { awk -v k="$2" '{print $k}' "$1" | median; }
round_ratio() {
  paste "$1" "$2" | awk '{print $1 / $4}' | sort -n |
    awk '{a[NR]=$1} END {printf "%.3f (%.3f … %.3f)", a[int((NR+1)/2)], a[int((NR+3)/4)], a[int((3*NR+3)/4)]}'
}
round_cpu_ratio() { paste "$1" "$2" | awk '{print $3 / $6}' | median; }
h2_row() {
  printf "| %s | %s · %s | %s | %s · %s | %s · %s | %.3f |" "$1" "$(round_col "$2" 1)" "$(round_col "$3" 1)" \
    "$(round_ratio "$3" "$2")" "$(round_col "$2" 2)" "$(round_col "$3" 2)" "$(round_col "$2" 3)" \
    "$(round_col "$3" 3)" "$(round_cpu_ratio "$3" "$2")"
}

# write_absolute_form_script: $T/abs.lua, which makes wrk send every proxy the absolute-form request of a forward
# proxy, its Host the URL's authority (HAProxy refuses a request whose Host names another: wrk's default would be the
# proxy's own address).
write_absolute_form_script() {
  printf '%s\n' 'wrk.path = "http://127.0.0.1:18180/"' 'wrk.headers["Host"] = "127.0.0.1:18180"' > "$T/abs.lua"
}

# wrk_round PORT PID CONNS [WRK-ARGS...]: one measurement of the proxy on PORT (process PID) through $T/abs.lua: a
# second's warm-up, then $DUR seconds; prints "req/s p99ms user_us sys_us" (the CPU per request from /proc).
wrk_round() {
  local port=$1 pid=$2 c=$3; shift 3
  taskset -c 1 wrk -t1 -c"$c" -d1s -s "$T/abs.lua" "$@" "http://127.0.0.1:$port" > /dev/null
  local before; before=$(awk '{print $14, $15}' /proc/"$pid"/stat)
  local out; out=$(taskset -c 1 wrk -t1 -c"$c" -d"${DUR}s" --latency -s "$T/abs.lua" "$@" "http://127.0.0.1:$port")
  local after; after=$(awk '{print $14, $15}' /proc/"$pid"/stat)
  local n; n=$(echo "$out" | awk '/requests in/ {print $1}')
  # Every answer must be the origin's 200: a proxy that refuses the requests would look fast.
  if echo "$out" | grep -q "Non-2xx"; then echo "127.0.0.1:$port answered non-2xx: $out" >&2; exit 1; fi
  local p99; p99=$(echo "$out" | awk '/ 99%/ {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}')
  echo "$before $after" | awk -v n="$n" -v d="$DUR" -v p="$p99" '{printf "%.0f %.3f %.2f %.2f\n", n/d, p, ($3-$1)*10000/n, ($4-$2)*10000/n}'
}

