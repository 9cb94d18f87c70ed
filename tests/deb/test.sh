#!/usr/bin/env bash
# test.sh BUILD - the package test of `make test-deb`: check.sh over the
# packages `make deb` wrote into BUILD, then its twins, which must fail: a
# libbaton-dev without baton/baton.h (the examples do not build), a
# libbaton0 without the interposer (the LD_PRELOAD run fails) and a
# baton-tools without baton plot's script.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { echo "usage: test.sh BUILD" >&2; exit 2; }

bash "$here/check.sh" "$1" || exit 1

twin() { # twin PATH BUILD REGEX: check.sh without PATH must fail, saying REGEX
    local out
    if out=$(bash "$here/check.sh" --omit "$1" "$2" 2>&1); then
        echo "test.sh: FAIL: the packages passed without $1" >&2
        exit 1
    fi
    if ! grep -Eq "$3" <<<"$out"; then
        printf '%s\n' "$out" >&2
        echo "test.sh: FAIL: without $1, check.sh failed for another reason than /$3/" >&2
        exit 1
    fi
    echo "test.sh: without $1: caught ($(grep -E "$3" <<<"$out" | head -n 1))"
}
twin usr/include/baton/baton.h "$1" "FAIL: examples/critical_section does not build"
twin "usr/lib/*/libbaton-preload.so" "$1" "FAIL: LD_PRELOAD=libbaton-preload.so"
if command -v python3 >/dev/null; then # (check.sh checks baton plot only where there is one)
    twin usr/share/baton/plot/baton_plot.py "$1" "FAIL: packaged baton plot"
fi
echo "test.sh: packages ok"
