#!/usr/bin/env bash
# check.sh - model-check the protocol models with spin: QD (with its
# resident helper and its mutex), CC-Synch with its park protocol, RCL, and
# the lock servers (chaining, hierarchy, leases).
#
# Each check generates a verifier (spin -a), compiles it (gcc -O2) and runs
# it in a temporary directory.  A check either must pass (no error, complete
# search, and the listed reachability markers reached: spin runs with -o3,
# no statement merging, so that each marker stays a statement of its own,
# and a listed marker that is not a statement of the verifier fails the
# check instead of passing unseen), or is a deliberately
# broken variant (a BUG_* macro) on which spin must FIND the named kind of
# error.  One line per check; exit status 0 only if every check came out as
# expected.  See models/README.md.
#
#   models/check.sh            run every check (in parallel, one per CPU)
#   JOBS=1 models/check.sh     one at a time
#   SPIN=/path/to/spin, CC=gcc  the tools used
#   KEEP=1 models/check.sh     keep the work directory (its path is printed)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SPIN=${SPIN:-spin}
if ! command -v "$SPIN" >/dev/null 2>&1; then
    echo "check.sh: skipped: spin is required (tools/deps.sh and .ci/run install it)" >&2
    exit 77
fi
CC=${CC:-gcc}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-models.XXXXXX")
if [[ -n "${KEEP:-}" ]]; then
    echo "check.sh: work directory $work"
else
    trap 'rm -rf "$work"' EXIT
fi

