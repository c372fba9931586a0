#!/usr/bin/env bash
# The whole test suite: unit, conformance corpora and end-to-end tests through the built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
swift build --build-tests 2>&1 | tee .build-log.txt | grep -E "warning:|error:" && { echo "build has warnings or errors" >&2; exit 1; } || true
swift test --skip-build 2>&1
