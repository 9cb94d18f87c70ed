#!/usr/bin/env bash
# check-format.sh [--fix] [FILE...] - is every C and C++ file of the tree
# (or each FILE) in the house format (.clang-format)?  Lists the files that
# are not and exits 1; --fix rewrites them in place.  Files under docs/ (measurement scratch kept as data) and
# fetched peers are not the project's code and are left out.
#
# Needs clang-format 14 (apt: clang-format-14): another version may format
# differently, so the check insists on 14 and exits 77 (skipped) without it.
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [[ ${1:-} == --fix ]]; then fix=1; shift; fi
if [[ ${1:-} == -* ]]; then echo "usage: tools/check-format.sh [--fix] [FILE...]" >&2; exit 2; fi
cf=""
for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null && "$c" --version | grep -q 'version 14\.'; then cf=$c; break; fi
done
if [[ -z $cf ]]; then
    echo "check-format: clang-format 14 not found (apt-get install clang-format-14): skipped" >&2
    exit 77
fi
if (($#)); then
    files=("$@")
else
    mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | grep -v '^docs/')
fi
if ((fix)); then
    "$cf" -i --style=file "${files[@]}"
    exit 0
fi
bad=0
for f in "${files[@]}"; do
    if ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "check-format: $f is not formatted (tools/check-format.sh --fix)"
        bad=1
    fi
done
((bad == 0)) && echo "check-format: ${#files[@]} files formatted"
exit $bad
