#!/bin/sh
# Configures and builds one tree. Usage: scripts/build.sh [release|asan] [ninja targets...]
#   release -> build/       everything, RelWithDebInfo
#   asan    -> build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer, unit tests only
set -eu
cd "$(dirname "$0")/.."
flavour=${1:-release}
[ $# -gt 0 ] && shift
case "$flavour" in
  release) dir=build; extra="-DCMAKE_BUILD_TYPE=RelWithDebInfo" ;;
  asan) dir=build-asan; extra="-DCMAKE_BUILD_TYPE=Debug -DXDPVHOST_SANITIZE=ON -DXDPVHOST_UNIT_TESTS_ONLY=ON" ;;
  *) echo "usage: $0 [release|asan] [targets...]" >&2; exit 2 ;;
esac
if [ ! -f "$dir/build.ninja" ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$dir" -G Ninja $extra
fi
ninja -C "$dir" "$@"
