#!/bin/sh
# cli_setuid.sh BATON PROGRAM WORKDIR: `baton run` on a set-user-ID or
# set-group-ID program says on stderr that the dynamic loader ignores the
# interposer for it (secure execution), and the program indeed runs stock.
#
# PROGRAM is tests/preload/ptest_spin, which prints "[control (no
# interposer)]" when libbaton-preload.so is not loaded.  A copy in WORKDIR
# (in the build tree: /tmp may be mounted nosuid) is made set-user-ID to
# nobody when this runs as root, else set-group-ID to one of the caller's
# other groups; with neither possible the test is skipped (77).  Where the
# file system ignores the bits (nosuid) the loader does load the interposer,
# and then baton must not warn: the check is that the warning and a stock
# run go together.
set -u
abs() { case $1 in /*) echo "$1" ;; *) echo "$(pwd)/$1" ;; esac; }
BATON=$(abs "$1")
PROG=$(abs "$2")
WORK=$(abs "$3")
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
rm -rf "$WORK"
mkdir -p "$WORK" || exit 1
chmod 755 "$WORK"
copy=$WORK/ptest_spin
cp "$PROG" "$copy" || exit 1
chmod 755 "$copy"

# The copy as it is: interposed, no warning.
out=$("$BATON" run -- "$copy" 2>"$WORK/err")
case $out in *"control (no interposer)"*) fail "run: a plain program ran stock: $out" ;; esac
grep -q "ignores LD_PRELOAD" "$WORK/err" && fail "run: a plain program was warned about: $(cat "$WORK/err")"

if [ "$(id -u)" -eq 0 ]; then
    chown nobody "$copy" && chmod 4755 "$copy" || exit 1
    bit=set-user-ID
else
    other=$(id -G | tr ' ' '\n' | grep -vx "$(id -g)" | head -n 1)
    if [ -z "$other" ]; then
        echo "cli_setuid: not root and no second group: cannot make a set-ID program; skipped"
        exit 77
    fi
    chgrp "$other" "$copy" && chmod 2755 "$copy" || exit 1
    bit=set-group-ID
fi
# What the loader does with it (cd: the copy, run as nobody, needs no
# access to the caller's current directory).
out=$(cd "$WORK" && "$BATON" run -- "$copy" 2>"$WORK/err")
rc=$?
[ $rc -eq 0 ] || fail "run: the $bit program failed ($rc): $out $(cat "$WORK/err")"
case $out in
*"control (no interposer)"*)
    grep -q "is $bit: the dynamic loader ignores LD_PRELOAD" "$WORK/err" ||
        fail "run: the $bit program ran stock without a word on stderr: $(cat "$WORK/err")"
    ;;
*)
    echo "cli_setuid: the $bit bit is ignored here (nosuid?): the interposer loaded"
    grep -q "ignores LD_PRELOAD" "$WORK/err" && fail "run: warned, but the interposer loaded"
    ;;
esac
# profile warns too (it runs the command under the interposer).
"$BATON" profile -- "$copy" >/dev/null 2>"$WORK/err"
case $out in
*"control (no interposer)"*)
    grep -q "is $bit: the dynamic loader ignores LD_PRELOAD" "$WORK/err" || fail "profile: no warning" ;;
esac
rm -rf "$WORK"
[ $fails -eq 0 ] && echo "cli_setuid: ok ($bit)"
[ $fails -eq 0 ]