# name | model | expectation | spin -D options | pan run options | markers that must be reached
#   expectation: pass (safety: assertions, invalid end states),
#                live (the LTL property `live`, weak fairness),
#                or "fail:<regex>" (the first error must match <regex>).
checks=(
  "qd/base|qd.pml|pass||-m200000 -w21|1 2 3 5 6 7"
  "qd/size=4|qd.pml|pass|-DSIZE=4|-m200000 -w21|1 5 6 7"
  "qd/retries=0|qd.pml|pass|-DRETRIES=0|-m200000 -w20|1 2 3 5 6 7"
  "qd/help_limit=2|qd.pml|pass|-DHELP_LIMIT=2|-m200000 -w21|1 2 3 4 6 7"
  "qd/3-delegators|qd.pml|pass|-DND=3 -DRETRIES=0|-m200000 -w23|1 2 3 5 6 7"
  "qd/no-hint|qd.pml|pass|-DNO_HINT|-m200000 -w21|1 2 3 5 6"
  "qd/live|qd.pml|live|-DLIVE|-m200000 -w21|"
  "qd/BUG_NO_END_MARKER|qd.pml|fail:invalid end state|-DBUG_NO_END_MARKER|-m200000 -w21|"
  "qd/BUG_FLUSH_EARLY|qd.pml|fail:assertion violated|-DBUG_FLUSH_EARLY|-m200000 -w21|"
  "qd/BUG_CLOSE_STORE|qd.pml|fail:assertion violated|-DBUG_CLOSE_STORE|-m200000 -w21|"
  "qd/live+BUG_FLUSH_EARLY|qd.pml|fail:acceptance cycle|-DLIVE -DBUG_FLUSH_EARLY|-A -m200000 -w21|"
  "qdr/base|qd_resident.pml|pass||-m200000 -w22|1 2 3 4 5 6 7 8 9 10 11 12 13"
  "qdr/help_limit=16|qd_resident.pml|pass|-DHELP_LIMIT=16|-m200000 -w22|1 2 3 4 5 6 7 8 9 10 11 12"
  "qdr/retries=0|qd_resident.pml|pass|-DRETRIES=0|-m200000 -w21|1 2 3 4 5 6 7 8 9 10 11 12 13"
  "qdr/size=4|qd_resident.pml|pass|-DSIZE=4|-m200000 -w22|1 2 3 4 5 6 7 8 9 10 11 12 13"
  "qdr/all-execute|qd_resident.pml|pass|-DALL_EXECUTE|-m200000 -w22|1 2 3 4 5 6 7 8 10 11 12 13"
  "qdr/2-plain|qd_resident.pml|pass|-DNPLAIN=2|-m200000 -w24|1 2 3 4 5 6 7 8 9 10 11 12 13"
  "qdr/BUG_NO_RECHECK|qd_resident.pml|fail:assertion violated .nrun==tick.|-DBUG_NO_RECHECK|-m200000 -w21|"
  "qdr/BUG_NO_RECHECK,-A|qd_resident.pml|fail:invalid end state|-DBUG_NO_RECHECK|-A -m200000 -w21|"
  "qdr/BUG_STEAL_NO_DRAIN|qd_resident.pml|fail:assertion violated|-DBUG_STEAL_NO_DRAIN|-m200000 -w21|"
  "qdr/BUG_LOCK_NO_STEAL|qd_resident.pml|fail:invalid end state|-DBUG_LOCK_NO_STEAL|-m200000 -w21|"
  "qdr/BUG_REENTER_OWN_FIRST|qd_resident.pml|fail:assertion violated .nrun>=tinv.|-DBUG_REENTER_OWN_FIRST|-m200000 -w21|"
  "cc/base|ccsynch.pml|pass||-m200000 -w22|1 2 3 4 5 6 7 9"
  "cc/exact|ccsynch.pml|pass|-DNO_WINDOW -DNO_TIMEOUT|-m200000 -w22|1 2 4 5 6 7 9"
  "cc/3-threads|ccsynch.pml|pass|-DNT=3 -DK=1|-m200000 -w23|1 2 3 4 5 6 7 9"
  "cc/help_limit=1|ccsynch.pml|pass|-DLIMIT=1|-m200000 -w21|1 2 3 5 7 8 9"
  "cc/live|ccsynch.pml|live|-DLIVE|-m200000 -w22|"
  "cc/BUG_NO_TIMEOUT|ccsynch.pml|fail:invalid end state|-DBUG_NO_TIMEOUT|-m200000 -w22|"
  "cc/BUG_NO_COUNT|ccsynch.pml|fail:invalid end state|-DBUG_NO_COUNT|-m200000 -w22|"
  "cc/BUG_NO_LOOK|ccsynch.pml|fail:invalid end state|-DBUG_NO_LOOK|-m200000 -w22|"
  "cc/BUG_DONE_FLAG|ccsynch.pml|fail:assertion violated .!.freed.|-DBUG_DONE_FLAG|-m200000 -w22|"
  "cc/BUG_OWED_UNPAID|ccsynch.pml|fail:invalid end state|-DBUG_OWED_UNPAID|-m200000 -w22|"
  "cc/live+BUG_NO_LOOK|ccsynch.pml|fail:acceptance cycle|-DLIVE -DBUG_NO_LOOK|-A -m200000 -w22|"
  "qdm/base|qd_mutex.pml|pass||-m200000 -w21|1 2 3 4"
  "qdm/exact|qd_mutex.pml|pass|-DNO_WINDOW -DNO_TIMEOUT|-m200000 -w21|1 3 4"
  "qdm/2-threads|qd_mutex.pml|pass|-DNT=2 -DK=3|-m200000 -w20|1 2 3 4"
  "qdm/live|qd_mutex.pml|live|-DLIVE|-m200000 -w21|"
  "qdm/BUG_NO_TIMEOUT|qd_mutex.pml|fail:invalid end state|-DBUG_NO_TIMEOUT|-m200000 -w21|"
  "qdm/BUG_NO_COUNT|qd_mutex.pml|fail:invalid end state|-DBUG_NO_COUNT|-m200000 -w21|"
  "qdm/BUG_NO_WAKE|qd_mutex.pml|fail:invalid end state|-DBUG_NO_WAKE|-m200000 -w21|"
  "qdm/live+BUG_NO_WAKE|qd_mutex.pml|fail:acceptance cycle|-DLIVE -DBUG_NO_WAKE|-A -m200000 -w21|"
  "rcl/base|rcl.pml|pass||-m200000 -w20|1 2 3 4 5"
  "rcl/post=1|rcl.pml|pass|-DPOST1|-m200000 -w20|1 2 3 4 5 6"
  "rcl/live|rcl.pml|live|-DLIVE|-m200000 -w20|"
  "rcl/BUG_NO_RESCAN|rcl.pml|fail:invalid end state|-DBUG_NO_RESCAN|-m200000 -w20|"
  "rcl/BUG_RESCAN_NO_STOP|rcl.pml|fail:invalid end state|-DBUG_RESCAN_NO_STOP|-m200000 -w20|"
  "rcl/BUG_NO_WAKE|rcl.pml|fail:invalid end state|-DBUG_NO_WAKE|-m200000 -w20|"
  "rcl/BUG_STOP_NO_WAKE|rcl.pml|fail:invalid end state|-DBUG_STOP_NO_WAKE|-m200000 -w20|"
  "rcl/BUG_STOP_EARLY,post=1|rcl.pml|fail:assertion violated|-DPOST1 -DBUG_STOP_EARLY|-m200000 -w20|"
  "rcl/BUG_POST_ON_TAKEN|rcl.pml|fail:assertion violated|-DBUG_POST_ON_TAKEN|-m200000 -w20|"
  "rcl/live+BUG_NO_RESCAN|rcl.pml|fail:acceptance cycle|-DLIVE -DBUG_NO_RESCAN|-m200000 -w20|"
  "hier+chain/live,bound=2|hier.pml|live|-DLIVE -DCHAIN -DBOUND=2|-m1000000 -w21|"
  "hier/live|hier.pml|live|-DLIVE|-m1000000 -w21|"
  "chain/live,4-clients|chain.pml|live|-DLIVE -DNC=4|-m1000000 -w21|"
  "chain/live|chain.pml|live|-DLIVE|-m200000 -w20|"
  "chain/basic-live|chain.pml|live|-DLIVE -DBASIC|-m200000 -w20|"
  "keep/live|keep.pml|live|-DLIVE|-m1000000 -w21|"
  "keep/live+BUG_NO_TAKEBACK|keep.pml|fail:acceptance cycle|-DLIVE -DBUG_NO_TAKEBACK|-A -m1000000 -w21|"
  "keep/base|keep.pml|pass||-m100000 -w20|1 2 3 4 5 6 7 8"
  "keep/3-clients|keep.pml|pass|-DNC=3 -DROUNDS=2|-m100000 -w21|1 2 3 4 5 6 7 8"
  "keep/BUG_BLIND_RELOCK|keep.pml|fail:assertion violated .cn==1.|-DBUG_BLIND_RELOCK|-m100000 -w20|"
  "keep/BUG_TAKE_HELD|keep.pml|fail:assertion violated .cn==1.|-DBUG_TAKE_HELD|-m100000 -w20|"
  "keep/BUG_NO_FLAG|keep.pml|fail:assertion violated|-DBUG_NO_FLAG|-m100000 -w20|"
  "chain/base|chain.pml|pass||-m20000 -w20|1 2 3 4 6 7 8 9"
  "chain/4-clients|chain.pml|pass|-DNC=4|-m20000 -w21|1 2 3 4 5 6 7 8 9"
  "chain/basic|chain.pml|pass|-DBASIC|-m20000 -w20|1 2 8 9"
  "chain/BUG_DOUBLE_GRANT|chain.pml|fail:assertion violated .cn==1.|-DBUG_DOUBLE_GRANT|-m20000 -w20|"
  "chain/BUG_LOSE_TAIL|chain.pml|fail:assertion violated .onl.ci.==|-DNC=4 -DROUNDS=1 -DBUG_LOSE_TAIL|-m20000 -w20|"
  "chain/BUG_LOSE_TAIL,-A|chain.pml|fail:invalid end state|-DNC=4 -DROUNDS=1 -DBUG_LOSE_TAIL|-A -m20000 -w20|"
  "chain/live+BUG_LOSE_TAIL|chain.pml|fail:acceptance cycle|-DLIVE -DNC=4 -DBUG_LOSE_TAIL|-A -m200000 -w20|"
  "chain/BUG_KEEP_LIST|chain.pml|fail:assertion violated .onl.ci.==|-DBUG_KEEP_LIST|-m20000 -w20|"
  "chain/BUG_STALE_LINK|chain.pml|fail:assertion violated .onl.ci.==|-DBUG_STALE_LINK|-m20000 -w20|"
  "hier/base|hier.pml|pass||-m20000 -w21|1 2 3 4 5 6 7"
  "hier/bound=2|hier.pml|pass|-DBOUND=2|-m20000 -w21|1 2 3 4 5 6 7"
  "hier+chain|hier.pml|pass|-DCHAIN|-m20000 -w21|1 2 3 4 5 6 7 8"
  "hier+chain/bound=2|hier.pml|pass|-DCHAIN -DBOUND=2|-m20000 -w21|1 2 3 4 5 6 7 8"
  "hier+chain/3-groups|hier.pml|pass|-DNG=3 -DCHAIN -DROUNDS=1|-m20000 -w22|1 2 3 4 5 6 7 8 9"
  "hier/BUG_LOCAL_GRANT_EARLY|hier.pml|fail:assertion violated .cn==1.|-DBUG_LOCAL_GRANT_EARLY|-m20000 -w20|"
  "hier/BUG_NO_REREQUEST|hier.pml|fail:invalid end state|-DBUG_NO_REREQUEST|-m20000 -w20|"
  "hier/live+BUG_NO_BOUND|hier.pml|fail:acceptance cycle|-DLIVE -DBUG_NO_BOUND|-m200000 -w20|"
  "hier+chain/live+BUG_NO_BOUND|hier.pml|fail:acceptance cycle|-DLIVE -DCHAIN -DBUG_NO_BOUND|-m200000 -w20|"
)

