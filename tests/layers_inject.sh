#!/usr/bin/env bash
# layers_inject.sh SRC FILE LINE - run tools/check-layers.sh on a copy of
# SRC's tree with LINE appended to FILE (relative to the tree), for the
# ctest layers_catches_* tests: the checker must fail, naming FILE.  The copy
# is checked clean first, so the failure is the injected line's.  Exit 3: the
# clean copy failed, or FILE is not in it.
set -euo pipefail
src=$1 file=$2 line=$3
tmp=$(mktemp -d /tmp/baton-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp -R "$src/src" "$src/bench" "$src/include" "$tmp/"
if ! bash "$src/tools/check-layers.sh" --root "$tmp" >/dev/null; then
    echo "layers_inject: the clean copy fails already" >&2
    exit 3
fi
[[ -f $tmp/$file ]] || { echo "layers_inject: no $file in the tree" >&2; exit 3; }
printf '%s\n' "$line" >>"$tmp/$file"
bash "$src/tools/check-layers.sh" --root "$tmp"
