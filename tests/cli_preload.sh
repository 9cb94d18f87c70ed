#!/bin/sh
# cli_preload.sh BATON [PROGRAM [FORKER]]: checks of `baton run`, `baton
# profile` and `baton advise`.  BATON is the baton binary (the interposer is
# found next to it); PROGRAM, when given, is a dynamically linked program that
# takes pthread mutexes and exits 0 (its profile must list at least one lock);
# FORKER, one that forks while its threads hold locks (tests/preload/fork.c).
set -u
BATON=$1
PROG=${2:-}
FORKER=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli_preload.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# run: a bad spec is refused before anything runs, with the valid kinds.
"$BATON" run --lock rcl -- true 2>"$tmp/err" && fail "run --lock rcl succeeded"
grep -q "interposable mutex kinds:.*mcs" "$tmp/err" || fail "run --lock rcl: no list of kinds"
"$BATON" run --rwlock mcs -- true 2>/dev/null && fail "run --rwlock mcs (no readers) succeeded"
"$BATON" run --lock nosuchkind -- true 2>/dev/null && fail "run --lock nosuchkind succeeded"
# run: the environment reaches the command; LD_PRELOAD is prepended.
# shellcheck disable=SC2016  # expanded by the inner shell
out=$(LD_PRELOAD=libkeep.so "$BATON" run --lock mcs:spinpark --rwlock 'rw(ttas)' -- \
    sh -c 'echo "$BATON_LOCK|$BATON_RWLOCK|$LD_PRELOAD"' 2>/dev/null)
case $out in
    "mcs:spinpark|rw(ttas)|"*libbaton-preload.so:libkeep.so) ;;
    *) fail "run: environment '$out'" ;;
esac
"$BATON" run -- sh -c 'exit 7'; [ $? -eq 7 ] || fail "run: exit status not passed through"
"$BATON" run -- /nonexistent/cmd 2>/dev/null; [ $? -eq 127 ] || fail "run: missing command not 127"

# profile: the command's stdout is its own, its exit status is returned,
# the table goes to stderr.  (A shell's `exit` is _exit(): no report.)
out=$("$BATON" profile -- env echo hello 2>"$tmp/err")
[ "$out" = hello ] || fail "profile: stdout '$out'"
grep -q "^baton profile:" "$tmp/err" || fail "profile: no summary on stderr"
grep -q "^process [0-9]* .*echo" "$tmp/err" || fail "profile: no process reported"
"$BATON" profile -- sh -c 'exit 3' 2>/dev/null; rc=$?
[ $rc -eq 3 ] || fail "profile: exit status $rc, not 3"
"$BATON" profile --top x -- true 2>/dev/null && fail "profile --top x accepted"
if [ -n "$PROG" ]; then
    "$BATON" profile --json "$tmp/p.json" -- "$PROG" >/dev/null 2>"$tmp/err" || fail "profile $PROG failed"
    grep -q "mutex 0x" "$tmp/err" || fail "profile $PROG: no mutex in the table"
    grep -q '"type": "mutex"' "$tmp/p.json" || fail "profile --json: no mutex"
    if command -v python3 >/dev/null; then
        python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/p.json" || fail "profile --json: not JSON"
    fi
fi
# profile: a profiled program that forks (the profiler's lock is taken
# across the fork once, with the interposer's others), under a watchdog.
if [ -n "$FORKER" ]; then
    timeout -s KILL 150 "$BATON" profile -- "$FORKER" >/dev/null 2>"$tmp/err" ||
        fail "profile $FORKER: failed or hung (status $?): $(tail -n 3 "$tmp/err")"
fi

# advise: a table on stdout with stock and each candidate, a recommendation.
"$BATON" advise --repeat 1 --locks 'ttas,relay:spinpark,slice_us=100' -- true >"$tmp/out" 2>/dev/null ||
    fail "advise failed"
grep -q "^stock" "$tmp/out" || fail "advise: no stock row"
grep -q "^relay:spinpark,slice_us=100 " "$tmp/out" || fail "advise: spec with options split"
grep -q "^recommendation: " "$tmp/out" || fail "advise: no recommendation"
"$BATON" advise --repeat 1 --locks ttas -- sh -c 'exit 5' >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] || fail "advise: a failing command gave status 0"
"$BATON" advise --repeat 1 --locks ttas --metric 'stdout-regex:rate ([0-9]+)' -- echo 'rate 42' >"$tmp/out" 2>/dev/null ||
    fail "advise --metric stdout-regex failed"
grep -q "^stock.* 42 " "$tmp/out" || fail "advise: regex metric not captured"
"$BATON" advise --locks rcl -- true 2>/dev/null && fail "advise --locks rcl accepted"

[ $fails -eq 0 ] && echo "cli_preload: all passed"
[ $fails -eq 0 ]
