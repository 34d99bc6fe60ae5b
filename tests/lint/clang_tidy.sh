#!/bin/sh
# lint.clang_tidy: clang-tidy with the repository's .clang-tidy over the
# translation units of lib/ and daemon/ in the build tree's
# compile_commands.json (bpf/ is compiled for the BPF target by clang alone
# and is not in it), two at a time. Any finding fails the test (the config
# makes every warning an error).
#
# Units already checked clean with the same inputs are skipped: tidy_units.py
# keys each unit by clang-tidy's version, the config, its compile command and
# every file it includes, and a clean unit's key is kept in the cache
# directory. So CI checks what changed since a clean check (a fresh clone
# elsewhere on the machine shares the cache), and a cold cache checks all.
#
# Usage: clang_tidy.sh SOURCE_DIR BUILD_DIR [CLANG_TIDY]
#   XDPVHOST_LINT_JOBS   parallel clang-tidy processes (default 2)
#   XDPVHOST_TIDY_CACHE  the cache directory (default
#                        ${XDG_CACHE_HOME:-$HOME/.cache}/xdpvhost/clang-tidy);
#                        empty: check every unit (scripts/tidy.sh)
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

cache=${XDPVHOST_TIDY_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/xdpvhost/clang-tidy}
if [ -n "$cache" ]; then
  mkdir -p "$cache"
  find "$cache" -type f -mtime +30 -delete  # keys not hit for a month
fi

# "KEY PATH" per unit still to check ("-" for a unit without a key).
python3 "$(dirname "$0")/tidy_units.py" "$db" "$src" "$build" "$cache" "$tidy" >"$work/units" 2>"$work/total"
count=$(grep -c . "$work/units" || true)
total=$(cat "$work/total")
[ "$total" -gt 0 ] || { echo "lint: no lib/ or daemon/ sources in $db"; exit 1; }

# The compile commands are gcc's: warning options only gcc knows are not
# findings. The analyzer runs in its shallow mode to keep within the time
# budget (why: the comment at the top of .clang-tidy).
start=$(date +%s)
xargs -P "$jobs" -n 2 sh -c '
  log=$1/$(printf %s "$6" | tr / _).log
  if "$2" -p "$3" --quiet --extra-arg=-Wno-unknown-warning-option \
       --extra-arg=-Xclang --extra-arg=-analyzer-config --extra-arg=-Xclang --extra-arg=mode=shallow \
       "$6" >"$log" 2>&1; then
    [ -z "$4" ] || [ "$5" = - ] || touch "$4/$5"
  else
    mv "$log" "$log.failed"
  fi
' sh "$work" "$tidy" "$build" "$cache" <"$work/units" || true
elapsed=$(( $(date +%s) - start ))

failed=0
for log in "$work"/*.failed; do
  [ -e "$log" ] || continue
  failed=$((failed + 1))
  grep -v -e '^[0-9]* warnings\{0,1\} generated\.$' -e '^Suppressed [0-9]* warnings' "$log" || true
done
echo "clang-tidy: $total translation units, $((total - count)) unchanged since a clean check," \
     "$count checked, $failed with findings, ${elapsed}s with $jobs jobs"
[ "$failed" -eq 0 ]
