#!/usr/bin/env bash
# The whole test suite: unit, conformance corpora and end-to-end tests through the built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
swift build --build-tests 2>&1 | tee .build-log.txt | grep -E "warning:|error:" && { echo "build has warnings or errors" >&2; exit 1; } || true
# Every wait in the tests has a deadline; should one still hang, the run stops after LIMIT seconds (default: 30
# minutes, several times what a whole run takes, docs/architecture.md) and prints the processes it was waiting on,
# instead of holding CI to its own limit.
limit=${COOKIE_PROXY_TEST_LIMIT:-1800}
fired=$(mktemp)
trap 'rm -f "$fired"' EXIT
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
swift test --skip-build "$@" 2>&1 &
tests=$!
(
    # Polls once a second, so that it ends by itself with the tests (no sleeping child keeps CI's output open).
    for ((waited = 0; waited < limit; waited++)); do
        sleep 1
        kill -0 "$tests" 2>/dev/null || exit 0
    done
    echo fired > "$fired"
    echo "test run still going after $limit s; stopped. Its processes:" >&2
    pids=$(descendants "$tests" | paste -sd, -)
    [ -n "$pids" ] && ps -o pid,ppid,stat,etime,args -p "$pids" | cut -c1-240 >&2
    [ -n "$pids" ] && kill -KILL ${pids//,/ } 2>/dev/null
    kill -KILL "$tests" 2>/dev/null || true
) &
watchdog=$!
status=0
wait "$tests" || status=$?
wait "$watchdog" || true
[ -s "$fired" ] && exit 1
exit "$status"
