#!/usr/bin/env bash
# Records the transcripts BrowserEnginesTests replays (Tests/BrowserEnginesTests/Transcripts/ENGINE.transcript) from
# the real browsers: Chromium, Firefox and WebKitGTK each run the replay's scenario against a local line server, are
# checked against the same table, and their drivers' messages are written. Run it when a driver or a browser
# changes; commit the transcripts it writes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
COOKIE_PROXY_RECORD_TRANSCRIPTS=1 swift test --filter TranscriptRecordingTests "$@"
