#!/usr/bin/env bash
# Kyoto Cabinet's cache database under `kccachetest wicked -th N RNUM`:
# wall seconds stock (glibc's pthread rwlocks and mutexes) vs the interposer
# with each reader-writer spec (BATON_RWLOCK; the mutex class keeps its
# default unless --mutex is given).
#
#   kccache.sh [--threads 1,2,4,8,16] [--rwlocks SPECS] [--mutex SPEC]
#              [--rnum 100000] [--repeat R] [--seed S] [--out DIR]
#
# The workload is random: round r runs every configuration with the same
# seed, KCRNDSEED=S+r-1 (S: --seed, default 1), so that configurations are
# compared on the same operations.
# "default" in --rwlocks means the interposer with every class at its
# default.  Rounds interleave the configurations (rotating their order).  A
# run fails when kccachetest exits non-zero, prints "error" or "FAILED" or does not end
# with "ok", or the interposer was not loaded; a failing configuration is
# skipped at that thread count from then on and the script exits 1.
#
# Files in --out DIR: kccache_runs.csv (every run: wall, user, sys seconds),
# kccache.csv (medians; ratio = stock seconds / baton seconds, >1 is
# better), logs/.
# shellcheck disable=SC2154  # arrays filled by split_list/split_specs (namerefs)
set -euo pipefail
PROG=kccache.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

threads_list=1,2,4,8,16
rwlocks_list="default,mrqd,rw(relay),rw(runner),rw(mcs:spinpark)"
mutex_spec=""
rnum=100000
repeat=3
seed=1
out=$REPO_ROOT/results/apps

usage() { print_header; }
while [ $# -gt 0 ]; do
    case $1 in
        --threads) threads_list=$2; shift 2 ;;
        --rwlocks|--locks) rwlocks_list=$2; shift 2 ;;
        --mutex) mutex_spec=$2; shift 2 ;;
        --rnum) rnum=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a positive integer, not '$repeat'"
[[ $rnum =~ ^[1-9][0-9]*$ ]] || die "--rnum wants a positive integer, not '$rnum'"
[[ $seed =~ ^[0-9]+$ ]] || die "--seed wants a non-negative integer, not '$seed'"

