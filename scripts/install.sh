#!/usr/bin/env bash
# Builds cookie-proxy (release) and installs it under PREFIX (default /usr/local): the binary in PREFIX/bin, the
# example rules and the cookie conformance corpora in PREFIX/share/cookie-proxy (where `cookie-proxy conformance`
# finds them). Installs the Debian packages building needs first (scripts/setup.sh). Usage: scripts/install.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
scripts/setup.sh
swift build -c release --product cookie-proxy
install -d "$prefix/bin" "$prefix/share/cookie-proxy/rules" "$prefix/share/cookie-proxy/conformance"
install -m 755 .build/release/cookie-proxy "$prefix/bin/cookie-proxy"
install -m 644 rules/*.rules rules/README.md "$prefix/share/cookie-proxy/rules/"
install -m 644 conformance/* "$prefix/share/cookie-proxy/conformance/"
echo "installed $prefix/bin/cookie-proxy ($("$prefix/bin/cookie-proxy" --version)); example rules in $prefix/share/cookie-proxy/rules" >&2
