#!/bin/sh
# Long offline fuzz runs, one target at a time (the figures in docs/testing.md).
# Usage: tests/fuzz/long_run.sh [BUILD_DIR] TARGET:MAX_SECONDS ...
# Each target runs at niceness XDPVHOST_FUZZ_NICE (default 10, absolute, and
# its session's autogroup at the same level; under
# `nice -n 10 long_run.sh` it stays 10, not 19 -- at 19 a target got almost no
# CPU on a shared machine) with ASan + UBSan (the fuzz tree, see
# scripts/build.sh fuzz) until 10 M executions or MAX_SECONDS, whichever comes
# first, from the committed seeds into BUILD_DIR/tests/fuzz/long/<target>
# (kept between runs); the libFuzzer log goes to <target>.log next to it, and
# one summary line per target to summary.txt: executions, exec/s, seconds,
# coverage, the finding (none, or this run's crash/leak/timeout/OOM file)
# and how many slow-unit files this run wrote.
set -u
cd "$(dirname "$0")/../.."
build=build-fuzz
case "${1:-}" in *:*) ;; ?*) build=$1; shift ;; esac
out=$build/tests/fuzz/long
mkdir -p "$out"
src=tests/fuzz
level=${XDPVHOST_FUZZ_NICE:-10}
# Allocation and free stacks of two frames (unless ASAN_OPTIONS says
# otherwise): reports show where memory was allocated or freed, not the
# whole way there -- replay the input (a CI-style run records 30 frames) for
# that. Not fewer: LeakSanitizer counts a chunk whose stack has no caller
# frame as reachable, so at 0 or 1 frame it reports no leak at all.
ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=2}
export ASAN_OPTIONS
increment=$(( level - $(nice) ))
[ "$increment" -ge 0 ] || increment=0
for spec in "$@"; do
  target=${spec%%:*}
  seconds=${spec#*:}
  bin=$build/tests/fuzz/${target}_fuzzer
  [ -x "$bin" ] || { echo "$bin missing: scripts/build.sh fuzz fuzzers" >&2; exit 2; }
  case "$target" in
    control_protocol|control_api) args="-dict=$src/json.dict -max_len=1024" ;;
    config_loader) args="-dict=$src/json.dict" ;;
    http_request) args="-dict=$src/http.dict -max_len=1100" ;;
    *) args="" ;;
  esac
  mkdir -p "$out/$target"
  start=$(date +%s)
  marker=$out/.$target.start  # artifacts newer than this are this run's
  : > "$marker"
  # In a session of its own whose autogroup gets the same niceness: with
  # CONFIG_SCHED_AUTOGROUP (Debian's default) the nice value of a process
  # counts only against its own session, and a fuzzer at nice 19 started
  # from another session took 60 % of a core from a build at nice 0.
  # shellcheck disable=SC2086
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 setsid -w sh -c \
    'if [ -w /proc/self/autogroup ]; then echo "$1" > /proc/self/autogroup; fi; shift; exec "$@"' \
    sh "$level" nice -n "$increment" "$bin" -runs=10000000 \
    -max_total_time="$seconds" -timeout=25 -print_final_stats=1 $args \
    -artifact_prefix="$out/$target-" "$out/$target" "$src/corpus/$target" > "$out/$target.log" 2>&1
  rc=$?
  end=$(date +%s)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$target.log" | tail -1)
  cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$out/$target.log" | sed 's/.*cov: \([0-9]*\).*/\1/' | tail -1)
  # A finding is a crash, leak, timeout or OOM file of this run. A slow-unit
  # file (an input over libFuzzer's 10 s report threshold, under -timeout)
  # is not one, but is counted: replay it to tell a slow input from a
  # fuzzer that was not scheduled (nice 19 beside a build).
  finding=$(find "$out" -maxdepth 1 -newer "$marker" \( -name "$target-crash-*" -o \
    -name "$target-leak-*" -o -name "$target-timeout-*" -o -name "$target-oom-*" \) | head -1)
  slow=$(find "$out" -maxdepth 1 -newer "$marker" -name "$target-slow-unit-*" | wc -l)
  rate=$(( ${execs:-0} / ( end - start > 0 ? end - start : 1 ) ))
  echo "$target executions=${execs:-?} seconds=$(( end - start )) exec_per_s=$rate cov=${cov:-?} exit=$rc finding=${finding:-none} slow_units=$slow at=$(date -u +%FT%TZ)" | tee -a "$out/summary.txt"
done
