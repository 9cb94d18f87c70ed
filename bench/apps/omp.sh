#!/usr/bin/env bash
# The EPCC-style OpenMP lock program (bench/apps/omp_locks.c, built with the
# project) under GNU OpenMP: ops/s stock vs the interposer with each spec
# (BATON_LOCK), modes `lock` (omp_set_lock/omp_unset_lock) and `critical`
# (#pragma omp critical), at each OMP_NUM_THREADS.
#
#   omp.sh [--threads 1,2,8] [--modes lock,critical] [--locks SPECS]
#          [--iters 200000] [--work-ns 100] [--repeat R] [--out DIR]
#
# The program is ${BUILD}/bench/apps/omp_locks (or $BATON_OMP_LOCKS).  Rounds
# interleave the configurations (rotating their order).  A run fails when the
# program exits non-zero (its counter check failed), prints no ops_per_s, or
# the interposer was not loaded; a failing configuration is skipped for that
# mode and thread count from then on and the script exits 1.
#
# Files in --out DIR: omp_runs.csv, omp.csv (medians; ratio = ops/s / stock
# ops/s, >1 is better), logs/.
# shellcheck disable=SC2154  # arrays filled by split_list/split_specs (namerefs)
set -euo pipefail
PROG=omp.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

threads_list=1,2,8
modes_list=lock,critical
locks_list="default,mcs:spinpark,ttas,ticket:spinpark,qd"
iters=200000
work_ns=100
repeat=3
out=$REPO_ROOT/results/apps

usage() { print_header; }
while [ $# -gt 0 ]; do
    case $1 in
        --threads) threads_list=$2; shift 2 ;;
        --modes) modes_list=$2; shift 2 ;;
        --locks) locks_list=$2; shift 2 ;;
        --iters) iters=$2; shift 2 ;;
        --work-ns) work_ns=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a positive integer, not '$repeat'"
[[ $iters =~ ^[1-9][0-9]*$ ]] || die "--iters wants a positive integer, not '$iters'"

find_preload
prog=${BATON_OMP_LOCKS:-$BUILD_DIR/bench/apps/omp_locks}
[ -x "$prog" ] || die "omp_locks not found at $prog (build the omp_locks target: it needs a compiler with OpenMP, e.g. gcc; or set BATON_OMP_LOCKS=<path>)"
split_list threads "$threads_list"
split_list modes "$modes_list"
split_specs cands "$locks_list"
[ ${#cands[@]} -gt 0 ] || die "--locks is empty"
for m in "${modes[@]}"; do
    case $m in lock|critical) ;; *) die "mode '$m': want lock or critical" ;; esac
done

mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
trap 'exit 130' INT TERM

runs_csv=$out/omp_runs.csv
csv_row round mode threads config spec ops_per_s seconds status detail >"$runs_csv"
declare -A results failed
nfail=0

# one_run ROUND MODE THREADS CONFIG
one_run() {
    local round=$1 mode=$2 n=$3 c=$4 rc=0 status=ok detail="" ops="" secs=""
    local tag="omp_r${round}_${mode}_t${n}_${c//[^A-Za-z0-9_.-]/_}"
    local so=$out/logs/$tag.out se=$out/logs/$tag.err
    conf_env mutex "$c"
    OMP_NUM_THREADS=$n timeout 300 env "${CONF_ENV[@]}" "$prog" "$mode" "$iters" "$work_ns" >"$so" 2>"$se" || rc=$?
    ops=$(sed -n 's/.* ops_per_s=\([^ ]*\).*/\1/p' "$so" | tail -n 1)
    secs=$(sed -n 's/.* seconds=\([^ ]*\).*/\1/p' "$so" | tail -n 1)
    if [ $rc -ne 0 ]; then
        status=fail
        detail="omp_locks $(exit_words $rc): $(grep -v '^baton-preload\[' "$se" | head -n 2 | tr '\n' ' ')"
        [ $rc -eq 124 ] && detail="omp_locks did not finish within 300 s"
    elif [ -z "$ops" ]; then
        status=fail; detail="omp_locks printed no ops_per_s"
    elif ! grep -q " threads=$n " "$so"; then
        status=fail; detail="omp_locks ran another thread count than OMP_NUM_THREADS=$n: $(cat "$so")"
    elif ! detail=$(check_loaded "$c" "$se"); then
        status=fail
    fi
    [ $status = ok ] && detail=""
    csv_row "$round" "$mode" "$n" "$c" "$c" "$ops" "$secs" "$status" "$detail" >>"$runs_csv"
    if [ $status = ok ]; then
        results["$mode|$n|$c"]+="$ops "
        printf '  r%d  %-8s %2s threads  %-18s %10.4g ops/s\n' "$round" "$mode" "$n" "$c" "$ops" >&2
    else
        failed["$mode $n $c"]=$detail
        nfail=$((nfail + 1))
        note "FAIL: $mode $n threads $c: $detail (logs: $so, $se)"
    fi
}

configs=(stock "${cands[@]}")
note "omp_locks {${modes[*]}} $iters iterations, ${work_ns} ns inside, OMP_NUM_THREADS {${threads[*]}}: ${configs[*]}; $repeat rounds; $(load_note)"
note "program: $prog; interposer: $PRELOAD"
for ((r = 1; r <= repeat; r++)); do
    for mode in "${modes[@]}"; do
        for n in "${threads[@]}"; do
            for i in $(rotate ${#configs[@]} $((r - 1))); do
                c=${configs[i]}
                [ -n "${failed["$mode $n $c"]:-}" ] && continue
                one_run "$r" "$mode" "$n" "$c"
            done
        done
    done
done

sum_csv=$out/omp.csv
csv_row mode threads config median_ops_per_s min max spread_pct runs ratio_vs_stock >"$sum_csv"
echo
echo "omp_locks ($iters iterations per thread, ${work_ns} ns inside the lock; median of $repeat; ratio = ops/s / stock GNU OpenMP ops/s, >1 is better)"
printf '%-9s %-7s %-20s %12s %7s %7s\n' mode threads config "ops/s" spread "x stock"
for mode in "${modes[@]}"; do
    for n in "${threads[@]}"; do
        # shellcheck disable=SC2086
        base=$(median ${results["$mode|$n|stock"]:-})
        for c in "${configs[@]}"; do
            read -r -a vals <<<"${results["$mode|$n|$c"]:-}"
            if [ ${#vals[@]} -eq 0 ]; then
                printf '%-9s %-7s %-20s %12s %7s %7s\n' "$mode" "$n" "$c" FAIL - -
                csv_row "$mode" "$n" "$c" "" "" "" "" 0 "" >>"$sum_csv"
                continue
            fi
            med=$(median "${vals[@]}")
            mn=$(printf '%s\n' "${vals[@]}" | sort -g | head -n 1)
            mx=$(printf '%s\n' "${vals[@]}" | sort -g | tail -n 1)
            sp=$(spread "${vals[@]}")
            rt=$(ratio "$med" "$base")
            printf '%-9s %-7s %-20s %12.4g %6s%% %7s\n' "$mode" "$n" "$c" "$med" "$sp" "$rt"
            csv_row "$mode" "$n" "$c" "$med" "$mn" "$mx" "$sp" "${#vals[@]}" "$rt" >>"$sum_csv"
        done
    done
done
echo "files: $sum_csv, $runs_csv, $out/logs/"

if [ $nfail -gt 0 ]; then
    for c in "${!failed[@]}"; do note "failed: $c: ${failed[$c]}"; done
    die "$nfail run(s) failed"
fi