# run_check INDEX SPEC: writes $work/INDEX.line (the report line) and
# $work/INDEX.bad (only when the outcome was not the expected one).
run_check() {
    local i=$1 name model expect defs args markers
    IFS='|' read -r name model expect defs args markers <<<"$2"
    local d=$work/$i
    mkdir -p "$d"
    local out=$d/pan.out
    local -a spin_defs=() pan_args=() cflags=(-O2)
    read -r -a spin_defs <<<"$defs"
    read -r -a pan_args <<<"$args"
    local t0=$SECONDS
    bad() {
        printf 'FAIL %-28s %s\n' "$name" "$1" >"$d/../$i.line"
        { echo "--- $name: $1"; tail -n 25 "$out" 2>/dev/null
          echo "(to replay a trail: KEEP=1 models/check.sh, then" \
               "cd <work>/$i && $SPIN $defs -t -p $here/$model)"; } >"$d/../$i.bad"
    }
    if [[ $expect == live || $expect == fail:acceptance* ]]; then
        pan_args=(-a -f "${pan_args[@]}")
        cflags+=(-DNFAIR=3)   # weak fairness over up to 10 processes
    else
        cflags+=(-DSAFETY)
    fi
    if ! (cd "$d" && "$SPIN" -o3 "${spin_defs[@]}" -a "$here/$model" >spin.log 2>&1); then
        out=$d/spin.log; bad "spin -a failed"; return
    fi
    if ! (cd "$d" && "$CC" "${cflags[@]}" -o pan pan.c >cc.log 2>&1); then
        out=$d/cc.log; bad "compiling pan failed"; return
    fi
    (cd "$d" && ./pan "${pan_args[@]}" >pan.out 2>&1)
    local errors states first
    errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$out" | head -n 1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$out" | head -n 1)
    first=$(sed -n 's/^pan:1: \(.*\) (at depth.*/\1/p' "$out" | head -n 1)
    local secs=$((SECONDS - t0))
    if [[ -z $errors || -z $states ]]; then
        bad "no verdict from pan"; return
    fi
    case $expect in
    pass | live)
        if [[ $errors != 0 ]]; then
            bad "unexpected error: $first"; return
        fi
        if grep -q -e 'max search depth too small' -e 'Search not completed' "$out"; then
            bad "search incomplete (raise -m or -w)"; return
        fi
        local m missing="" absent=""
        [[ -n $markers ]] && (cd "$d" && ./pan -d >pan.d 2>&1)
        for m in $markers; do
            # A marker must be a statement of the verifier (not merged into
            # another), and not listed as unreached.
            grep -q "=> cov = $m\$" "$d/pan.d" || absent+=" $m"
            grep -q "\"cov = $m\"" "$out" && missing+=" $m"
        done
        if [[ -n $absent ]]; then
            bad "marker(s) not a statement of the verifier:$absent"; return
        fi
        if [[ -n $missing ]]; then
            bad "path(s) not reached:$missing"; return
        fi
        local what="no error"
        [[ $expect == live ]] && what="property holds"
        [[ -n $markers ]] && what+=", reached ${markers// /,}"
        printf 'ok   %-28s %s (%s states, %ss)\n' "$name" "$what" "$states" "$secs" >"$work/$i.line"
        ;;
    fail:*)
        local want=${expect#fail:}
        if [[ $errors == 0 ]]; then
            bad "spin found no error in a broken variant"; return
        fi
        if ! grep -q -E "$want" <<<"$first"; then
            bad "expected '$want', found '$first'"; return
        fi
        printf 'ok   %-28s error found as expected: %s (%s states, %ss)\n' \
            "$name" "$first" "$states" "$secs" >"$work/$i.line"
        ;;
    esac
}

t_start=$SECONDS
for i in "${!checks[@]}"; do
    while (($(jobs -rp | wc -l) >= JOBS)); do
        wait -n
    done
    run_check "$i" "${checks[$i]}" &
done
wait

status=0
for i in "${!checks[@]}"; do
    if [[ -f $work/$i.line ]]; then
        cat "$work/$i.line"
    else
        echo "FAIL ${checks[$i]%%|*} (no result)"
        status=1
    fi
    if [[ -f $work/$i.bad ]]; then
        status=1
    fi
done
for i in "${!checks[@]}"; do
    [[ -f $work/$i.bad ]] && cat "$work/$i.bad"
done
if ((status == 0)); then
    echo "models: all ${#checks[@]} checks as expected ($((SECONDS - t_start))s)"
else
    echo "models: UNEXPECTED OUTCOMES (see above)"
fi
exit $status
