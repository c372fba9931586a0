#!/usr/bin/env bash
# Builds cookie-proxy (release) and runs the proxy on 127.0.0.1:8080 with the example rules in rules/.
# Extra arguments replace the defaults and go to cookie-proxy, e.g. scripts/run.sh parse 'a=b; Domain=x.com'.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product cookie-proxy >&2
if [ $# -gt 0 ]; then exec .build/release/cookie-proxy "$@"; fi
exec .build/release/cookie-proxy run --listen 127.0.0.1:8080 --rules rules/
