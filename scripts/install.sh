#!/usr/bin/env bash
# Builds cookie-proxy (release) and installs it under PREFIX (default /usr/local): the binary in PREFIX/bin, its
# manual page and bash/zsh/fish completions (made by `cookie-proxy completions`) under PREFIX/share, the
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
install -d "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
"$prefix/bin/cookie-proxy" completions man > "$prefix/share/man/man1/cookie-proxy.1"
"$prefix/bin/cookie-proxy" completions bash > "$prefix/share/bash-completion/completions/cookie-proxy"
"$prefix/bin/cookie-proxy" completions zsh > "$prefix/share/zsh/site-functions/_cookie-proxy"
"$prefix/bin/cookie-proxy" completions fish > "$prefix/share/fish/vendor_completions.d/cookie-proxy.fish"
echo "installed $prefix/bin/cookie-proxy ($("$prefix/bin/cookie-proxy" --version)); example rules in $prefix/share/cookie-proxy/rules" >&2
