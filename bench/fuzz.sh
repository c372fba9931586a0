#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (swiftc -sanitize=fuzzer,address). Targets in Fuzz/: the request-head and
# response-head parsers, the chunked decoder and the connection machine (each checks that what it accepts has one
# reading: the strict and the lenient reader of Tests/ProxyCoreTests/TwoReadings.swift agree), the Set-Cookie
# parser (lossless round trip), the rules parser (an error, never a crash), the rules' shape cache (what it
# answers is what the full path works out) and the HTTP/2 sessions (every request the client side passes on, and
# every response the upstream side makes, has one reading), the HAR reader and audit (no crash; the JSON reader
# reads its own writing back the same) and the request-cookie edits (one pair's bytes change, no other).
# Usage: bench/fuzz.sh [SECONDS=60] [TARGET...]   (each target runs SECONDS; corpora kept in .build/fuzz/corpus)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}; shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(RequestHead ResponseHead ChunkedDecoder ConnectionMachine SetCookieRoundTrip RulesParser ShapeCache HTTP2Session HTTP2ClientSession HARAudit CookieHeaderEdit)
OUT=.build/fuzz
mkdir -p "$OUT/corpus"
FLAGS=(-sanitize=fuzzer,address -parse-as-library -O -g -package-name cookie_proxy -I "$OUT" -L "$OUT" -I Sources/CNGHTTP2)
module() {  # name, sources...: a static library and its module, instrumented for coverage
  local name=$1; shift
  swiftc "${FLAGS[@]}" -emit-library -static -emit-module -module-name "$name" "$@" \
    -emit-module-path "$OUT/$name.swiftmodule" -o "$OUT/lib$name.a" 2>>"$OUT/build.log" || {
    tail -30 "$OUT/build.log" >&2; exit 1; }
}
: > "$OUT/build.log"
module HTTPGrammar Sources/HTTPGrammar/*.swift
module Terminal Sources/Terminal/*.swift
module JSONStream Sources/JSONStream/*.swift
module ArgumentParsing Sources/ArgumentParsing/*.swift
module ExchangeFacts Sources/ExchangeFacts/*.swift
module HTTPHeads Sources/HTTPHeads/*.swift
module ProxyCore Sources/ProxyCore/*.swift
module CookieKit Sources/CookieKit/*.swift
module CookieRules Sources/CookieRules/*.swift
module ProxyHTTP2 Sources/ProxyHTTP2/*.swift
module CookieLifecycle Sources/CookieLifecycle/*.swift
for t in "${TARGETS[@]}"; do
  case $t in
    SetCookieRoundTrip | CookieHeaderEdit)
      libs=(-lCookieKit -lJSONStream -lTerminal -lExchangeFacts -lHTTPGrammar); extra=() ;;
    HARAudit) libs=(-lCookieLifecycle -lCookieKit -lJSONStream -lTerminal -lExchangeFacts -lHTTPGrammar); extra=() ;;
    RulesParser | ShapeCache)
      libs=(-lCookieRules -lArgumentParsing -lCookieKit -lJSONStream -lTerminal -lExchangeFacts -lHTTPGrammar)
      extra=() ;;
    HTTP2Session | HTTP2ClientSession)
      libs=(-lProxyHTTP2 -lProxyCore -lHTTPHeads -lExchangeFacts -lHTTPGrammar -lnghttp2)
      extra=(Tests/ProxyCoreTests/TwoReadings.swift Fuzz/H2FuzzFrames.swift) ;;
    *) libs=(-lProxyCore -lHTTPHeads -lExchangeFacts -lHTTPGrammar); extra=(Tests/ProxyCoreTests/TwoReadings.swift) ;;
  esac
  # (ld.gold warns about every ASan helper symbol: the warnings go to the build log)
  swiftc "${FLAGS[@]}" "Fuzz/$t.swift" "${extra[@]}" "${libs[@]}" -module-name "Fuzz$t" -o "$OUT/fuzz-$t" \
    2>>"$OUT/build.log" || { grep -v "Cannot export local symbol" "$OUT/build.log" | tail -30 >&2; exit 1; }
  mkdir -p "$OUT/corpus/$t"
  echo "== $t: ${SECS}s"
  # Seeds, where a target has them (Fuzz/seeds/TARGET: inputs the fuzzer would take long to find), read with the corpus.
  seeds=(); [ -d "Fuzz/seeds/$t" ] && seeds=("Fuzz/seeds/$t")
  # A crashing input is kept in $OUT (not the working directory); libFuzzer reports the crash itself, so Swift's
  # backtracer is off (it outlived the target and held the log's pipe open).
  SWIFT_BACKTRACE=enable=no "$OUT/fuzz-$t" -max_total_time="$SECS" -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$OUT/" "$OUT/corpus/$t" "${seeds[@]}" 2>"$OUT/$t.log" || {
    echo "fuzz target $t failed:" >&2; tail -40 "$OUT/$t.log" >&2; exit 1; }
  execs=$(awk '/^stat::number_of_executed_units/ {print $2}' "$OUT/$t.log")
  done_line=$(grep -E "DONE +cov:" "$OUT/$t.log" | tail -1 | grep -oE "cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*")
  echo "   $execs executions, $done_line, no crash"
done
