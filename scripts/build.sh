#!/bin/sh
# Configures and builds one tree. Usage: scripts/build.sh [release|fuzz] [ninja targets...]
#   release -> build/       everything, Release (what packagers build: -O3, g++)
#   fuzz    -> build-fuzz/  the sanitizer tree: clang, everything instrumented for
#                           libFuzzer with AddressSanitizer + UndefinedBehaviorSanitizer;
#                           the unit tests (CI runs them here: scripts/test.sh) and the
#                           libFuzzer targets of tests/fuzz (target `fuzzers`), which
#                           `scripts/fuzz.sh` runs for a bounded time each
# XDPVHOST_BUILD_DIR=DIR builds the flavour in DIR instead (e.g. a second fuzz
# tree while the first one is busy with long runs).
# All treat warnings as errors (XDPVHOST_WERROR); a plain
# `cmake -DCMAKE_BUILD_TYPE=Release` build does not.
set -eu
cd "$(dirname "$0")/.."
flavour=${1:-release}
[ $# -gt 0 ] && shift
case "$flavour" in
  release) dir=build; extra="-DCMAKE_BUILD_TYPE=Release -DXDPVHOST_WERROR=ON" ;;
  fuzz) dir=build-fuzz; extra="-DCMAKE_BUILD_TYPE=Debug -DXDPVHOST_FUZZ=ON -DXDPVHOST_UNIT_TESTS_ONLY=ON -DXDPVHOST_WERROR=ON"
        export CC=clang CXX=clang++ ;;
  *) echo "usage: $0 [release|fuzz] [targets...]" >&2; exit 2 ;;
esac
dir=${XDPVHOST_BUILD_DIR:-$dir}
# Configured every time (cheap): a tree made by an older script gets the
# current options.
# shellcheck disable=SC2086
cmake -S . -B "$dir" -G Ninja $extra > /dev/null
ninja -C "$dir" "$@"
