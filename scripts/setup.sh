#!/usr/bin/env bash
# Installs the Debian packages cookie-proxy needs to build, run and test, if any are missing.
# Used by scripts/run.sh and scripts/test.sh; safe to run again.
set -euo pipefail

packages=(
    libssl-dev            # OpenSSL: HTTPS interception, the local CA
    libcurl4-openssl-dev  # libcurl: `cookie-proxy audit`
    publicsuffix          # the Public Suffix List (/usr/share/publicsuffix)
    openssl               # tests: openssl s_server / s_client
    curl                  # tests: a real client through the proxy
    python3               # tests: a real upstream server
)
packages+=(chromium libnss3-tools)  # tests: a real browser through the proxy
packages+=(tmux)                    # tests: the terminal view on a real pseudo-terminal

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "setup: Swift 6.3 is not on PATH (https://www.swift.org/install/linux/)" >&2; exit 1; }
