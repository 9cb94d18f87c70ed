#!/usr/bin/env bash
# CI smoke test of the real applications under the interposer (default spec
# unless said otherwise), about 30 s in all:
#   1. memcached -t 4 answers a set/get check, survives 10 s of memcaslap
#      load (-T 2 -c 64, 10% of the gets verify the value) with zero errors,
#      failures or verification misses, answers the set/get check again, and
#      exits cleanly on SIGTERM with the interposer's report (so it really
#      ran under baton's locks);
#   2. kccachetest wicked -th 4 10000 passes its own checks (exit 0, "ok", no
#      "error") with the default specs and with BATON_RWLOCK=rw(relay);
#   3. omp_locks (lock and critical, 4 threads) verifies its counter (skipped,
#      with a note, where the build has no OpenMP compiler).
#
#   smoke.sh [--seconds 10]       BUILD=<build dir> or BATON_PRELOAD_LIB=<path>
#
# Exits non-zero on the first failure, with the reason and the log's tail.
set -euo pipefail
PROG=smoke.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

seconds=10
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) seconds=$2; shift 2 ;;
        -h|--help) print_header; exit 0 ;;
        *) die "unknown argument '$1' (smoke.sh [--seconds S])" ;;
    esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "--seconds wants a positive integer, not '$seconds'"

"$APPS_DIR/deps.sh" all
find_preload
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-smoke.XXXXXX")
keep=0
trap 'mc_stop || true; [ $keep -eq 1 ] || rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
start=$SECONDS

fail() { # fail MESSAGE [LOG]: the reason, the log's tail, exit 1 (logs kept)
    keep=1
    echo "$PROG: FAIL: $1" >&2
    if [ -n "${2:-}" ] && [ -f "$2" ]; then
        echo "--- last lines of $2:" >&2
        tail -n 15 "$2" >&2
    fi
    echo "$PROG: logs kept in $work" >&2
    exit 1
}
pass() { echo "$PROG: ok: $* ($((SECONDS - start)) s)"; }

note "interposer: $PRELOAD"

# --- 1. memcached -----------------------------------------------------------------
conf_env mutex default
slog=$work/memcached.log clog=$work/memcaslap.log
# -m 256: the load's 64 x 1k keys of 1 KiB fit, so nothing is evicted and
# every verified get must find its value.
MC_ARGS=(-m 256)
mc_start 4 "$slog" "${CONF_ENV[@]}" || fail "$MC_ERR" "$slog"
msg=$(mc_setget "$MC_PORT") || fail "memcached set/get check before the load: $msg" "$slog"
rc=0
timeout $((seconds + 60)) memcaslap -s "127.0.0.1:$MC_PORT" -T 2 -c 64 -t "${seconds}s" -w 1k -v 0.1 >"$clog" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "memcaslap $(exit_words $rc)" "$clog"
tps=$(memcaslap_check "$clog") || fail "$tps" "$clog"
kill -0 "$MC_PID" 2>/dev/null || fail "memcached died under the load" "$slog"
msg=$(mc_setget "$MC_PORT") || fail "memcached set/get check after the load: $msg" "$slog"
mc_stop || fail "memcached died before it was stopped" "$slog"
msg=$(check_loaded default "$slog") || fail "memcached: $msg" "$slog"
pass "memcached -t 4: set/get, $seconds s of memcaslap at $tps ops/s with zero errors, set/get again"

# --- 2. kccachetest ------------------------------------------------------------------
for spec in default 'rw(relay)'; do
    conf_env rwlock "$spec"
    log=$work/kccache_${spec//[^a-z]/_}.log
    rc=0
    timeout 120 env "${CONF_ENV[@]}" kccachetest wicked -th 4 10000 >"$log" 2>&1 || rc=$?
    [ $rc -eq 0 ] || fail "kccachetest wicked -th 4 10000 (BATON_RWLOCK=$spec) $(exit_words $rc)" "$log"
    if bad=$(grep -v '^baton-preload\[' "$log" | grep -i -E -m 1 'error|failed'); then
        fail "kccachetest (BATON_RWLOCK=$spec) printed: $bad" "$log"
    fi
    [ "$(grep -v '^baton-preload\[' "$log" | awk 'NF { l = $0 } END { print l }')" = ok ] ||
        fail "kccachetest (BATON_RWLOCK=$spec): output does not end with 'ok'" "$log"
    msg=$(check_loaded "$spec" "$log") || fail "kccachetest (BATON_RWLOCK=$spec): $msg" "$log"
    pass "kccachetest wicked -th 4 10000 under BATON_RWLOCK=$spec"
done

# --- 3. omp_locks ----------------------------------------------------------------------
prog=${BATON_OMP_LOCKS:-$BUILD_DIR/bench/apps/omp_locks}
if [ ! -x "$prog" ]; then
    note "SKIP omp_locks: not built at $prog (the build's C compiler has no OpenMP)"
else
    conf_env mutex default
    for mode in lock critical; do
        so=$work/omp_$mode.out se=$work/omp_$mode.err
        rc=0
        OMP_NUM_THREADS=4 timeout 120 env "${CONF_ENV[@]}" "$prog" "$mode" 20000 >"$so" 2>"$se" || rc=$?
        [ $rc -eq 0 ] || fail "omp_locks $mode (4 threads) $(exit_words $rc) (status 1: its counter was wrong)" "$se"
        grep -Eq ' counter=80000( |$)' "$so" || fail "omp_locks $mode: unexpected output: $(cat "$so")" "$se"
        msg=$(check_loaded default "$se") || fail "omp_locks $mode: $msg" "$se"
        pass "omp_locks $mode, 4 threads: counter verified"
    done
fi
echo "$PROG: all passed in $((SECONDS - start)) s"
