#!/bin/sh
# lint.clang_tidy: clang-tidy with the repository's .clang-tidy over every
# translation unit of lib/ and daemon/ in the build tree's
# compile_commands.json (bpf/ is compiled for the BPF target by clang alone
# and is not in it), two at a time. Any finding fails the test (the config
# makes every warning an error).
#
# Usage: clang_tidy.sh SOURCE_DIR BUILD_DIR [CLANG_TIDY]
#   XDPVHOST_LINT_JOBS  parallel clang-tidy processes (default 2)
set -eu
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
tidy=${3:-clang-tidy}
jobs=${XDPVHOST_LINT_JOBS:-2}
db=$build/compile_commands.json

command -v "$tidy" >/dev/null || { echo "lint: $tidy not found (scripts/bootstrap.sh installs clang-tidy)"; exit 1; }
[ -f "$db" ] || { echo "lint: no $db (CMAKE_EXPORT_COMPILE_COMMANDS)"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

# Each translation unit once, by absolute path; daemon/ first: its units
# include json, asio and CLI11 and take longest, the short lib/ ones even out
# the two queues at the end.
python3 - "$db" "$src" >"$work/files" <<'PY'
import json, os, sys
db, src = sys.argv[1], sys.argv[2]
units = {}
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    top = os.path.relpath(path, src).split(os.sep)[0]
    if top in ("daemon", "lib"):
        units.setdefault(path, top)
print("\n".join(sorted(units, key=lambda path: units[path] != "daemon")))
PY
count=$(grep -c . "$work/files" || true)
[ "$count" -gt 0 ] || { echo "lint: no lib/ or daemon/ sources in $db"; exit 1; }

# The compile commands are gcc's: warning options only gcc knows are not
# findings. The analyzer runs in its shallow mode to keep within the time
# budget (why: the comment at the top of .clang-tidy).
start=$(date +%s)
xargs -P "$jobs" -n 1 sh -c '
  log=$1/$(printf %s "$4" | tr / _).log
  "$2" -p "$3" --quiet --extra-arg=-Wno-unknown-warning-option \
    --extra-arg=-Xclang --extra-arg=-analyzer-config --extra-arg=-Xclang --extra-arg=mode=shallow \
    "$4" >"$log" 2>&1 || mv "$log" "$log.failed"
' sh "$work" "$tidy" "$build" <"$work/files" || true
elapsed=$(( $(date +%s) - start ))

failed=0
for log in "$work"/*.failed; do
  [ -e "$log" ] || continue
  failed=$((failed + 1))
  grep -v -e '^[0-9]* warnings\{0,1\} generated\.$' -e '^Suppressed [0-9]* warnings' "$log" || true
done
echo "clang-tidy: $count translation units, $failed with findings, ${elapsed}s with $jobs jobs"
[ "$failed" -eq 0 ]
