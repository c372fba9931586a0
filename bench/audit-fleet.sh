#!/usr/bin/env bash
# `audit --browser ENGINE --urls` on a local fleet (Tests/EndToEndTests/Fixtures/fleet_sites.py: SITES https sites on
# one port, told apart by Host, three pages each; a CA made here): sites per minute and pages per minute over the
# fleet, and the peak resident memory of the audit (the proxy runs in it) and of its browsers, sampled every 0.2 s.
# Everything listens on 127.0.0.1 and is stopped afterwards.
# Usage: bench/audit-fleet.sh [sites=20] [consent=none]. Env: BIN, PARALLEL (--parallel; default its default), ENGINE
# (chromium, firefox or webkit; default
# chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
SITES=${1:-20}; CONSENT=${2:-none}
BIN=${BIN:-.build/release/cookie-proxy}
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
ENGINE=${ENGINE:-chromium}
T=$(mktemp -d); SERVER=""
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$T"' EXIT
names="alpha beta gamma delta epsilon"; for i in $(seq 6 "$SITES"); do names="$names site$i"; done
names=$(echo $names | cut -d' ' -f1-"$SITES")
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
  -subj "/CN=fleet bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/leaf.key" -out "$T/leaf.csr" \
  -subj "/CN=alpha.test" 2>/dev/null
echo "subjectAltName=$(for n in $names; do printf 'DNS:%s.test,' "$n"; done | sed 's/,$//')" > "$T/ext"
openssl x509 -req -in "$T/leaf.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -out "$T/leaf.pem" -days 2 \
  -extfile "$T/ext" 2>/dev/null
echo 1 > "$T/version"
python3 -u Tests/EndToEndTests/Fixtures/fleet_sites.py "$T/leaf.pem" "$T/leaf.key" "$T/version" "$SITES" > "$T/port" &
SERVER=$!
for _ in $(seq 50); do grep -q PORT "$T/port" 2>/dev/null && break; sleep 0.1; done
PORT=$(awk '/PORT/ {print $2}' "$T/port")
resolve=(); for n in $names; do echo "https://$n.test:$PORT/" >> "$T/sites.txt"; resolve+=(--resolve "$n.test:127.0.0.1"); done
start=$(date +%s.%N)
"$BIN" audit --browser "$ENGINE" --urls "$T/sites.txt" --consent "$CONSENT" --pages 3 --wait 10 \
  --upstream-ca "$T/ca.pem" "${resolve[@]}" ${PARALLEL:+--parallel "$PARALLEL"} --format json > "$T/fleet.json" \
  2> "$T/progress" &
AUDIT=$!
# The audit's own RSS and the sum over its descendants (its browsers' processes), in KiB.
read -r peak_audit peak_browser < <(python3 bench/peak-rss.py "$AUDIT")
set +e; wait "$AUDIT"; status=$?; set -e
end=$(date +%s.%N)
python3 - "$T/fleet.json" "$start" "$end" "$ENGINE" "$status" "$peak_audit" "$peak_browser" <<'PY'
import json, sys
fleet = json.load(open(sys.argv[1])); start, end = float(sys.argv[2]), float(sys.argv[3])
sites = fleet["sites"]; pages = sum(s["pages"]["visited"] for s in sites); secs = end - start
reached = sum(1 for s in sites if s["status"] != 2)
print("| %s | %d sites (%d audited), %d page visits | %.1f s | %.1f sites/min | %.1f pages/min | audit + proxy peak RSS %s MiB | browser peak RSS %s MiB | exit %s |"
      % (sys.argv[4], len(sites), reached, pages, secs, len(sites) * 60 / secs, pages * 60 / secs, int(sys.argv[6]) // 1024, int(sys.argv[7]) // 1024, sys.argv[5]))
PY
