#!/bin/sh
# lint.clang_format: every tracked C and C++ source (bpf/ included) is as
# clang-format with the repository's .clang-format writes it. Prints the
# differences as clang-format warnings; `clang-format -i FILE` fixes them.
#
# Usage: clang_format.sh SOURCE_DIR [CLANG_FORMAT]
set -eu
cd "$1"
format=${2:-clang-format}
command -v "$format" >/dev/null || { echo "lint: $format not found (scripts/bootstrap.sh installs clang-format)"; exit 1; }
git rev-parse --is-inside-work-tree >/dev/null || { echo "lint: $1 is not a git work tree"; exit 1; }

list=$(mktemp)
trap 'rm -f "$list"' EXIT
trap 'exit 1' INT TERM
git ls-files -z -- '*.c' '*.cpp' '*.hpp' '*.h' >"$list"
count=$(tr -cd '\0' <"$list" | wc -c)
[ "$count" -gt 0 ] || { echo "lint: no C or C++ files tracked"; exit 1; }
if xargs -0 "$format" --style=file --dry-run -Werror <"$list"; then
  echo "clang-format: $count files formatted"
else
  echo "clang-format: differences above ($count files checked; clang-format -i FILE fixes them)"
  exit 1
fi