"$APPS_DIR/deps.sh" kccache
find_preload
split_list threads "$threads_list"
split_specs cands "$rwlocks_list"
[ ${#cands[@]} -gt 0 ] || die "--rwlocks is empty"

mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
trap 'exit 130' INT TERM

runs_csv=$out/kccache_runs.csv
csv_row round seed threads config rwlock_spec mutex_spec wall_s user_s sys_s status detail >"$runs_csv"
declare -A wall usr sys failed
nfail=0

# one_run ROUND N CONFIG
one_run() {
    local round=$1 n=$2 c=$3 rc=0 status=ok detail="" w u s bad
    local tag="r${round}_th${n}_${c//[^A-Za-z0-9_.-]/_}"
    local log=$out/logs/kccache_$tag.log tf=$out/logs/kccache_$tag.time
    local envw=()
    conf_env rwlock "$c"
    envw=("KCRNDSEED=$((seed + round - 1))" "${CONF_ENV[@]}")
    if [ "$c" != stock ] && [ -n "$mutex_spec" ]; then envw+=("BATON_LOCK=$mutex_spec"); fi
    # bash's time keyword: real, user and system seconds of the child.
    { TIMEFORMAT='%R %U %S'; time timeout 300 env "${envw[@]}" kccachetest wicked -th "$n" "$rnum" >"$log" 2>&1 || rc=$?; } 2>"$tf"
    read -r w u s <"$tf" || true
    if [ $rc -ne 0 ]; then
        status=fail; detail="kccachetest $(exit_words $rc)"
        [ $rc -eq 124 ] && detail="kccachetest did not finish within 300 s"
    elif bad=$(grep -v '^baton-preload\[' "$log" | grep -i -E -m 1 'error|failed'); then
        status=fail; detail="kccachetest printed: $bad"
    elif [ "$(grep -v '^baton-preload\[' "$log" | awk 'NF { l = $0 } END { print l }')" != ok ]; then
        status=fail; detail="kccachetest's output does not end with 'ok'"
    elif ! detail=$(check_loaded "$c" "$log"); then
        status=fail
    fi
    [ $status = ok ] && detail=""
    csv_row "$round" "$((seed + round - 1))" "$n" "$c" "$([ "$c" = stock ] && echo stock || echo "$c")" \
        "$([ "$c" = stock ] && echo stock || echo "${mutex_spec:-default}")" "$w" "$u" "$s" "$status" "$detail" >>"$runs_csv"
    if [ $status = ok ]; then
        wall["$n|$c"]+="$w "; usr["$n|$c"]+="$u "; sys["$n|$c"]+="$s "
        printf '  r%d  -th %-2s  %-20s %7s s (user %s, sys %s)\n' "$round" "$n" "$c" "$w" "$u" "$s" >&2
    else
        failed["-th $n $c"]=$detail
        nfail=$((nfail + 1))
        note "FAIL: -th $n $c: $detail (log: $log)"
    fi
}

configs=(stock "${cands[@]}")
note "kccachetest wicked -th {${threads[*]}} $rnum: configurations ${configs[*]} (mutex: ${mutex_spec:-default}); $repeat rounds, KCRNDSEED $seed..$((seed + repeat - 1)); $(load_note)"
note "interposer: $PRELOAD"
for ((r = 1; r <= repeat; r++)); do
    for n in "${threads[@]}"; do
        for i in $(rotate ${#configs[@]} $((r - 1))); do
            c=${configs[i]}
            [ -n "${failed["-th $n $c"]:-}" ] && continue
            one_run "$r" "$n" "$c"
        done
    done
done

sum_csv=$out/kccache.csv
csv_row threads config median_wall_s min max spread_pct median_user_s median_sys_s runs ratio_stock_over_baton >"$sum_csv"
echo
echo "kccachetest wicked -th N $rnum (wall seconds, median of $repeat; ratio = stock time / baton time, >1 is better; mutex: ${mutex_spec:-default})"
printf '%-4s %-20s %8s %7s %8s %8s %7s\n' N config "wall s" spread "user s" "sys s" "x stock"
for n in "${threads[@]}"; do
    # shellcheck disable=SC2086
    base=$(median ${wall["$n|stock"]:-})
    for c in "${configs[@]}"; do
        read -r -a vals <<<"${wall["$n|$c"]:-}"
        if [ ${#vals[@]} -eq 0 ]; then
            printf '%-4s %-20s %8s %7s %8s %8s %7s\n' "$n" "$c" FAIL - - - -
            csv_row "$n" "$c" "" "" "" "" "" "" 0 "" >>"$sum_csv"
            continue
        fi
        med=$(median "${vals[@]}")
        # shellcheck disable=SC2086
        mu=$(median ${usr["$n|$c"]})
        # shellcheck disable=SC2086
        ms=$(median ${sys["$n|$c"]})
        mn=$(printf '%s\n' "${vals[@]}" | sort -g | head -n 1)
        mx=$(printf '%s\n' "${vals[@]}" | sort -g | tail -n 1)
        sp=$(spread "${vals[@]}")
        rt=$(ratio "$base" "$med")
        printf '%-4s %-20s %8.3f %6s%% %8.3f %8.3f %7s\n' "$n" "$c" "$med" "$sp" "$mu" "$ms" "$rt"
        csv_row "$n" "$c" "$med" "$mn" "$mx" "$sp" "$mu" "$ms" "${#vals[@]}" "$rt" >>"$sum_csv"
    done
done
echo "files: $sum_csv, $runs_csv, $out/logs/"

if [ $nfail -gt 0 ]; then
    for c in "${!failed[@]}"; do note "failed: $c: ${failed[$c]}"; done
    die "$nfail run(s) failed"
fi
