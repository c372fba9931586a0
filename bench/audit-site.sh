#!/usr/bin/env bash
# `audit --browser ENGINE` on a local 50-page shop (Tests/EndToEndTests/Fixtures/shop_site.py: a consent banner, a
# script that sets a cookie, a third-party iframe; https with a CA made here): pages per minute over the three
# consent states, and the peak resident memory of the audit (the proxy runs in it) and of the browser (all its
# processes, summed), sampled every 0.2 s. Everything listens on 127.0.0.1 and is stopped afterwards.
# Usage: bench/audit-site.sh [pages=50] [wait=10]. Env: BIN, ENGINE (chromium, firefox or webkit; default
# chromium), PARALLEL (--parallel: 1 visits the consent states one at a time; default the audit's own).
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-50}; WAIT=${2:-10}
BIN=${BIN:-.build/release/cookie-proxy}
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
ENGINE=${ENGINE:-chromium}
case $ENGINE in
  chromium) command -v chromium >/dev/null || { echo "needs chromium (apt-get install -y chromium)" >&2; exit 1; } ;;
  firefox) command -v firefox-esr >/dev/null || { echo "needs firefox-esr (apt-get install -y firefox-esr)" >&2; exit 1; } ;;
  webkit) command -v WebKitWebDriver >/dev/null && command -v xvfb-run >/dev/null || {
    echo "needs WebKitWebDriver and xvfb-run (apt-get install -y webkit2gtk-driver xvfb)" >&2; exit 1; } ;;
  *) echo "ENGINE is chromium, firefox or webkit" >&2; exit 1 ;;
esac
T=$(mktemp -d); SITE=""
trap 'kill $SITE 2>/dev/null || true; rm -rf "$T"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
  -subj "/CN=audit bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/leaf.key" -out "$T/leaf.csr" \
  -subj "/CN=shop.test" 2>/dev/null
printf "subjectAltName=DNS:shop.test,DNS:cdn.test,DNS:ads.test\n" > "$T/ext"
openssl x509 -req -in "$T/leaf.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -out "$T/leaf.pem" -days 2 \
  -extfile "$T/ext" 2>/dev/null
python3 -u Tests/EndToEndTests/Fixtures/shop_site.py "$T/leaf.pem" "$T/leaf.key" "$PAGES" > "$T/port" &
SITE=$!
for _ in $(seq 50); do grep -q PORT "$T/port" 2>/dev/null && break; sleep 0.1; done
PORT=$(awk '/PORT/ {print $2}' "$T/port")
start=$(date +%s.%N)
"$BIN" audit --browser "$ENGINE" --pages "$PAGES" --wait "$WAIT" --upstream-ca "$T/ca.pem" --format json \
  ${PARALLEL:+--parallel "$PARALLEL"} \
  --resolve shop.test:127.0.0.1 --resolve cdn.test:127.0.0.1 --resolve ads.test:127.0.0.1 \
  "https://shop.test:$PORT/" > "$T/report.json" 2> "$T/progress" &
AUDIT=$!
# The audit's own RSS and the sum over its descendants (the browser's own processes: renderers, GPU, network).
read -r peak_audit peak_browser < <(python3 bench/peak-rss.py "$AUDIT")
status=0; wait $AUDIT || status=$?
end=$(date +%s.%N)
visits=$(python3 -c "import json,sys; r=json.load(open('$T/report.json')); print(len(r['pages']))")
cookies=$(python3 -c "import json,sys; r=json.load(open('$T/report.json')); print(len(r['cookies']))")
awk -v n="$ENGINE" -v v="$visits" -v s="$start" -v e="$end" -v a="$peak_audit" -v b="$peak_browser" -v c="$cookies" -v x="$status" \
  'BEGIN { t = e - s; printf "| %s | %d page visits (3 consent states) | %.1f s | %.1f pages/min | audit + proxy peak RSS %.0f MiB | browser peak RSS %.0f MiB | %d cookies | exit %d |\n", n, v, t, v / t * 60, a / 1024, b / 1024, c, x }'
