#!/usr/bin/env bash
# `cookie-proxy audit --har` on a generated HAR of N entries (default 100,000: about 200 MB), beside reading the
# same file with Python's json.load (a reader that holds the whole document): wall time, entries per second and
# peak resident memory (GNU time's maximum RSS). Each entry is a browser-like request (15 headers, a Cookie header
# on most) and response (two Set-Cookie lines on one in four). Usage: bench/har-audit.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
BIN=${BIN:-.build/release/cookie-proxy}
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install -y time" >&2; exit 2; }
command -v bc > /dev/null || { echo "needs bc: apt-get install -y bc" >&2; exit 2; }
[ -x "$BIN" ] || swift build -c release --product cookie-proxy >&2
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
python3 - "$N" "$T/big.har" <<'PY'
import json, sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write('{"log":{"version":"1.2","creator":{"name":"har-audit.sh","version":"1"},"pages":[],"entries":[')
    for i in range(n):
        host = "app%d.example.com" % (i % 7)
        req = [{"name": k, "value": v} for k, v in [
            ("Host", host), ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36"),
            ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"), ("Accept-Language", "en-US,en;q=0.9"),
            ("Accept-Encoding", "gzip, deflate, br"), ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "navigate"),
            ("Sec-Fetch-Dest", "document"), ("Referer", "https://%s/page/%d" % (host, i - 1)), ("Cache-Control", "no-cache"),
            ("Pragma", "no-cache"), ("Upgrade-Insecure-Requests", "1"), ("sec-ch-ua", '"Chromium";v="156"'),
            ("sec-ch-ua-platform", '"Linux"'), ("Connection", "keep-alive")]]
        if i % 10:
            req.append({"name": "Cookie", "value": "sid=s%d; theme=dark; _ga=GA1.2.%d" % (i % 7, i)})
        res = [{"name": "Content-Type", "value": "text/html; charset=utf-8"}, {"name": "Content-Length", "value": "5120"},
               {"name": "Cache-Control", "value": "private, max-age=0"}, {"name": "Date", "value": "Fri, 04 Dec 2026 10:00:00 GMT"}]
        if i % 4 == 0:
            res.append({"name": "Set-Cookie", "value": "sid=s%d; Path=/; Secure; HttpOnly; SameSite=Lax" % (i % 7)})
            res.append({"name": "Set-Cookie", "value": "theme=dark; Path=/; Max-Age=31536000"})
        e = {"startedDateTime": "2026-12-04T10:%02d:%02d.%03dZ" % (i // 60000 % 60, i // 1000 % 60, i % 1000), "time": 12,
             "request": {"method": "GET", "url": "https://%s/page/%d?q=%d" % (host, i, i), "httpVersion": "HTTP/2",
                         "cookies": [], "headers": req, "queryString": [], "headersSize": -1, "bodySize": 0},
             "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/2", "cookies": [], "headers": res,
                          "content": {"size": 5120, "mimeType": "text/html"}, "redirectURL": "", "headersSize": -1, "bodySize": 5120},
             "cache": {}, "timings": {"send": 0, "wait": 10, "receive": 2}}
        f.write(("," if i else "") + json.dumps(e))
    f.write("]}}")
PY
SIZE=$(stat -c %s "$T/big.har")
measure() {  # label, command...: prints label, seconds, entries/s, max RSS MiB
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$T/time" "$@" > /dev/null 2> "$T/err" || true
  read -r secs kb < <(tail -1 "$T/time")
  printf "| %s | %.2f s | %.0f | %.1f MiB |\n" "$label" "$secs" "$(echo "$N / $secs" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
}
echo "# audit --har: $N entries, $((SIZE / 1048576)) MiB"
echo
echo "| reader | wall | entries/s | peak RSS |"
echo "|---|---:|---:|---:|"
measure "cookie-proxy audit --har (json)" "$BIN" audit --har "$T/big.har" --format json
measure "cookie-proxy audit --har --rules rules/ (json)" "$BIN" audit --har "$T/big.har" --rules rules/ --format json
measure "python3 json.load (reads only)" python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/big.har"
