#!/bin/sh
# Installs what is needed, builds, and runs every test suite. This is what CI
# runs (.ci/run). Needs root: the suites create network namespaces, veth
# pairs, XDP programs and QEMU guests of their own (and remove them).
#
#   release tree (build/):    every label: unit, integration, dpdk, guest,
#                             e2e, bench (smoke), lint (clang-format, clang-tidy)
#   sanitizer tree (build-asan/): the unit tests under ASan + UBSan
#   fuzz tree (build-fuzz/):  clang, libFuzzer + ASan + UBSan; only the
#                             target `fuzzers` is built, then ctest -L fuzz runs
#                             every fuzz target XDPVHOST_FUZZ_SECONDS (default
#                             30) from the committed seeds, two at a time; any
#                             crash, sanitizer report, leak or timeout fails
#                             (about 6 minutes on 2 cores, build included)
#
# Usage: scripts/test.sh [ctest arguments for the release tree, e.g. -L unit]
set -u
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh || exit 1
./scripts/build.sh release || exit 1
./scripts/build.sh asan || exit 1

LOG=build/test-logs
mkdir -p "$LOG"
status=0
ctest --test-dir build --output-on-failure --timeout 1200 -j2 "$@" 2>&1 | tee "$LOG/release.txt" || status=1
ctest --test-dir build-asan --output-on-failure --timeout 600 -j2 -L unit 2>&1 | tee "$LOG/asan.txt" || status=1

# The fuzz stage. A tree that does not build counts as one failed test.
fuzz_start=$(date +%s)
if ./scripts/build.sh fuzz fuzzers &&
   cmake -S . -B build-fuzz -DXDPVHOST_FUZZ_SECONDS="${XDPVHOST_FUZZ_SECONDS:-30}" > /dev/null; then
  ctest --test-dir build-fuzz --output-on-failure -j2 -L fuzz 2>&1 | tee "$LOG/fuzz.txt" || status=1
else
  echo "0% tests passed, 1 tests failed out of 1 (the fuzz tree did not build)" | tee "$LOG/fuzz.txt"
  status=1
fi
echo "fuzz stage: $(( $(date +%s) - fuzz_start )) s (build included)"

# Every test labelled unit runs in both trees: the same names, or the run fails.
# (gtest prints value parameters into some names: raw bytes, which differ
# between builds, so those are cut off.)
unit_names() {
  ctest --test-dir "$1" -N -L unit | sed -n 's/^ *Test *#[0-9]*: //p' |
    sed 's/  # GetParam().*//; s/[0-9]*-byte object <.*>$//' | sort > "$2"
}
unit_names build "$LOG/unit-release.txt"
unit_names build-asan "$LOG/unit-asan.txt"
if ! diff "$LOG/unit-release.txt" "$LOG/unit-asan.txt" > "$LOG/unit-trees.diff"; then
  echo "the release and sanitizer trees hold different unit tests:"; cat "$LOG/unit-trees.diff"
  status=1
fi

# One line last, for humans and CI: totals over the three trees.
# A log without ctest's totals line counts as 1 failed of 0.
summary() {
  line=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' "$1" | tail -1)
  echo "${line:-1 0}"
}
set -- $(summary "$LOG/release.txt") $(summary "$LOG/asan.txt") $(summary "$LOG/fuzz.txt")
failed=$(( ${1:-1} + ${3:-1} + ${5:-1} ))
total=$(( ${2:-0} + ${4:-0} + ${6:-0} ))
echo "release: ${2:-0} tests, ${1:-?} failed; asan: ${4:-0} tests, ${3:-?} failed;" \
     "fuzz: ${6:-0} tests, ${5:-?} failed"
echo "$(( total - failed )) passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$total" -gt 0 ] && [ "$status" -eq 0 ]
