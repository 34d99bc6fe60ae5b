#!/bin/sh
# Installs what is needed, builds, and runs every test suite. This is what CI
# runs (.ci/run). Needs root: the suites create network namespaces, veth
# pairs, XDP programs and QEMU guests of their own (and remove them).
#
#   release tree (build/):  every label: unit, integration, dpdk, guest, e2e,
#                           kubevirt, soak (5 minutes), bench (smoke), lint (clang-format,
#                           clang-tidy on what changed since a clean check)
#   sanitizer tree (build-fuzz/): clang, ASan + UBSan + libFuzzer
#                           instrumentation: every unit test (the fuzz
#                           targets' seed replays among them), and the
#                           libFuzzer binaries are built so they cannot rot
#
# Not in CI, each its own command: the bounded libFuzzer runs
# (ctest --test-dir build-fuzz -L fuzz, tests/fuzz/README.md) and clang-tidy
# over the whole tree (XDPVHOST_TIDY_CACHE= ctest --test-dir build -L lint).
# Every tree compiles through ccache when it is installed (CMakeLists.txt),
# so a fresh clone on a machine that built before reuses those objects.
#
# Usage: scripts/test.sh [ctest arguments for the release tree, e.g. -L unit]
set -u
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh || exit 1
./scripts/build.sh release || exit 1

LOG=build/test-logs
mkdir -p "$LOG"
status=0
ctest --test-dir build --output-on-failure --timeout 600 -j2 "$@" 2>&1 | tee "$LOG/release.txt" || status=1

# The sanitizer tree. A tree that does not build counts as one failed test.
sanitizer_start=$(date +%s)
if ./scripts/build.sh fuzz; then
  ctest --test-dir build-fuzz --output-on-failure --timeout 600 -j2 -L unit 2>&1 |
    tee "$LOG/sanitizer.txt" || status=1
else
  echo "0% tests passed, 1 tests failed out of 1 (the sanitizer tree did not build)" |
    tee "$LOG/sanitizer.txt"
  status=1
fi
echo "sanitizer stage: $(( $(date +%s) - sanitizer_start )) s (build included)"

# Every test labelled unit runs in both trees: the same names, or the run fails.
# (gtest prints value parameters into some names: raw bytes, which differ
# between builds, so those are cut off.)
unit_names() {
  ctest --test-dir "$1" -N -L unit | sed -n 's/^ *Test *#[0-9]*: //p' |
    sed 's/  # GetParam().*//; s/[0-9]*-byte object <.*>$//' | sort > "$2"
}
unit_names build "$LOG/unit-release.txt"
unit_names build-fuzz "$LOG/unit-sanitizer.txt"
if ! diff "$LOG/unit-release.txt" "$LOG/unit-sanitizer.txt" > "$LOG/unit-trees.diff"; then
  echo "the release and sanitizer trees hold different unit tests:"; cat "$LOG/unit-trees.diff"
  status=1
fi

# One line last, for humans and CI: totals over the two trees.
# A log without ctest's totals line counts as 1 failed of 0.
summary() {
  line=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' "$1" | tail -1)
  echo "${line:-1 0}"
}
set -- $(summary "$LOG/release.txt") $(summary "$LOG/sanitizer.txt")
failed=$(( ${1:-1} + ${3:-1} ))
total=$(( ${2:-0} + ${4:-0} ))
echo "release: ${2:-0} tests, ${1:-?} failed; sanitizer: ${4:-0} tests, ${3:-?} failed"
echo "$(( total - failed )) passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$total" -gt 0 ] && [ "$status" -eq 0 ]
