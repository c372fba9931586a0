#!/usr/bin/env bash
# Builds cookie-proxy (release) and runs it with the example rules in rules/.
# Extra arguments go to cookie-proxy, e.g. scripts/run.sh parse 'a=b; Domain=example.com'.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product cookie-proxy >&2
if [ $# -gt 0 ]; then exec .build/release/cookie-proxy "$@"; fi
exec .build/release/cookie-proxy parse --format text --url https://bin.example.com/login \
    'Set-Cookie: Bin-Auth-Token=7f3c9a; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly'
