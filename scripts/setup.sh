#!/usr/bin/env bash
# Installs the Debian packages cookie-proxy needs, if any are missing: `scripts/setup.sh` for building and
# running (scripts/run.sh), `scripts/setup.sh --tests` for the test suite as well (scripts/test.sh). Safe to run
# again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
    libssl-dev            # OpenSSL: HTTPS interception, the local CA
    libcurl4-openssl-dev  # libcurl: `cookie-proxy audit`
    publicsuffix          # the Public Suffix List (/usr/share/publicsuffix)
    libnghttp2-dev        # nghttp2: HTTP/2 with clients (ALPN h2, h2c)
)
if [ "${1:-}" = "--tests" ]; then
    packages+=(
        openssl           # openssl s_server / s_client
        curl              # a real client through the proxy
        python3           # real upstream servers, the load generator, the browser differential
        chromium          # a real browser through the proxy, and the live cookie differential
        chromium-driver   # Selenium drives Chromium in the inspector's browser test
        python3-venv      # the tests' Python packages from PyPI, in .build/test-python
        libnss3-tools     # certutil: the CA in Chromium's NSS database
        tmux              # the terminal view on a real pseudo-terminal
        iproute2          # ip netns: a device on the LAN, in a network namespace
        squid             # a real upstream (corporate) proxy for --upstream-proxy
        nghttp2-client    # nghttp: a second real HTTP/2 client
        firefox-esr       # the live cookie differential against Firefox (WebDriver BiDi)
        webkit2gtk-driver # the live cookie differential against WebKitGTK (WebKitWebDriver, MiniBrowser)
        xvfb              # a display for WebKitGTK (xvfb-run)
        zsh               # the generated zsh completions, checked by zsh itself
        fish              # the generated fish completions, asked by fish itself
        groff-base        # the generated manual page, checked by groff
        prometheus        # a real Prometheus scrapes run --metrics; promtool checks the exposition
        goaccess          # reads run --access-log's combined log format
        jq                # reads back every line of the logs (a full disk tears none)
        procps            # pgrep/pkill: the audit's browsers found by their profile folder (left running? killed)
    )
fi

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
if [ "${1:-}" = "--tests" ]; then
    # From PyPI, in a virtual environment of the repository's own: Selenium (the inspector in a real browser),
    # jsonschema and haralyzer (HAR validated and read back), mcp (the official MCP SDK as the client), websockets
    # (a real WebSocket echo server behind the proxy), h2 (a raw HTTP/2 client for the refusals), hypercorn (an h2c
    # origin), grpcio (a real gRPC client and server), junitparser and sarif-tools (the JUnit and SARIF reports read
    # back).
    venv=.build/test-python
    if ! "$venv/bin/python" -c "import selenium, jsonschema, haralyzer, mcp, websockets, h2, hypercorn, grpc, junitparser, sarif" 2>/dev/null; then
        echo "setup: installing the tests' Python packages into $venv" >&2
        mkdir -p .build
        /usr/bin/python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check selenium jsonschema haralyzer mcp websockets h2 \
            hypercorn grpcio junitparser sarif-tools
    fi
fi
command -v swift >/dev/null || { echo "setup: Swift 6.3 is not on PATH (https://www.swift.org/install/linux/)" >&2; exit 1; }
